"""Co-simulation benchmark: a 100,000-GPU site, 1 h at 10 ms (360,000 steps), rack storage +
filter controller + power flow on every step, outputs written to disk.

Prints one JSON line: {"name", "n_steps", "facility_s", "steps_per_s", "peak_rss_gib",
"target_s", "target_rss_gib", "baseline_steps_per_s"}. The baseline is the throughput the
closest open peer reports with a power flow (~8,000 steps/s, docs/contract.md §5); the
pandapower runpp loop itself (~40 steps/s) is measured by bench_powerflow.py.

Usage: python benchmarks/bench_cosim.py [--horizon-s 3600] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def scenario_dict(horizon_s: float) -> dict:
    return {
        "schema_version": 1,
        "name": "bench_cosim",
        "seed": 1,
        "time": {"horizon_s": horizon_s, "dt_s": 0.01},
        "jobs": [{"name": "pretrain", "n_gpus": 100_000, "gpu": "gb200", "workload": "stochastic",
                  "period_s": 1.2, "compute_frac": 0.7, "p_low_frac": 0.2,
                  "checkpoint_every_s": 600, "checkpoint_s": 20}],
        "site": {"non_gpu_frac": 0.3, "pue": 1.2},
        "rack_storage": {"enabled": True, "p_rated_mw": 150.0, "e_rated_mwh": 3.0, "initial_soc_frac": 0.5},
        "controller": {"kind": "filter", "window_s": 20.0},
        "grid": {"vn_kv": 230.0, "n_feeders": 8},
        "spec": {"window_s": 5.0, "max_window_swing_mw": 10.0, "max_ramp_mw_per_min": 20.0},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--horizon-s", type=float, default=3600.0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from facility.scenario import scenario_from_dict
    from facility.run.orchestrator import run_scenario

    scenario = scenario_from_dict(scenario_dict(args.horizon_s), "bench_cosim")
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp) / "run"
        t0 = time.perf_counter()
        res = run_scenario(scenario, out_dir=out, plots=True)
        wall = time.perf_counter() - t0
    n = len(res.timeseries)
    rss_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({
        "name": "cosim_100k_gpus_rack_storage_filter_powerflow",
        "n_steps": n,
        "facility_s": round(wall, 3),
        "steps_per_s": round(n / wall, 1),
        "peak_rss_gib": round(rss_gib, 3),
        "target_s": 20.0,
        "target_rss_gib": 3.0,
        "baseline_steps_per_s": 8000.0,
        "stages_s": {k: round(v, 3) for k, v in res.timings_s.items()},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
