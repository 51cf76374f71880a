"""Run the block-decomposition prototype against the full LP on short horizons.

    PYTHONPATH=. python benchmarks/experiments/blocks/check_blocks.py [--steps 3000] [--block 300]

Prints one JSON line per load (jittered, measured-like, start/stop): the full LP's optimum
and time, the prototype's lower bound, plan cost, proven gap, iterations and time, and whether
its lower bound stays below the optimum (it must).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from blocks import solve_blocks  # noqa: E402

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig  # noqa: E402
from facility.errors import InfeasibleError  # noqa: E402
from facility.optimize import Problem, size_storage  # noqa: E402
from facility.optimize.formulation import resolve_storage  # noqa: E402

SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)
DT = 0.1
BESS = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                  min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                  cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)


def jittered(n, seed=1):
    rng = np.random.default_rng(seed)
    out, i = np.empty(n), 0
    while i < n:
        per, duty = rng.uniform(3.6, 4.4), rng.uniform(0.75, 0.85)
        n1, n2 = int(round(per * duty / DT)), int(round(per * (1 - duty) / DT))
        out[i:i + n1] = 100.0 + rng.uniform(-1.5, 1.5)
        out[i + n1:i + n1 + n2] = 40.0 + rng.uniform(-1.5, 1.5)
        i += n1 + n2
    return out[:n]


def measured_like(n, seed=3):
    from scipy.signal import lfilter
    x = jittered(n, seed)
    x = lfilter([0.35], [1.0, -0.65], x, zi=[0.65 * x[0]])[0]
    return x + np.random.default_rng(seed).normal(0.0, 0.8, n)


def start_stop(n, seed=2):
    x, i = jittered(n, seed), np.arange(n)
    return np.where((i >= n // 10) & (i < n - n // 5), x, 5.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--block", type=int, default=300)
    ap.add_argument("--lookahead", type=int, default=100)
    ap.add_argument("--time-limit-s", type=float, default=900.0)
    a = ap.parse_args()
    opt = OptimizeConfig(coarsen=False, periodic=False, time_limit_s=a.time_limit_s, max_gap_frac=1e-3)
    for make in (jittered, measured_like, start_stop):
        load = make(a.steps)
        t0 = time.perf_counter()
        full = size_storage(load, DT, {"bess": BESS}, SPEC, opt)
        full_s = time.perf_counter() - t0
        data = {"bess": resolve_storage("bess", BESS, opt, load.size * DT / 3600.0)}
        out = {"load": make.__name__, "n_steps": a.steps, "full_usd": full.info.relaxed_objective_usd,
               "full_s": round(full_s, 2)}
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = solve_blocks(Problem(load, DT, data, SPEC, opt), a.block, a.lookahead)
            i = r.info
            out.update(blocks_lower_usd=i.lower_bound_usd, blocks_plan_usd=i.objective_usd,
                       gap_frac=i.gap_frac, iterations=i.iterations,
                       lower_bound_valid=bool(i.lower_bound_usd <= out["full_usd"] * (1 + 1e-7)))
        except InfeasibleError as exc:
            out["blocks_error"] = str(exc)[:160]
        out["blocks_s"] = round(time.perf_counter() - t0, 2)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
