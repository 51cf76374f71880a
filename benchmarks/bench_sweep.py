"""Sweep engine overhead: what the sweep adds per case beyond the case's own work.

A sweep of N cases runs the synthetic case function (``facility.sweep.synthetic``: the real
metric functions on a 500-step square wave, plus a fixed sleep standing in for the
co-simulation) through ``run_sweep`` — case expansion, validation of every case's scenario,
worker dispatch, atomic case folders, the sweep table (parquet + csv) and the Pareto/study
outputs all included. ``case_s`` is timed inside each worker around the case function only.

    overhead_s_per_case      = (wall_s · workers − Σ case_s) / N   [worker-seconds per case]
    wall_overhead_s_per_case = (wall_s − Σ case_s / workers) / N   [wall seconds per case]

The first is the stricter one (it charges every worker's idle time); the target is < 0.2 s.
Prints one JSON line per executor: {"name", "n_cases", "workers", "wall_s", "case_s_sum",
"overhead_s_per_case", "wall_overhead_s_per_case", "target_s_per_case", "ok"}.

Usage: python benchmarks/bench_sweep.py [--n-cases 200] [--workers N] [--sleep-s 0.02]
       [--executors local,dask,serial]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from facility.sweep.synthetic import SYNTHETIC_SCENARIO_TOML

SCENARIO = SYNTHETIC_SCENARIO_TOML

TARGET_S = 0.2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n-cases", type=int, default=200)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--sleep-s", type=float, default=0.02)
    parser.add_argument("--executors", default="local,dask,serial")
    args = parser.parse_args()

    from facility.sweep import run_sweep
    from facility.sweep.executors import default_workers

    n_floor = 5
    n_e = max(1, args.n_cases // (n_floor * 2))
    sets = [f"gpu_smoothing.floor_frac=0.2:0.9:{n_floor}", f"rack_storage.e_rated_mwh=0:0.001:{n_e}",
            "spec=paper_example,caiso_2026_straw"]
    rc = 0
    with tempfile.TemporaryDirectory() as tmp:
        scen = Path(tmp) / "bench.toml"
        scen.write_text(SCENARIO.format(description=f"synthetic:sleep={args.sleep_s}"))
        for name in args.executors.split(","):
            workers = 1 if name == "serial" else (args.workers or default_workers())
            executor = "dask" if name == "dask" else "local"
            t0 = time.perf_counter()
            df = run_sweep(scen, sets, Path(tmp) / name, executor=executor, workers=workers, progress=False,
                           case_fn="facility.sweep.synthetic:synthetic_case")
            wall = time.perf_counter() - t0
            n = len(df)
            case_sum = float(df["case_s"].sum())
            over = (wall * workers - case_sum) / n
            line = {
                "name": f"sweep_overhead_{name}",
                "n_cases": n,
                "n_failed": int((df["status"] != "ok").sum()),
                "workers": workers,
                "wall_s": round(wall, 3),
                "case_s_sum": round(case_sum, 3),
                "overhead_s_per_case": round(over, 4),
                "wall_overhead_s_per_case": round((wall - case_sum / workers) / n, 4),
                "target_s_per_case": TARGET_S,
                "ok": bool(over < TARGET_S and (df["status"] == "ok").all()),
            }
            print(json.dumps(line), flush=True)
            rc |= 0 if line["ok"] else 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
