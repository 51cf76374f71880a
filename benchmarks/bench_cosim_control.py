"""Controller-only throughput: the closed loop of ``facility.control.run_control`` on 1 h at
10 ms (360,000 steps) of a stochastic-looking square wave, rack storage + filter controller
(the co-simulation benchmark's control stage), plus moving-average with co-design and the
monitor on, and the MPC on combined_multi_job's size (600 s, 3 storages) when the optimizer is
importable.

Prints one JSON line per case: {"name", "n_steps", "control_s", "steps_per_s", "target_s"}.
The target is the share of the 20 s co-simulation budget (docs/contract.md §5) the control
stage may take (2 s); numba compilation is excluded (one warm-up run first).

Usage: python benchmarks/bench_cosim_control.py [--horizon-s 3600] [--skip-mpc]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _load(horizon_s: float, dt_s: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, horizon_s, dt_s)
    period = 1.2 * (1 + 0.05 * rng.standard_normal(int(horizon_s / 1.2) + 2))
    edges = np.concatenate([[0.0], np.cumsum(period)])
    k = np.searchsorted(edges, t, side="right") - 1
    phase = (t - edges[k]) / period[k]
    p = np.where(phase < 0.7, 200.0, 60.0) + rng.normal(0, 2.0, t.size)
    alt = np.where(phase < 0.7, 200.0, 170.0)
    return p, alt


def _case(name, scenario, load, dt_s, alt=None, target_s=2.0) -> dict:
    from facility.control import run_control
    from facility.storage import StorageParams

    sto = {n: StorageParams.from_config(n, c) for n, c in scenario.storages().items()}
    run_control(load[:1000], dt_s, scenario, sto,
                p_site_gpu_engaged_mw=None if alt is None else alt[:1000])   # compile
    t0 = time.perf_counter()
    r = run_control(load, dt_s, scenario, sto, p_site_gpu_engaged_mw=alt)
    sec = time.perf_counter() - t0
    out = {"name": name, "n_steps": int(load.size), "control_s": round(sec, 4),
           "steps_per_s": round(load.size / sec), "target_s": target_s,
           "n_events": len(r.events)}
    if r.info.get("n_replans"):
        out.update(n_replans=r.info["n_replans"], mpc_solve_s=round(r.info["mpc_solve_s"], 3))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--horizon-s", type=float, default=3600.0)
    ap.add_argument("--skip-mpc", action="store_true")
    args = ap.parse_args()
    from facility.config.schema import Scenario

    dt = 0.01
    load, alt = _load(args.horizon_s, dt)
    rack = {"enabled": True, "p_rated_mw": 150.0, "e_rated_mwh": 3.0}
    job = [{"n_gpus": 100_000}]
    sc = Scenario(jobs=job, rack_storage=rack, controller={"kind": "filter", "window_s": 20.0})
    print(json.dumps(_case("filter_rack_storage", sc, load, dt)), flush=True)
    sc = Scenario(jobs=job, rack_storage=dict(rack, e_rated_mwh=0.05),
                  controller={"kind": "moving_average", "window_s": 10.0},
                  monitor={"enabled": True, "window_s": 10.0, "every_s": 1.0},
                  spec={"max_band_peak_mw": 5.0})
    print(json.dumps(_case("moving_average_codesign_monitor", sc, load, dt, alt)), flush=True)
    if not args.skip_mpc:
        try:
            import facility.optimize  # noqa: F401
            has_opt = hasattr(facility.optimize, "solve_dispatch")
        except ImportError:
            has_opt = False
        if has_opt:
            n = int(600 / dt)
            sc = Scenario(jobs=job, rack_storage={"enabled": True, "p_rated_mw": 30.0, "e_rated_mwh": 0.1},
                          ups={"enabled": True, "p_rated_mw": 120.0, "e_rated_mwh": 10.0},
                          bess={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 20.0},
                          controller={"kind": "mpc"},
                          spec={"max_ramp_up_mw_per_s": 10.0, "max_ramp_down_mw_per_s": 10.0,
                                "window_s": 5.0, "max_window_swing_mw": 10.0})
            print(json.dumps(_case("mpc_combined_600s", sc, 0.4 * load[:n], dt, target_s=60.0)),
                  flush=True)
        else:
            print(json.dumps({"name": "mpc_combined_600s", "skipped": "facility.optimize.solve_dispatch not importable"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
