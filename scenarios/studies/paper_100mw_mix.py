"""The mix study (docs/studies.md §6): the optimal mix of rack storage, GPU floor, burned power
and power cap for the paper's 100 MW job under each library spec, against the design grid of §5
run on the same model, the paper's Table I qualitatively, and the Pareto front of annual cost vs
energy overhead from sweeping the energy price.

Usage::

    python scenarios/studies/paper_100mw_mix.py [OUT_DIR] [FIG_DIR] [--quick]

OUT_DIR (default out/study_paper_100mw_mix) gets results.json; FIG_DIR (default docs/studies)
the two PNGs; the markdown tables go to stdout. --quick: three energy prices instead of seven;
--replot: figures and tables from OUT_DIR/results.json without solving again; --resume: keep
the specs already in OUT_DIR/results.json and solve the others.

Every design, grid point or optimum, is priced the same way from its *simulated* run
(network losses included): annual cost = CRF · storage capex + energy price · (PCC − raw) energy
· 8760 h / horizon + slowdown_usd_per_gpu_h · GPUs · slowdown_frac · 8760 h. The optimum's own
LP breakdown (sizing.json ``cost``) is reported beside it.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path

import numpy as np

from facility.scenario import load_scenario
from facility.config.library import load_spec_table
from facility.config.schema import SpecConfig
from facility.run.orchestrator import run_scenario
from facility.sizing.pipeline import size_scenario

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "paper_100mw_mix.toml"
CASES = HERE / "paper_100mw_cases.csv"
SPECS = ["caiso_2026_straw", "ercot_2026_proposal", "ieso_2026", "lipa", "paper_example"]
PRICES = [2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 120.0]
PARETO_SPECS = ["ercot_2026_proposal", "ieso_2026"]
LEVER_SETS = {"storage only": ["storage"], "GPU levers only": ["floor", "burn", "cap"],
              "combined": ["storage", "floor", "burn", "cap"]}


def spec_at(name: str, dt_s: float) -> tuple[SpecConfig, bool]:
    """A library spec with every band edge above the Nyquist frequency clipped to it."""
    ny = 0.5 / dt_s
    tab = load_spec_table(name)
    clipped = tab.get("band_max_hz", 0) > ny or any(b["max_hz"] > ny for b in tab.get("bands", []))
    if "band_max_hz" in tab:
        tab["band_max_hz"] = min(tab["band_max_hz"], ny)
    for b in tab.get("bands", []):
        b["max_hz"] = min(b["max_hz"], ny)
    return SpecConfig(base=name, **tab), clipped


def scenario(spec: SpecConfig, overrides: list[str]):
    s = load_scenario(SCENARIO, overrides)
    return s.model_copy(update={"spec": spec})


def annual_cost(res) -> dict:
    """Annual cost of a simulated design (same definition for grid points and optima)."""
    s, m = res.scenario, res.metrics
    o = s.optimize
    r, n = o.discount_rate_frac, o.lifetime_years
    crf = r * (1 + r) ** n / ((1 + r) ** n - 1)
    capex = sum(1000.0 * (m["storage"][k]["p_rated_mw"] * c.cost_usd_per_kw
                          + m["storage"][k]["e_rated_mwh"] * c.cost_usd_per_kwh)
                for k, c in s.storages().items() if k in m["storage"])
    per_year = 8760.0 * 3600.0 / s.time.horizon_s
    energy = o.energy_price_usd_per_mwh * (m["energy"]["pcc_mwh"] - m["energy"]["raw_mwh"]) * per_year
    slow = o.slowdown_usd_per_gpu_h * sum(j.n_gpus for j in s.jobs) * m["training"]["slowdown_frac"] * 8760.0
    return {"capex_usd_per_year": crf * capex, "energy_usd_per_year": energy, "slowdown_usd_per_year": slow,
            "total_usd_per_year": crf * capex + energy + slow,
            "energy_overhead_frac": m["energy"]["energy_overhead_frac"],
            "compliant": bool(m["compliance"]["compliant"]),
            "failing": [k for k, v in m["compliance"].items() if k != "compliant" and not v]}


def grid(spec: SpecConfig) -> list[dict]:
    """The 24 designs of paper_100mw_cases.csv, simulated on the mix model."""
    out = []
    with CASES.open() as fh:
        for row in csv.DictReader(fh):
            cid = row.pop("case_id")
            ov = [f"{k}={v}" for k, v in row.items() if v != ""]
            ov += ["rack_storage.extendable=false", 'optimize.levers=["storage"]']
            if row["rack_storage.enabled"] == "false":
                ov += ["rack_storage.p_rated_mw=0", "rack_storage.e_rated_mwh=0"]
            res = run_scenario(scenario(spec, ov), plots=False)
            out.append({"case_id": cid, **annual_cost(res)})
    return out


def optimum(spec: SpecConfig, levers: list[str], price: float | None = None) -> dict:
    ov = [f"optimize.levers={json.dumps(levers)}"]
    if "storage" not in levers:
        ov += ["rack_storage.enabled=false", "controller.kind=none"]
    if price is not None:
        ov.append(f"optimize.energy_price_usd_per_mwh={price:g}")
    t0 = time.perf_counter()
    sol, res = size_scenario(scenario(spec, ov), plots=False)
    sz = res.sizing
    job = sz["mix"]["jobs"].get("pretrain", {})
    st = sz["mix"]["storages"].get("rack_storage", {"p_rated_mw": 0.0, "e_rated_mwh": 0.0})
    return {"levers": levers, "price": price, "wall_s": time.perf_counter() - t0,
            "method": sol.info.method, "step_factor": sol.info.step_factor, "gap_frac": sol.info.gap_frac,
            "lp_cost": sz["cost"], "p_rated_mw": st["p_rated_mw"], "e_rated_mwh": st["e_rated_mwh"],
            "floor_frac": job.get("floor_frac"), "cap_frac": job.get("cap_frac"),
            "burned_mwh_per_year": job.get("burned_mwh_per_year", 0.0),
            "slowdown_frac": job.get("slowdown_frac", 0.0), **annual_cost(res)}


def md(rows: list[list], head: list[str]) -> str:
    f = lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)  # noqa: E731
    return ("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n"
            + "".join("| " + " | ".join(f(v) for v in r) + " |\n" for r in rows))


def figures(results: dict, figs: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    specs = [s for s in SPECS if results[s]["combined"]["compliant"]]
    parts = [("storage_capex_usd_per_year", "storage capex (annuity)", "#4c72b0"),
             ("loss_energy_usd_per_year", "storage losses", "#8da0cb"),
             ("burn_energy_usd_per_year", "burned energy (floor, dummy load)", "#dd8452"),
             ("degradation_usd_per_year", "degradation", "#937860"),
             ("slowdown_usd_per_year", "slowdown", "#c44e52")]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    x = np.arange(len(specs))
    bottom = np.zeros(len(specs))
    for key, label, color in parts:
        v = np.array([results[s]["combined"]["lp_cost"][key] for s in specs]) / 1e6
        ax.bar(x, v, bottom=bottom, color=color, label=label, width=0.6)
        bottom += v
    for i, s in enumerate(specs):
        g = results[s]["best_grid"]
        if g is not None:
            ax.plot([i - 0.35, i + 0.35], [g["total_usd_per_year"] / 1e6] * 2, "k--", lw=1)
    ax.set_xticks(x, [s.replace("_", " ") for s in specs], fontsize=8)
    ax.set_ylabel("M USD per year")
    ax.set_title("Optimal mix per spec: annual cost by component (dashed: best grid point)")
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(figs / "paper_100mw_mix_cost_breakdown.png", dpi=130)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for s, mk in zip(PARETO_SPECS, "os"):
        pts = sorted(results[s]["pareto"], key=lambda r: r["price"])
        ax.plot([100 * p["energy_overhead_frac"] for p in pts], [p["total_usd_per_year"] / 1e6 for p in pts],
                mk + "-", label=s.replace("_", " "))
        for p in pts:
            ax.annotate(f"{p['price']:g}", (100 * p["energy_overhead_frac"], p["total_usd_per_year"] / 1e6),
                        textcoords="offset points", xytext=(4, 3), fontsize=7)
    ax.set_xlabel("energy overhead [%] (simulated)")
    ax.set_ylabel("annual cost [M USD / yr] (simulated)")
    ax.set_title("Optimal mix as the energy price sweeps (labels: USD/MWh)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(figs / "paper_100mw_mix_pareto.png", dpi=130)
    plt.close(fig)


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    args = [a for a in argv if not a.startswith("--")]
    out = Path(args[0]) if args else Path("out/study_paper_100mw_mix")
    figs = Path(args[1]) if len(args) > 1 else Path("docs/studies")
    out.mkdir(parents=True, exist_ok=True)
    figs.mkdir(parents=True, exist_ok=True)
    dt = load_scenario(SCENARIO).time.dt_s
    prices = [5.0, 20.0, 60.0] if quick else PRICES
    keep = ("--replot" in argv or "--resume" in argv) and (out / "results.json").exists()
    results = json.loads((out / "results.json").read_text()) if keep else {}
    for name in ([] if "--replot" in argv else [s for s in SPECS if s not in results]):
        spec, clipped = spec_at(name, dt)
        t0 = time.perf_counter()
        g = grid(spec)
        ok = [r for r in g if r["compliant"]]
        best = min(ok, key=lambda r: r["total_usd_per_year"]) if ok else None
        results[name] = {"band_clipped": clipped, "grid": g, "best_grid": best}
        for label, lev in LEVER_SETS.items():
            results[name][label] = optimum(spec, lev)
        if name in PARETO_SPECS:
            results[name]["pareto"] = [optimum(spec, LEVER_SETS["combined"], p) for p in prices]
        print(f"{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    figures(results, figs)
    tables(results)
    return 0


def tables(results: dict) -> None:

    rows = []
    for name in SPECS:
        r = results[name]
        c, b = r["combined"], r["best_grid"]
        rows.append([name + (" *" if r["band_clipped"] else ""),
                     f"{c['p_rated_mw']:.1f} MW / {1000 * c['e_rated_mwh']:.1f} kWh",
                     "-" if c["floor_frac"] is None else f"{c['floor_frac']:.2f}",
                     "-" if c["cap_frac"] is None else f"{c['cap_frac']:.2f}",
                     f"{c['burned_mwh_per_year']:,.0f}", c["lp_cost"]["total_usd_per_year"] / 1e6,
                     c["total_usd_per_year"] / 1e6, "yes" if c["compliant"] else "no: " + ", ".join(c["failing"]),
                     "-" if b is None else f"{b['case_id']}: {b['total_usd_per_year'] / 1e6:.4g}",
                     f"{c['method']} (g={c['step_factor']}), {c['wall_s']:.0f} s"])
    print("## optimal mix per spec (combined levers)\n")
    print(md(rows, ["spec", "storage", "floor", "cap", "burned MWh/yr", "LP cost M USD/yr",
                    "simulated M USD/yr", "compliant", "best grid point M USD/yr", "solve"]))
    rows = [[name] + [f"{results[name][k]['total_usd_per_year'] / 1e6:.4g}"
                      + ("" if results[name][k]["compliant"] else " (fails)")
                      + f", {100 * results[name][k]['energy_overhead_frac']:.2g} %"
                      for k in LEVER_SETS] for name in SPECS]
    print("## Table I, qualitatively: annual cost [M USD/yr], energy overhead\n")
    print(md(rows, ["spec"] + list(LEVER_SETS)))
    for name in PARETO_SPECS:
        print(f"## Pareto ({name})\n")
        # solver noise (1e-12 MWh/yr, -0.0 MW) printed as the zero it is
        print(md([[p["price"], f"{abs(p['p_rated_mw']):.1f}", p["floor_frac"],
                   p["burned_mwh_per_year"] if p["burned_mwh_per_year"] > 1e-6 else 0,
                   100 * p["energy_overhead_frac"], p["total_usd_per_year"] / 1e6]
                  for p in results[name]["pareto"]],
                 ["USD/MWh", "storage MW", "floor", "burned MWh/yr", "overhead %", "M USD/yr"]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
