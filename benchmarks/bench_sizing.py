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
    python benchmarks/bench_sizing.py --load trace --horizon-s 300        # repeat: the interior-
    python benchmarks/bench_sizing.py --load start_stop --horizon-s 600   # point strategy
    python benchmarks/bench_sizing.py --suite             # all of them: 3,000 and 12,000 steps with
                                                          # the naive baseline, 36,000 and 360,000
                                                          # steps without (docs/formulation.md)
    python benchmarks/bench_sizing.py --load stochastic --horizon-s 300 --band-frac 0.03
                                                          # a tight band limit on a jittered load
    python benchmarks/bench_sizing.py --technologies supercap lfp_1h --horizon-s 300 --start-stop
                                                          # hybrid vs each technology alone
    python benchmarks/bench_sizing.py --mix 0.5           # mix case: band limit + GPU levers vs storage only
    python benchmarks/bench_sizing.py --mix-jittered 60 --horizon-s 300   # levers on the jittered load, vs simplex
    python benchmarks/bench_sizing.py --mix-jittered 60 --horizon-s 300 --mix-load trace   # on a measured-format trace
    python benchmarks/bench_sizing.py --mix-jittered 60 --horizon-s 300 --band-frac 0.03   # levers + a binding band limit
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.errors import InfeasibleError
from facility.optimize import size_storage
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.strategies.naive import solve_naive


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


def non_periodic_load(kind: str, horizon_s: float, dt_s: float, workdir: str | None = None) -> np.ndarray:
    """Site power [MW] of a ~100 MW site from the load generator (``facility trace``):

    * ``stochastic``: iterations jittering in period (±10 %, 3.6–4.4 s) and compute share
      (±0.05) with per-phase level noise, 64 rack groups with stragglers;
    * ``trace``: an hour of nvidia-smi telemetry of one 8×H100 node in the logger's own CSV
      layout (per-row timestamp jitter, drifting polls, stalled logger, ``W`` suffixes;
      iterations that do not repeat), written by :mod:`benchmarks.measured_format` (synthetic:
      no GPU was at hand) into ``workdir`` and replayed per GPU through facility's trace reader;
    * ``start_stop``: the stochastic job starting at 120 s with a 10 s ramp and stopping 5 min
      before the end, with a checkpoint every 10 min (shorter horizons: start at a fifth of
      it, stop a quarter before the end, a checkpoint every third).
    """
    import tempfile
    from pathlib import Path

    from facility.scenario import scenario_from_dict
    from facility.run.orchestrator import generate_trace

    job = {"name": "pretrain", "gpu": "b200", "n_gpus": 72800, "workload": "stochastic",
           "period_s": 4.0, "compute_frac": 0.8, "p_low_frac": 0.4, "jitter_frac": 0.1,
           "compute_frac_jitter": 0.05, "noise_high_frac": 0.015, "noise_low_frac": 0.015,
           "n_rack_groups": 64, "straggler_frac": 0.02, "start_s": -10.0}
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        if kind == "trace":
            import sys

            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from measured_format import write_nvidia_smi_hour

            path = write_nvidia_smi_hour(Path(tmp) / "nvidia_smi_8xh100_hour.csv", horizon_s + 1.0)
            job = {"name": "pretrain", "gpu": "h100", "n_gpus": 104000, "workload": "trace",
                   "trace_file": str(path), "trace_scale": "per_gpu", "start_s": 0.0}
        elif kind == "start_stop":
            edge = min(120.0, horizon_s / 5)
            job.update(start_s=edge, ramp_s=10.0, stop_s=horizon_s - max(edge, min(300.0, horizon_s / 4)),
                       checkpoint_every_s=min(600.0, horizon_s / 3), checkpoint_s=20.0)
        sc = scenario_from_dict({"schema_version": 1, "name": f"bench_{kind}", "seed": 11,
                                 "time": {"horizon_s": horizon_s, "dt_s": dt_s}, "jobs": [job],
                                 "site": {"non_gpu_frac": 0.25, "pue": 1.1}})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the trace's stalled polls are reported, and meant
            return generate_trace(sc)["p_load_mw"].to_numpy()


def run_load_case(kind: str, horizon_s: float, dt_s: float, *, baseline: bool,
                  time_limit_s: float, band_frac: float | None = None) -> dict:
    """One non-periodic case: facility's sizing (whatever path it takes) against the naive
    Pyomo build, both on the same load, storages and spec as :func:`case`.

    ``objective_rel_diff`` compares the LP optima (facility's restriction before netting and
    repair; the naive LP, which may charge and discharge at once); ``plan_rel_diff`` the cost of
    facility's realizable plan with the naive LP optimum; ``gap_frac`` is what facility proves
    on its own.

    ``band_frac``: a band peak limit on 0.1-2 Hz at this share of the load's own peak there
    (the naive build has no band rows: the baseline is then facility's full LP with its lazy
    band rows, the path such loads took before the interior strategy carried them)."""
    load = non_periodic_load(kind, horizon_s, dt_s)
    _, storages, spec = case(horizon_s, dt_s)
    name = f"sizing_{kind}_{load.size}_steps_dt{dt_s:g}s"
    if band_frac is not None:
        limit = band_frac * metrics.band_peak_mw(load, dt_s, 0.1, 2.0)
        spec = spec.model_copy(update={"band_min_hz": 0.1, "band_max_hz": 2.0, "max_band_peak_mw": limit})
        name += f"_band{band_frac:g}"
    opt = OptimizeConfig(time_limit_s=time_limit_s)
    out = {"name": name, "n_steps": int(load.size)}
    fac_obj = plan_obj = None
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = size_storage(load, dt_s, storages, spec, opt)
        out["facility_s"] = time.perf_counter() - t0
        i = res.info
        fac_obj, plan_obj = i.relaxed_objective_usd / 1000.0, i.objective_usd / 1000.0
        out.update(method=i.method, gap_frac=i.gap_frac, gap_reason=i.gap_reason,
                   objective_usd=i.objective_usd, lower_bound_usd=i.lower_bound_usd,
                   n_repaired_steps=i.n_repaired_steps, n_forced_steps=i.n_forced_steps,
                   p_rated_mw=res.p_rated_mw_opt["bess"],
                   e_rated_mwh=res.e_rated_mwh_opt["bess"], warnings=[str(w.message)[:160] for w in caught])
        if band_frac is not None:
            out.update(n_spectral_bins=i.n_spectral_bins, n_spectral_rounds=i.n_spectral_rounds,
                       band_limit_mw=spec.max_band_peak_mw,
                       plan_band_peak_mw=metrics.band_peak_mw(res.p_pcc_mw, dt_s, 0.1, 2.0))
    except InfeasibleError as exc:
        out.update(facility_s=None, gap_frac=None, facility_error=str(exc)[:200])
    base_s = base_obj = None
    if baseline and band_frac is not None:
        from facility.optimize.strategies import interior

        floor, interior.MIN_STEPS = interior.MIN_STEPS, 10**9
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref = size_storage(load, dt_s, storages, spec, opt)
            base_s, base_obj = time.perf_counter() - t0, ref.info.relaxed_objective_usd / 1000.0
        except InfeasibleError as exc:  # the time limit without a compliant fallback
            out["baseline_error"] = str(exc)[:160]
        finally:
            interior.MIN_STEPS = floor
    elif baseline:
        sd = {n: resolve_storage(n, c, opt, load.size * dt_s / 3600.0) for n, c in storages.items()}
        t0 = time.perf_counter()
        ref = solve_naive(load, dt_s, sd, spec, opt.energy_price_usd_per_mwh, time_limit_s=time_limit_s)
        if ref["termination"] == "optimal":
            base_s, base_obj = time.perf_counter() - t0, ref["objective_kusd"]
    out["baseline_s"] = base_s
    out["ratio"] = base_s / out["facility_s"] if (base_s and out["facility_s"]) else None
    rel = (lambda v: abs(v - base_obj) / max(abs(base_obj), 1e-9)
           if (v is not None and base_obj is not None) else None)
    out["objective_rel_diff"], out["plan_rel_diff"] = rel(fac_obj), rel(plan_obj)
    return out


#: ``--suite``: the non-periodic cases of issue 13 in one run — each load at 3,000 and 12,000
#: steps against the naive build, then an hour at 0.1 s (36,000 steps) and at 10 ms
#: (360,000 steps) without it.
SUITE = [(kind, h, dt, base) for kind in NON_PERIODIC
         for h, dt, base in ((300.0, 0.1, True), (1200.0, 0.1, True), (3600.0, 0.1, False),
                             (3600.0, 0.01, False))]


# --------------------------------------------------------------------------- mix case (--mix)
def mix_case(horizon_s: float, dt_s: float, band_peak_mw: float):
    """The steady case with a band peak limit and the GPU levers: the load as one job of
    100,000 GPUs of 1 kW (site factor 1), floor range 0.2-0.9, cap range 0.5-1, burn."""
    from facility.optimize.model.levers import single_job_inputs

    load, storages, spec = case(horizon_s, dt_s)
    p_w = load * 1e6 / 100_000
    levers = single_job_inputs(p_w, 100_000, 1000.0, floor_range=(0.2, 0.9), cap_range=(0.5, 1.0),
                               burn=True)
    mix_spec = spec.model_copy(update={"band_min_hz": 0.1, "band_max_hz": 5.0,
                                       "max_band_peak_mw": band_peak_mw})
    return load, storages, spec, mix_spec, levers


def run_mix_case(horizon_s: float, dt_s: float, *, band_peak_mw: float, time_limit_s: float) -> dict:
    """Time the steady case with storage only, then with the band limit as LP rows and the GPU
    levers as decisions (same options, annualized capex for both): ``ratio`` = mix / storage,
    each side the best of two runs (the first run of a process also pays for loading HiGHS,
    ~0.6 s, which flattered the ratio when only the storage side paid it)."""
    load, storages, spec, mix_spec, levers = mix_case(horizon_s, dt_s, band_peak_mw)
    opt = OptimizeConfig(time_limit_s=time_limit_s, annualize=True)
    out = {"name": f"sizing_mix_{load.size}_steps_dt{dt_s:g}s", "n_steps": int(load.size),
           "band_peak_limit_mw": band_peak_mw}
    def best_of(run):  # both sides warm (the first call imports and loads HiGHS): best of two
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            r = run()
            times.append(time.perf_counter() - t0)
        return r, min(times)

    ref, out["storage_only_s"] = best_of(lambda: size_storage(load, dt_s, storages, spec, opt))
    out["storage_only_band_peak_mw"] = metrics.band_peak_mw(ref.p_pcc_mw, dt_s, 0.1, 5.0)
    res, out["mix_s"] = best_of(lambda: size_storage(load, dt_s, storages, mix_spec, opt, levers=levers))
    i = res.info
    lv = res.levers["job"]
    out.update(ratio=out["mix_s"] / out["storage_only_s"], method=i.method,
               step_factor=i.step_factor, storage_only_method=ref.info.method,
               storage_only_step_factor=ref.info.step_factor, gap_frac=i.gap_frac,
               n_spectral_bins=i.n_spectral_bins, n_spectral_rounds=i.n_spectral_rounds,
               n_lever_pieces=i.n_lever_pieces, n_variables=i.n_variables,
               mix_band_peak_mw=metrics.band_peak_mw(res.p_pcc_mw, dt_s, 0.1, 5.0),
               objective_usd=i.objective_usd, storage_only_objective_usd=ref.info.objective_usd,
               p_rated_mw=res.p_rated_mw_opt["bess"], floor_frac=lv["floor_frac"],
               cap_frac=lv["cap_frac"], burned_mwh=float(np.sum(lv["burn_mw"] + lv["floor_burn_mw"]) * dt_s / 3600))
    return out


def run_mix_jittered(horizon_s: float, price_usd_per_mwh: float, *, time_limit_s: float,
                     baseline: bool = True, kind: str = "stochastic",
                     band_frac: float | None = None) -> dict:
    """GPU levers (floor 0.2-0.9, cap 0.5-1, burn) beside the BESS on a load that does not
    repeat (``kind`` of :func:`non_periodic_load`: the jittered ``stochastic`` job, the
    measured-format ``trace``, ``start_stop``) at 0.1 s: one cap piece per power level, so the
    driver solves the pieces on an even grid and bounds the rest by branch and bound over
    relaxed boxes (:mod:`facility.optimize.strategies.lever_search`). The load is one job of 100,000 GPUs
    of 1 kW at site factor 1 (its GPU power is the site power / 100,000).

    The baseline, in the same run, is the same search with every LP on HiGHS' dual simplex
    (the full-LP path: the interior strategy switched off), which is how lever pieces were
    solved before the interior strategy carried them: ``ratio`` = baseline / facility,
    ``objective_rel_diff`` compares the two plans' costs, each side reports its proven gap.
    Both sides share ``time_limit_s``; a baseline stopped by it has ``baseline_gap_frac``
    above facility's and its time is a lower bound on the ratio's numerator.

    ``band_frac``: a band peak limit on 0.1-2 Hz at this share of the load's own peak there,
    beside the window limits (LP rows on both sides; ``plan_band_peak_mw`` is the plan's)."""
    from facility.optimize.strategies import interior
    from facility.optimize.model.levers import single_job_inputs

    load = non_periodic_load(kind, horizon_s, 0.1)
    _, storages, spec = case(horizon_s, 0.1)
    if band_frac is not None:
        spec = spec.model_copy(update={"band_min_hz": 0.1, "band_max_hz": 2.0, "max_band_peak_mw":
                                       band_frac * metrics.band_peak_mw(load, 0.1, 0.1, 2.0)})
    levers = single_job_inputs(load * 1e6 / 100_000, 100_000, 1000.0, floor_range=(0.2, 0.9),
                               cap_range=(0.5, 1.0), burn=True)
    opt = OptimizeConfig(time_limit_s=time_limit_s, annualize=True,
                         energy_price_usd_per_mwh=price_usd_per_mwh)
    def sized():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a gap above the target is in the output
            return size_storage(load, 0.1, storages, spec, opt, levers=levers)

    t0 = time.perf_counter()
    res = sized()
    i, lv = res.info, res.levers["job"]
    name = ("jittered" if kind == "stochastic" else kind) + ("" if band_frac is None else f"_band{band_frac:g}")
    out = {"name": f"sizing_mix_{name}_{load.size}_steps", "n_steps": int(load.size),
           "price_usd_per_mwh": price_usd_per_mwh, "facility_s": time.perf_counter() - t0,
           "method": i.method, "objective_usd": i.objective_usd, "lower_bound_usd": i.lower_bound_usd,
           "gap_frac": i.gap_frac, "n_lever_lps": i.n_lever_pieces, "floor_frac": lv["floor_frac"],
           "cap_frac": lv["cap_frac"], "p_rated_mw": res.p_rated_mw_opt["bess"],
           "e_rated_mwh": res.e_rated_mwh_opt["bess"]}
    if band_frac is not None:
        out.update(band_limit_mw=spec.max_band_peak_mw, n_spectral_bins=i.n_spectral_bins,
                   plan_band_peak_mw=metrics.band_peak_mw(res.p_pcc_mw, 0.1, 0.1, 2.0))
    out.update(baseline_s=None, ratio=None, objective_rel_diff=None, baseline_gap_frac=None)
    if baseline:
        floor, interior.MIN_STEPS = interior.MIN_STEPS, 10**9
        t0 = time.perf_counter()
        try:
            ref = sized()
        finally:
            interior.MIN_STEPS = floor
        out["baseline_s"] = time.perf_counter() - t0
        out.update(ratio=out["baseline_s"] / out["facility_s"],
                   objective_rel_diff=abs(i.objective_usd - ref.info.objective_usd)
                   / max(abs(ref.info.objective_usd), 1e-9),
                   baseline_gap_frac=ref.info.gap_frac, baseline_n_lever_lps=ref.info.n_lever_pieces,
                   baseline_floor_frac=ref.levers["job"]["floor_frac"],
                   baseline_cap_frac=ref.levers["job"]["cap_frac"])
    return out


def run_tech_case(horizon_s: float, dt_s: float, techs: list[str], *, kind: str, start_stop: bool,
                  time_limit_s: float, repeat: int = 1) -> dict:
    """Sizing time with candidate technologies (hybrid) against each technology alone, on the
    steady case (``--start-stop``) or a non-repeating load (``--load``); the BESS bounds widened
    to 200 MW / 400 MWh so an hour-class battery fits. One technology alone is the section with
    that single candidate (the same LP as ``technology = NAME``).

    Each side is timed in wall-clock (``<side>_s``) and in this process's CPU time
    (``<side>_cpu_s``: what the sizing itself costs, whatever else the machine runs; HiGHS runs
    on one thread here), the best of ``repeat`` runs; ``ratio_*`` from wall-clock,
    ``cpu_ratio_*`` from CPU time."""
    if kind == "steady":
        load, _, spec = case(horizon_s, dt_s, start_stop)
    else:
        load = non_periodic_load(kind, horizon_s, dt_s)
        spec = SpecConfig(max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=10.0)
    opt = OptimizeConfig(time_limit_s=time_limit_s, annualize=True)
    out = {"name": f"technologies_{kind}{'_start_stop' if start_stop else ''}_{load.size}_steps_dt{dt_s:g}s",
           "n_steps": int(load.size), "technologies": techs}

    def one(cands):
        bess = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=400.0,
                          min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.5, technologies=cands)
        best = None
        for _ in range(max(1, repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            res = size_storage(load, dt_s, {"bess": bess}, spec, opt)
            el, cpu = time.perf_counter() - t0, time.process_time() - c0
            best = (el, cpu, res) if best is None else (min(best[0], el), min(best[1], cpu), res)
        return best

    single, single_cpu = {}, {}
    for t in techs:
        el, cpu, res = one([t])
        single[t], single_cpu[t] = el, cpu
        out[f"{t}_s"], out[f"{t}_cpu_s"] = el, cpu
        out[f"{t}_objective_usd"] = res.info.objective_usd
        out[f"{t}_method"] = res.info.method
    el, cpu, res = one(list(techs))
    out["hybrid_s"], out["hybrid_cpu_s"] = el, cpu
    out["hybrid_objective_usd"] = res.info.objective_usd
    out["hybrid_units"] = {u: [res.p_rated_mw_opt[u], res.e_rated_mwh_opt[u]] for u in res.p_rated_mw_opt}
    out["method"] = res.info.method
    out["ratio_vs_slowest_single"] = el / max(single.values())
    out["ratio_vs_fastest_single"] = el / min(single.values())
    out["cpu_ratio_vs_slowest_single"] = cpu / max(single_cpu.values())
    out["cpu_ratio_vs_fastest_single"] = cpu / min(single_cpu.values())
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
    ap.add_argument("--suite", action="store_true",
                    help="the non-periodic cases of SUITE (loads x horizons x steps) one after another")
    ap.add_argument("--only-loads", nargs="*", choices=NON_PERIODIC, default=None,
                    help="with --suite: these loads only")
    ap.add_argument("--max-steps", type=int, default=None, help="with --suite: skip longer cases")
    ap.add_argument("--full", action="store_true", help="facility without the periodic reduction")
    ap.add_argument("--no-coarsen", action="store_true", help="facility without the exact time coarsening")
    ap.add_argument("--band-frac", type=float, default=None, metavar="F",
                    help="with --load or --mix-jittered: a band peak limit on 0.1-2 Hz at F times "
                         "the load's own peak there; with --load the baseline is then facility's "
                         "full LP with lazy band rows")
    ap.add_argument("--mix-jittered", type=float, default=None, metavar="USD_PER_MWH",
                    help="GPU levers beside storage on the jittered load (--horizon-s, 0.1 s) at this "
                         "energy price: the piece search with its branch and bound, against the same "
                         "search with every LP on the simplex (the baseline; --no-baseline skips it)")
    ap.add_argument("--mix-load", choices=NON_PERIODIC, default="stochastic",
                    help="with --mix-jittered: the load (default the jittered job; trace: the "
                         "measured-format hour; start_stop: a start, checkpoints and a stop)")
    ap.add_argument("--mix", type=float, default=None, metavar="BAND_PEAK_MW",
                    help="the mix case instead: the steady case timed with storage only, then with "
                         "a band peak limit of BAND_PEAK_MW (0.1-5 Hz) as LP rows and the GPU "
                         "levers (floor, burn, cap) as decisions; default dt 0.1 s")
    ap.add_argument("--technologies", nargs="+", default=None, metavar="NAME",
                    help="sizing time of a BESS with these candidate technologies (hybrid) against each "
                         "alone, on the steady case (--start-stop) or --load (default dt 0.1 s)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --technologies: time each side this many times, keep the best")
    a = ap.parse_args()
    if a.technologies:
        print(json.dumps(run_tech_case(a.horizon_s, a.dt_s or 0.1, a.technologies, kind=a.load,
                                       start_stop=a.start_stop, time_limit_s=a.time_limit_s,
                                       repeat=a.repeat),
                         default=float), flush=True)
        return
    if a.mix_jittered is not None:
        print(json.dumps(run_mix_jittered(a.horizon_s, a.mix_jittered,
                                          time_limit_s=min(a.time_limit_s, 900.0),
                                          baseline=not a.no_baseline, kind=a.mix_load,
                                          band_frac=a.band_frac), default=float))
        return
    if a.mix is not None:
        print(json.dumps(run_mix_case(a.horizon_s, a.dt_s or 0.1, band_peak_mw=a.mix,
                                      time_limit_s=a.time_limit_s)), flush=True)
        return
    if a.suite:
        for kind, h, dt, base in SUITE:
            if (a.only_loads and kind not in a.only_loads) or (a.max_steps and h / dt > a.max_steps):
                continue
            print(json.dumps(run_load_case(kind, h, dt, baseline=base and not a.no_baseline,
                                           time_limit_s=a.time_limit_s)), flush=True)
        return
    if a.load != "steady":
        dt_s = a.dt_s or 0.1
        print(json.dumps(run_load_case(a.load, a.horizon_s, dt_s, baseline=not a.no_baseline,
                                       time_limit_s=a.time_limit_s, band_frac=a.band_frac)), flush=True)
        return
    periodic = False if a.full else None
    cases = [(a.dt_s, not a.no_baseline)] if a.dt_s else [(0.1, not a.no_baseline), (0.01, False)]
    for dt_s, baseline in cases:
        print(json.dumps(run_case(a.horizon_s, dt_s, start_stop=a.start_stop, baseline=baseline,
                                  time_limit_s=a.time_limit_s, periodic=periodic,
                                  coarsen=not a.no_coarsen)), flush=True)


if __name__ == "__main__":
    main()
