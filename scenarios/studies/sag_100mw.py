"""Voltage-sag study (docs/grid_events.md): a ~100 MW training site under the worst sag of each
band of the ERCOT NOGRR282 ride-through curve, with the UPS's default transfer setting and with
a setting that rides through (no transfer inside the curve; the rectifier's current limit and
the battery carry the load).

Usage: python scenarios/studies/sag_100mw.py [OUT_DIR]   (about 1-2 min; writes sag_100mw.csv
and prints the markdown table of docs/grid_events.md)
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from facility.scenario import scenario_from_dict
from facility.config.events import RideThroughSpec
from facility.config.library import load_spec_table
from facility.electrical.ride_through import curve_worst_sags
from facility.run.orchestrator import run_scenario

SITE = {
    "schema_version": 1, "name": "sag_100mw", "seed": 11,
    "time": {"horizon_s": 40.0, "dt_s": 0.01},
    # 55,000 GB200 held at 90 % TDP: ~86 MW of IT load behind the UPSs, ~103 MW site with cooling
    "jobs": [{"name": "pretrain", "n_gpus": 55000, "gpu": "gb200", "workload": "square", "period_s": 2.0,
              "compute_frac": 0.7, "p_low_frac": 0.9, "p_high_frac": 0.9}],
    "site": {"non_gpu_frac": 0.3, "pue": 1.2},
    # UPS battery of 5 min at ~100 MW (the field's rule of thumb, docs/grid_events.md)
    "ups": {"enabled": True, "p_rated_mw": 110.0, "e_rated_mwh": 8.3, "initial_soc_frac": 0.9,
            "min_soc_frac": 0.1},
    "spec": {"base": "ercot_2026_proposal"},
}
SETTINGS = {
    "default (0.85 pu, 5 ms)": {},
    "ride-through (no transfer within the curve)": {"transfer_delay_s": 2.0},
}
START_S = 5.0


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "out/study_sag_100mw")
    out.mkdir(parents=True, exist_ok=True)
    rt = RideThroughSpec(**load_spec_table("ercot_2026_proposal")["ride_through"])
    rows = []
    for depth, dur in curve_worst_sags(rt):
        for label, ups in SETTINGS.items():
            data = {**SITE, "ups": {**SITE["ups"], **ups},
                    "grid_events": [{"start_s": START_S, "duration_s": dur, "depth_pu": depth}]}
            res = run_scenario(scenario_from_dict(data), plots=False)
            m = res.metrics
            blk, comp = m["ride_through"], m["compliance"]
            sag = blk["sags"]["0"]
            rows.append({
                "depth_pu": depth, "duration_s": dur, "ups_setting": label,
                "pre_fault_pcc_mw": round(float(res.timeseries["p_ref_pcc_mw"].iloc[int(START_S / 0.01) - 1]), 2),
                "ups_transfers": blk["ups"]["ups_transfers"],
                "max_load_loss_mw": round(blk["max_load_loss_mw"], 2),
                "max_disconnected_mw": round(blk["max_disconnected_mw"], 2),
                "recovery_s": sag.get("recovery_s", float("nan")),
                "connected_ok": comp.get("ride_through_connected"),
                "recovery_ok": comp.get("ride_through_recovery", "undecided"),
                "ups_battery_kwh": round(1e3 * blk["ups"]["ups_battery_mwh"], 2),
                "it_lost_mwh": round(blk["ups"]["it_lost_mwh"], 4),
                "curve_ups_e_kwh": round(1e3 * blk["ups_sizing"]["e_mwh"], 2),
                "curve_ups_p_mw": round(blk["ups_sizing"]["p_mw"], 2),
            })
            print(f"{depth:g} pu {dur:g} s, {label}: loss {rows[-1]['max_load_loss_mw']} MW", file=sys.stderr)
    with open(out / "sag_100mw.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    head = list(rows[0])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(r[k]) for k in head) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
