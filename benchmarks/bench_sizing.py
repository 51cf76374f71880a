"""Sizing LP benchmark: facility's matrix build + tuned HiGHS vs a naive rule-based Pyomo build.

Case (design.md §4): a 100/40 MW square-wave job (period 4 s, duty 0.8) that starts at 120 s
and stops 5 min before the end, one extendable BESS, ramp limits per second (2 MW/s over 1 s),
per minute (20 MW) and a 5 MW swing limit over 5 s, at dt = 0.1 s.

Prints one JSON line per case: ``{"name", "baseline_s", "facility_s", "ratio",
"objective_rel_diff", ...}``. Both paths get the same time limit; a path that hits it reports
``null`` times. Usage::

    python benchmarks/bench_sizing.py                      # 1 h at 0.1 s (36,000 steps)
    python benchmarks/bench_sizing.py --horizon-s 300      # quick
    python benchmarks/bench_sizing.py --dt-s 0.01 --no-baseline   # 360,000 steps
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.errors import InfeasibleError
from facility.optimize import size_storage
from facility.optimize.formulation import resolve_storage
from facility.optimize.naive import solve_naive


def case(horizon_s: float, dt_s: float):
    t = np.arange(int(round(horizon_s / dt_s))) * dt_s
    p = np.where((t % 4.0) < 3.2, 100.0, 40.0)
    load = np.where((t >= 120.0) & (t < max(horizon_s - 300.0, 180.0)), p, 5.0)
    bess = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                      min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                      cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    spec = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                      max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)
    return load, {"bess": bess}, spec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--horizon-s", type=float, default=3600.0)
    ap.add_argument("--dt-s", type=float, default=0.1)
    ap.add_argument("--time-limit-s", type=float, default=600.0)
    ap.add_argument("--no-baseline", action="store_true")
    a = ap.parse_args()
    load, storages, spec = case(a.horizon_s, a.dt_s)
    opt = OptimizeConfig(time_limit_s=a.time_limit_s)
    out = {"name": f"sizing_{load.size}_steps_dt{a.dt_s:g}s", "n_steps": int(load.size)}

    t0 = time.perf_counter()
    try:
        res = size_storage(load, a.dt_s, storages, spec, opt)
        fac_s = time.perf_counter() - t0
        # the naive baseline solves the LP only: compare with the LP optimum (before the
        # complementarity repair, whose extra time is still inside facility_s)
        fac_obj = res.info.relaxed_objective_usd / 1000.0
        out.update(facility_build_s=res.info.build_s, facility_solve_s=res.info.solve_s,
                   n_repaired_steps=res.info.n_repaired_steps,
                   facility_lp_s=fac_s - res.info.repair_solve_s,
                   facility_repair_s=res.info.repair_solve_s,
                   objective_usd=res.info.objective_usd,
                   n_variables=res.info.n_variables, n_constraints=res.info.n_constraints,
                   p_rated_mw=res.p_rated_mw_opt["bess"], e_rated_mwh=res.e_rated_mwh_opt["bess"])
    except InfeasibleError as exc:  # time limit reached (or truly infeasible)
        fac_s, fac_obj = None, None
        out["facility_error"] = str(exc)[:200]
    out["facility_s"] = fac_s

    base_s = base_obj = None
    if not a.no_baseline:
        sd = {n: resolve_storage(n, c, opt, load.size * a.dt_s / 3600.0) for n, c in storages.items()}
        t0 = time.perf_counter()
        ref = solve_naive(load, a.dt_s, sd, spec, opt.energy_price_usd_per_mwh,
                          time_limit_s=a.time_limit_s)
        if ref["termination"] == "optimal":
            base_s, base_obj = time.perf_counter() - t0, ref["objective_kusd"]
        out.update(baseline_build_s=ref["build_s"], baseline_solve_s=ref["solve_s"],
                   baseline_termination=ref["termination"])
    out["baseline_s"] = base_s
    out["ratio"] = base_s / fac_s if (base_s and fac_s) else None
    # same LP on both sides (the baseline has no complementarity repair)
    out["ratio_lp_only"] = base_s / out["facility_lp_s"] if (base_s and fac_s) else None
    out["objective_rel_diff"] = (abs(fac_obj - base_obj) / max(abs(base_obj), 1e-9)
                                 if (fac_obj is not None and base_obj is not None) else None)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
