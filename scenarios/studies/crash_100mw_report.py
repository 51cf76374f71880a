"""Table of the crash study (docs/failures.md) from the outputs of crash_100mw.sh.

Per case: the crash step at the PCC, the fastest fall its spec allows, the hand figures of the
storage energy with foresight (dP^2 / 8 rho, the sizing LP's bound) and without (dP^2 / 2 rho,
also the burn of a GPU ramp-down at that rate), the sized BESS (its usable energy within the
SoC window, the limit margin the size-and-verify loop needed for the network losses the LP
does not see) and its verification.
Usage: python scenarios/studies/crash_100mw_report.py OUT_DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from facility.scenario import load_scenario


def fastest_fall_mw_per_s(spec) -> float:
    """Fastest sustained fall the spec's time-domain limits allow (continuous time). [MW/s]"""
    rates = []
    if spec.max_ramp_mw_per_min is not None:
        rates.append(spec.max_ramp_mw_per_min / 60.0)
    if spec.max_window_swing_mw is not None:
        rates.append(spec.max_window_swing_mw / spec.window_s)
    return min(rates)


def row(case: Path) -> dict:
    sc = load_scenario(case / "scenario.resolved.toml")
    m = json.loads((case / "metrics.json").read_text())
    s = json.loads((case / "sizing.json").read_text())
    ts = pd.read_parquet(case / "timeseries.parquet", columns=["t_s", "p_raw_pcc_mw"])
    t_c = sc.jobs[0].failures.crash_times_s[0]
    before = ts.loc[(ts.t_s > t_c - 60) & (ts.t_s < t_c), "p_raw_pcc_mw"].mean()
    after = ts["p_raw_pcc_mw"].iloc[-1]
    dp = float(before - after)
    rho = fastest_fall_mw_per_s(sc.spec)
    job, site = sc.jobs[0], sc.site
    per_gpu_w_s = rho * 1e6 / (job.n_gpus * (1 + site.non_gpu_frac) * site.pue)
    return {
        "case": case.name,
        "dP [MW]": dp,
        "fall [MW/min]": 60 * rho,
        "hand, foresight dP²/8ρ [MWh]": dp ** 2 / (8 * rho) / 3600,
        "hand, none dP²/2ρ [MWh]": dp ** 2 / (2 * rho) / 3600,
        "GPU ramp-down [W/s per GPU]": per_gpu_w_s,
        "sized P [MW]": s["bess"]["p_rated_mw_opt"],
        "sized E [MWh]": s["bess"]["e_rated_mwh_opt"],
        "usable E [MWh]": s["bess"]["e_rated_mwh_opt"] * (sc.bess.max_soc_frac - sc.bess.min_soc_frac),
        "limit margin": s["limit_margin_frac"],
        "verified": "compliant" if m["compliance"]["compliant"] else "no",
    }


def main(out: str) -> None:
    cases = sorted(p for p in Path(out).iterdir() if (p / "sizing.json").is_file())
    rows = [row(c) for c in cases]
    if not rows:
        raise SystemExit(f"no sized case under {out}")
    cols = list(rows[0])
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r.values()) + " |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "out/study_crash_100mw")
