"""Sizing LP benchmark: facility's sizing (matrix build, periodic reduction, tuned HiGHS) against
the naive rule-based Pyomo build solved by HiGHS with its defaults.

Case (docs/contract.md §5): a training job of 100/40 MW (iteration 4 s, compute share 0.8) under ramp
limits per second (2 MW/s over 1 s) and per minute (20 MW) and a 5 MW swing limit over 5 s,
one extendable BESS. By default the job runs through the hour (a slice of a long run: the
steady state that the periodic reduction is for); ``--start-stop`` adds a job start from 5 MW
at 120 s and a stop 5 minutes before the end, whose slow per-minute transients stay explicit.

Prints one JSON line per case, ``{"name", "baseline_s", "facility_s", "ratio",
"objective_rel_diff", ...}``: ``objective_rel_diff`` compares facility's LP optimum (before its
complementarity repair, which the baseline lacks) with the baseline's; ``gap_frac`` is the gap
facility proves on its own (periodic method: upper minus lower bound); ``step_factor`` > 1 when
it solved on an exactly equivalent coarser grid. A side that hits
``--time-limit-s`` reports ``null`` times. Usage::

    python benchmarks/bench_sizing.py                     # 36,000 steps with baseline (the baseline
                                                          # takes over an hour here), then
                                                          # 360,000 steps (1 h at 10 ms) alone
    python benchmarks/bench_sizing.py --horizon-s 600     # quick
    python benchmarks/bench_sizing.py --only 36000 --start-stop
    python benchmarks/bench_sizing.py --load stochastic --horizon-s 300   # loads that do not
    python benchmarks/bench_sizing.py --load trace --horizon-s 300        # repeat: the full LP
    python benchmarks/bench_sizing.py --load start_stop --horizon-s 600   # (see docs/formulation.md)
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


def case(horizon_s: float, dt_s: float, start_stop: bool = False):
    """Load [MW], storages and spec of the benchmark (integer step arithmetic: exact period)."""
    n = int(round(horizon_s / dt_s))
    period, compute = int(round(4.0 / dt_s)), int(round(3.2 / dt_s))
    i = np.arange(n)
    load = np.where(i % period < compute, 100.0, 40.0)
    if start_stop:
        on = (i >= int(round(120.0 / dt_s))) & (i < n - int(round(300.0 / dt_s)))
        load = np.where(on, load, 5.0)
    bess = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                      min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                      cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    spec = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                      max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)
    return load, {"bess": bess}, spec


def run_case(horizon_s: float, dt_s: float, *, start_stop: bool, baseline: bool,
             time_limit_s: float, periodic: bool | None, coarsen: bool = True) -> dict:
    load, storages, spec = case(horizon_s, dt_s, start_stop)
    opt = OptimizeConfig(time_limit_s=time_limit_s, periodic=periodic, coarsen=coarsen)
    out = {"name": f"sizing_{load.size}_steps_dt{dt_s:g}s" + ("_start_stop" if start_stop else ""),
           "n_steps": int(load.size)}
    t0 = time.perf_counter()
    fac_obj = None
    try:
        res = size_storage(load, dt_s, storages, spec, opt)
        fac_s = time.perf_counter() - t0
        i = res.info
        fac_obj = i.relaxed_objective_usd / 1000.0
        out.update(method=i.method, period_steps=i.period_steps, step_factor=i.step_factor,
                   gap_frac=i.gap_frac,
                   objective_usd=i.objective_usd, lp_objective_usd=i.relaxed_objective_usd,
                   lower_bound_usd=i.lower_bound_usd, facility_build_s=i.build_s,
                   facility_solve_s=i.solve_s, n_variables=i.n_variables,
                   n_constraints=i.n_constraints, n_repaired_steps=i.n_repaired_steps,
                   p_rated_mw=res.p_rated_mw_opt["bess"], e_rated_mwh=res.e_rated_mwh_opt["bess"])
    except InfeasibleError as exc:  # time limit reached (or truly infeasible)
        fac_s = None
        out["facility_error"] = str(exc)[:200]
    out["facility_s"] = fac_s

    base_s = base_obj = None
    if baseline:
        sd = {n: resolve_storage(n, c, opt, load.size * dt_s / 3600.0) for n, c in storages.items()}
        t0 = time.perf_counter()
        ref = solve_naive(load, dt_s, sd, spec, opt.energy_price_usd_per_mwh,
                          time_limit_s=time_limit_s)
        if ref["termination"] == "optimal":
            base_s, base_obj = time.perf_counter() - t0, ref["objective_kusd"]
        out.update(baseline_build_s=ref["build_s"], baseline_solve_s=ref["solve_s"],
                   baseline_termination=ref["termination"])
    out["baseline_s"] = base_s
    out["ratio"] = base_s / fac_s if (base_s and fac_s) else None
    out["objective_rel_diff"] = (abs(fac_obj - base_obj) / max(abs(base_obj), 1e-9)
                                 if (fac_obj is not None and base_obj is not None) else None)
    return out


#: Loads that do not repeat exactly (``--load``): built by facility's own load generator, so
#: they are what ``facility size`` sees for such scenarios.
NON_PERIODIC = ("stochastic", "trace", "start_stop")
_TRACE = "tests/data/nvidia_smi_8xh100_jitter_stall.csv"


def non_periodic_load(kind: str, horizon_s: float, dt_s: float) -> np.ndarray:
    """Site power [MW] of a ~100 MW site from the load generator (``facility trace``):

    * ``stochastic``: iterations jittering in period (±10 %, 3.6–4.4 s) and compute share
      (±0.05) with per-phase level noise, 64 rack groups with stragglers;
    * ``trace``: the 8×H100 nvidia-smi log of tests/data (per-poll timestamp jitter, a stalled
      poll, "W" suffixes) replayed per GPU and looped;
    * ``start_stop``: the stochastic job starting at 120 s with a 10 s ramp and stopping 5 min
      before the end, with a checkpoint every 10 min.
    """
    from facility.config.load import scenario_from_dict
    from facility.simulate import generate_trace

    job = {"name": "pretrain", "gpu": "b200", "n_gpus": 72800, "workload": "stochastic",
           "period_s": 4.0, "compute_frac": 0.8, "p_low_frac": 0.4, "jitter_frac": 0.1,
           "compute_frac_jitter": 0.05, "noise_high_frac": 0.015, "noise_low_frac": 0.015,
           "n_rack_groups": 64, "straggler_frac": 0.02, "start_s": -10.0}
    if kind == "trace":
        job = {"name": "pretrain", "gpu": "h100", "n_gpus": 130000, "workload": "trace",
               "trace_file": _TRACE, "trace_scale": "per_gpu", "start_s": 0.0}
    elif kind == "start_stop":
        job.update(start_s=120.0, ramp_s=10.0, stop_s=horizon_s - 300.0,
                   checkpoint_every_s=600.0, checkpoint_s=20.0)
    sc = scenario_from_dict({"schema_version": 1, "name": f"bench_{kind}", "seed": 11,
                             "time": {"horizon_s": horizon_s, "dt_s": dt_s}, "jobs": [job],
                             "site": {"non_gpu_frac": 0.25, "pue": 1.1}})
    return generate_trace(sc)["p_load_mw"].to_numpy()


def run_load_case(kind: str, horizon_s: float, dt_s: float, *, baseline: bool,
                  time_limit_s: float) -> dict:
    """One non-periodic case: facility's sizing (whatever path it takes) against the naive
    Pyomo build, both on the same load, storages and spec as :func:`case`."""
    load = non_periodic_load(kind, horizon_s, dt_s)
    _, storages, spec = case(horizon_s, dt_s)
    opt = OptimizeConfig(time_limit_s=time_limit_s)
    out = {"name": f"sizing_{kind}_{load.size}_steps_dt{dt_s:g}s", "n_steps": int(load.size)}
    fac_obj = None
    t0 = time.perf_counter()
    try:
        res = size_storage(load, dt_s, storages, spec, opt)
        out["facility_s"] = time.perf_counter() - t0
        i = res.info
        fac_obj = i.relaxed_objective_usd / 1000.0
        out.update(method=i.method, gap_frac=i.gap_frac, objective_usd=i.objective_usd,
                   lower_bound_usd=i.lower_bound_usd, n_repaired_steps=i.n_repaired_steps,
                   p_rated_mw=res.p_rated_mw_opt["bess"], e_rated_mwh=res.e_rated_mwh_opt["bess"])
    except InfeasibleError as exc:
        out.update(facility_s=None, gap_frac=None, facility_error=str(exc)[:200])
    base_s = base_obj = None
    if baseline:
        sd = {n: resolve_storage(n, c, opt, load.size * dt_s / 3600.0) for n, c in storages.items()}
        t0 = time.perf_counter()
        ref = solve_naive(load, dt_s, sd, spec, opt.energy_price_usd_per_mwh, time_limit_s=time_limit_s)
        if ref["termination"] == "optimal":
            base_s, base_obj = time.perf_counter() - t0, ref["objective_kusd"]
    out["baseline_s"] = base_s
    out["ratio"] = base_s / out["facility_s"] if (base_s and out["facility_s"]) else None
    out["objective_rel_diff"] = (abs(fac_obj - base_obj) / max(abs(base_obj), 1e-9)
                                 if (fac_obj is not None and base_obj is not None) else None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--horizon-s", type=float, default=3600.0)
    ap.add_argument("--dt-s", type=float, default=None, help="one case at this step (default: 0.1 s with baseline, then 0.01 s)")
    ap.add_argument("--start-stop", action="store_true", help="job start and stop inside the horizon")
    ap.add_argument("--load", choices=("steady",) + NON_PERIODIC, default="steady",
                    help="steady: the exactly periodic square wave of the default cases; the others are "
                         "generator-made loads that do not repeat (see non_periodic_load)")
    ap.add_argument("--time-limit-s", type=float, default=9000.0,
                    help="solver time limit of each side; the naive baseline needs ~76 min at 36,000 steps here")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--full", action="store_true", help="facility without the periodic reduction")
    ap.add_argument("--no-coarsen", action="store_true", help="facility without the exact time coarsening")
    a = ap.parse_args()
    if a.load != "steady":
        dt_s = a.dt_s or 0.1
        print(json.dumps(run_load_case(a.load, a.horizon_s, dt_s, baseline=not a.no_baseline,
                                       time_limit_s=a.time_limit_s)), flush=True)
        return
    periodic = False if a.full else None
    cases = [(a.dt_s, not a.no_baseline)] if a.dt_s else [(0.1, not a.no_baseline), (0.01, False)]
    for dt_s, baseline in cases:
        print(json.dumps(run_case(a.horizon_s, dt_s, start_stop=a.start_stop, baseline=baseline,
                                  time_limit_s=a.time_limit_s, periodic=periodic,
                                  coarsen=not a.no_coarsen)), flush=True)


if __name__ == "__main__":
    main()
