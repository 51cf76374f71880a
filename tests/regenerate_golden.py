"""Golden regression metrics of the bundled scenarios.

``python -m tests.regenerate_golden [NAME ...]`` reruns the cases below and rewrites
``tests/data/golden/<name>.json``; ``tests/test_golden.py`` checks fresh runs against those
files through the table :data:`CHECKS` (and the tolerances ``TOL`` of ``tests/conftest.py``).
Regenerate only after a deliberate model change, and say why in the commit message. Each file
records the installed versions that produced it (``versions``: facility, numpy, scipy, pandas,
pandapower, highspy, ...; the test does not compare them).

What a golden pins and what it only checks. A sizing LP has one optimal *cost* but, in
general, many optimal *dispatches*: which of them a solver returns depends on its build, its
options and the CPU. So a golden pins what is unique, to the solver's tolerance: the
objective, the ratings, the compliance and verification verdicts, and the energy balance (the
PCC's energy less the network's losses, the storage's throughput: its conversion losses are
priced in the objective); and it checks what is not
unique (the shape of the PCC power: its ramps and swings below their limits, its spectrum)
against the spec's limit, not against a number. :data:`CHECKS` says which, and why, per key.
Measured: ``sizing_start_ramp`` solved four ways (the interior strategy through PIQP, the full
LP by HiGHS' dual simplex with a random seed and steepest-edge pricing, its primal simplex,
its interior point with crossover) gave the same objective within 4.5e-7 of it and the same
ratings within 5e-7 MW, while ``pcc.max_ramp_mw_per_min`` spread 9.98178-9.98217 MW/min,
``pcc.max_window_swing_mw`` 3.7e-4 MW, ``pcc.band_energy_frac`` 1.3e-4 (and a machine
elsewhere returned 9.98308 MW/min: the pinned 1e-3 MW failed there).

The runs (no sizing) are deterministic: a filter controller has no optimum to pick, and the
MPC's dispatch LPs carry a tie-break (:data:`facility.optimize.model.formulation.TIE_BREAK_FRAC`)
that makes their optimum unique (combined_multi_job: pcc.band_energy_frac 0.507172 under four
HiGHS option sets, which spread 0.487-0.535 without it); their PCC metrics stay pinned.
``tests/test_golden.py::test_golden_under_other_highs_options`` reruns the cases HiGHS solves
under two other option sets against the same goldens.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "data" / "golden"
SCENARIOS = HERE.parent / "scenarios"

#: name -> (scenario file, overrides, mode). Horizons are shortened to keep the suite fast.
CASES = {
    "default": ("default.toml", ["time.horizon_s=30"], "run"),
    "square_wave_rack_storage": ("square_wave_rack_storage.toml", ["time.horizon_s=30"], "run"),
    "gpu_smoothing_floor": ("gpu_smoothing_floor.toml", ["time.horizon_s=30"], "run"),
    # the MPC's deadline raised: a re-plan dropped as late (wall time) would make the result
    # depend on the machine's speed and load
    "combined_multi_job": ("combined_multi_job.toml", ["time.horizon_s=20", "jobs.finetune.start_s=5",
                                                       "controller.mpc_deadline_s=600"], "run"),
    # 3,600 steps: the interior strategy (PIQP)
    "sizing_start_ramp": ("sizing_start_ramp.toml", [], "size"),
    # 1,800 steps, below the interior strategy's 2,000: the full LP, by HiGHS' dual simplex (a
    # vertex; other HiGHS options return other optimal dispatches of it)
    "sizing_start_ramp_full_lp": ("sizing_start_ramp.toml", ["time.horizon_s=900", "jobs.pretrain.stop_s=600"],
                                  "size"),
}

#: The cases whose numbers come from HiGHS (the LP of a sizing, the MPC's re-plans).
HIGHS_CASES = ("sizing_start_ramp_full_lp", "combined_multi_job")

#: How each metric is checked, and why: ``"exact"`` (a verdict), a kind of ``TOL`` (pinned to
#: it: the value is unique), ``"balance"`` (energy.pcc_mwh - electrical.losses_mwh pinned to
#: ``mwh``), ``"limit:<spec key>"`` (not unique: at most the spec's limit, not
#: the golden's number), ``"swing_limit"`` (not unique: a rise within ramp_window_s lies in a
#: window of window_s >= ramp_window_s, so it is at most max_window_swing_mw / ramp_window_s),
#: ``"free"`` (not unique and no limit of its own: recorded, not compared). ``RUN`` applies to
#: every case; ``SIZED`` replaces it for a sizing, whose dispatch is one of many optima.
RUN = {
    "raw.p_mean_mw": ("mw", "the load: no solver"), "raw.max_window_swing_mw": ("mw", "the load: no solver"),
    "raw.max_ramp_up_mw_per_s": ("mw", "the load: no solver"),
    "pcc.p_mean_mw": ("mw", "energy balance"), "pcc.p_max_mw": ("mw", "deterministic controller"),
    "pcc.p_min_mw": ("mw", "deterministic controller"),
    "pcc.max_window_swing_mw": ("mw", "deterministic controller"),
    "pcc.max_ramp_up_mw_per_s": ("mw", "deterministic controller"),
    "pcc.max_ramp_down_mw_per_s": ("mw", "deterministic controller"),
    "pcc.max_ramp_mw_per_min": ("mw", "deterministic controller"),
    "pcc.band_energy_frac": ("frac", "deterministic controller (the MPC's LPs tie-broken)"),
    "pcc.band_peak_mw": ("mw", "deterministic controller"), "pcc.dominant_freq_hz": ("hz", "deterministic controller"),
    "energy.raw_mwh": ("mwh", "the load: no solver"), "energy.pcc_mwh": ("mwh", "energy balance"),
    "energy.energy_overhead_frac": ("frac", "energy balance"),
    "electrical.min_vm_pu": ("pu", "power flow of a deterministic PCC"),
    "electrical.max_vm_pu": ("pu", "power flow of a deterministic PCC"),
    "electrical.losses_mwh": ("mwh", "energy balance"),
    "electrical.max_trafo_loading_percent": ("percent", "power flow of a deterministic PCC"),
    "electrical.max_lv_trafo_loading_percent": ("percent", "power flow of a deterministic PCC"),
    "electrical.max_ups_loading_percent": ("percent", "power flow of a deterministic PCC"),
    "electrical_compliance.compliant": ("exact", "verdict"),
    "training.slowdown_frac": ("frac", "deterministic controller"), "compliance.compliant": ("exact", "verdict"),
}
_ONE_OF_MANY = "one of several optimal dispatches"
_NETWORK_LOSS = ("the network's I²R losses of one of several optimal dispatches (the LP prices them "
                 "linearly): 3.6e-4 MWh between HiGHS option sets on sizing_start_ramp_full_lp")
SIZED = {
    # the energy balance: the PCC's energy less the network's losses is the load's plus the
    # storage's conversion losses and stored energy, which the objective prices (5e-6 MWh
    # spread measured); each of the two alone moves with the dispatch's network losses
    "energy.pcc_mwh": ("balance", "energy balance: pinned as energy.pcc_mwh - electrical.losses_mwh"),
    "electrical.losses_mwh": ("free", _NETWORK_LOSS + "; in the balance of energy.pcc_mwh"),
    "pcc.p_mean_mw": ("free", "energy.pcc_mwh / horizon: " + _NETWORK_LOSS),
    "energy.energy_overhead_frac": ("free", "energy.pcc_mwh / energy.raw_mwh - 1: " + _NETWORK_LOSS),
    "pcc.max_window_swing_mw": ("limit:max_window_swing_mw", _ONE_OF_MANY),
    "pcc.max_ramp_mw_per_min": ("limit:max_ramp_mw_per_min", _ONE_OF_MANY),
    "pcc.max_ramp_up_mw_per_s": ("swing_limit", _ONE_OF_MANY),
    "pcc.max_ramp_down_mw_per_s": ("swing_limit", _ONE_OF_MANY),
    "pcc.p_max_mw": ("free", _ONE_OF_MANY + "; no spec limit"),
    "pcc.p_min_mw": ("free", _ONE_OF_MANY + "; no spec limit"),
    "pcc.band_energy_frac": ("free", _ONE_OF_MANY + "; no spec limit (spread 1.3e-4 measured)"),
    "pcc.band_peak_mw": ("free", _ONE_OF_MANY + "; no spec limit"),
    "pcc.dominant_freq_hz": ("free", _ONE_OF_MANY + "; no spec limit"),
    "electrical.min_vm_pu": ("free", _ONE_OF_MANY + "; its limit is a row of electrical_compliance (exact)"),
    "electrical.max_vm_pu": ("free", _ONE_OF_MANY + "; its limit is a row of electrical_compliance (exact)"),
    "electrical.max_trafo_loading_percent": ("free", _ONE_OF_MANY + "; electrical_compliance (exact)"),
    "electrical.max_lv_trafo_loading_percent": ("free", _ONE_OF_MANY + "; electrical_compliance (exact)"),
    "electrical.max_ups_loading_percent": ("free", _ONE_OF_MANY + "; electrical_compliance (exact)"),
}
#: Per storage: ``storage.<name>.<key>``.
STORAGE = {"p_rated_mw": ("mw", "a rating: unique (the LP's cost of power)"),
           "e_rated_mwh": ("mwh", "a rating: unique (the LP's cost of energy)"),
           "throughput_mwh": ("mwh", "energy balance: its losses are priced in the objective")}
#: The sizing block: the ratings to ``usd_rel``; the objective to the solver's tolerance, which
#: is relative: the gaps the two solves proved (gap_frac) plus ``objective_rel`` of TOL (the
#: sequential loss LP's rounds; 2.3e-6 between HiGHS option sets measured on
#: sizing_start_ramp_full_lp); the verification's verdict exact.

#: Every metric path a golden records (the test checks them through :func:`check_of`).
COMPARED = dict(RUN)


def check_of(path: str, mode: str) -> tuple[str, str]:
    """``(how, why)`` of one metric path in a case of ``mode`` (``run`` or ``size``)."""
    if path.startswith("storage."):
        return STORAGE[path.rsplit(".", 1)[1]]
    if mode == "size" and path in SIZED:
        return SIZED[path]
    return RUN[path]


def run_case(name: str) -> dict:
    from facility.scenario import load_scenario
    from facility.run.orchestrator import run_scenario
    from facility.sizing.pipeline import size_scenario

    file, overrides, mode = CASES[name]
    s = load_scenario(SCENARIOS / file, overrides)
    if mode == "size":
        _, res = size_scenario(s, plots=False)
        out = {"metrics": res.metrics, "sizing": res.sizing}
    else:
        out = {"metrics": run_scenario(s, plots=False).metrics}
    out["scenario"] = s
    return out


def installed_versions() -> dict:
    """Versions of facility and the libraries its numbers depend on, and the Python and CPU."""
    import platform
    from importlib import metadata

    out = {}
    for name in ("facility", "numpy", "scipy", "pandas", "pandapower", "pyomo", "highspy", "numba"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["python"] = platform.python_version()
    out["machine"] = platform.machine()
    return out


def pick(tree: dict, path: str):
    node = tree
    for part in path.split("."):
        node = node[part]
    return node


def main(argv: list[str]) -> int:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in argv or list(CASES):
        data = run_case(name)
        keep = {"metrics": {p: pick(data["metrics"], p) for p in COMPARED}}
        for st, block in data["metrics"].get("storage", {}).items():
            for k in ("p_rated_mw", "e_rated_mwh", "throughput_mwh"):
                keep["metrics"][f"storage.{st}.{k}"] = block[k]
        if data.get("sizing"):
            keep["sizing"] = data["sizing"]
        keep["versions"] = installed_versions()
        (GOLDEN_DIR / f"{name}.json").write_text(json.dumps(keep, indent=2, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN_DIR / f'{name}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
