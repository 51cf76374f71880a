"""Benchmark: batch time-series power flow vs pandapower's runpp loop and run_timeseries.

Reference facility network: a 100,000-GPU GB200 site (about 200 MW) on a 230 kV utility
connection, one substation transformer, 8 feeders (MV/LV transformer + double-conversion UPS
each) and a 40 MW BESS on its own transformer; rack storage, UPS battery and BESS active.
The load is a 1 s training square wave (duty 0.7, low level 0.3) with per-feeder noise and
skew; the storages follow a smoothing pattern.

Baselines are timed on a sample of steps and scaled to the full run (both are linear in the
number of steps), after an untimed warm-up (pandapower's numba JIT); the same sample gives
the accuracy columns (batch vs runpp). facility_s includes building the admittance matrices
(one runpp) but not the first-ever numba compilation of our kernels (cached on disk).

Prints one JSON line per row: name, baseline_s, facility_s, ratio, max_dvm_pu (plus steps,
sample_steps, max_dp_pcc_mw).

    python benchmarks/bench_powerflow.py [--steps 36000] [--sample 100] [--ts-sample 200]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from facility.config.plausibility import estimate_peak_site_mw
from facility.config.schema import Scenario
from facility.electrical.network import build_network
from facility.electrical.powerflow import run_power_flow
from facility.electrical.reference import run_timeseries_loop, runpp_loop
from facility.scenario import resolve

N_FEEDERS = 8


def reference_case(n_steps: int, dt_s: float = 0.1, seed: int = 0):
    """Scenario, feeder peaks, (T, F) feeder load and storage powers of the reference site."""
    sc = resolve(Scenario(
        jobs=[{"n_gpus": 100_000, "gpu": "gb200"}],
        rack_storage={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 0.1},
        ups={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 10.0},
        bess={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 20.0},
        grid={"n_feeders": N_FEEDERS},
    ), check=False)   # the library entries build_network takes
    peak = estimate_peak_site_mw(sc)
    rng = np.random.default_rng(seed)
    t = np.arange(n_steps) * dt_s
    skew = rng.uniform(0, 0.05, N_FEEDERS)
    phase = ((t[:, None] + skew) % 1.0) < 0.7
    level = np.where(phase, 1.0, 0.3) + 0.02 * rng.standard_normal((n_steps, N_FEEDERS))
    p_feeder = peak / N_FEEDERS * level
    swing = p_feeder.sum(axis=1) - p_feeder.sum(axis=1).mean()
    st = {
        "rack_storage": -0.5 * swing,
        "ups": -0.2 * swing,
        "bess": -0.2 * swing + 5.0 * np.sin(2 * np.pi * t / 600.0),
    }
    return sc, np.full(N_FEEDERS, peak / N_FEEDERS * 1.1), p_feeder, st


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=36_000)
    ap.add_argument("--sample", type=int, default=100, help="steps of the runpp loop actually run")
    ap.add_argument("--ts-sample", type=int, default=200, help="steps of run_timeseries actually run")
    args = ap.parse_args(argv)

    sc, peaks, p, st = reference_case(args.steps)
    # warm-up on a tiny case: numba compilation (cached on disk after the first run)
    run_power_flow(build_network(sc, peaks), p[:10], {k: v[:10] for k, v in st.items()})

    net = build_network(sc, peaks)
    t0 = time.perf_counter()
    res = run_power_flow(net, p, st, store_bus_vm=True)  # includes building the admittance matrices
    facility_s = time.perf_counter() - t0

    sample = np.linspace(0, args.steps - 1, args.sample).astype(int)
    runpp_loop(net, p, st, steps=sample[:2])  # warm-up: pandapower's own numba JIT, lazy imports
    t0 = time.perf_counter()
    ref = runpp_loop(net, p, st, steps=sample)
    runpp_s = (time.perf_counter() - t0) / sample.size * args.steps
    dvm = float(np.abs(ref["vm_bus_pu"] - res.vm_bus_pu[sample]).max())
    dp = float(np.abs(ref["p_pcc_mw"] - res.p_pcc_mw[sample]).max())
    common = {"steps": args.steps, "max_dp_pcc_mw": dp, "facility_steps_per_s": args.steps / facility_s}
    print(json.dumps({"name": "powerflow_vs_runpp_loop", "baseline_s": runpp_s, "facility_s": facility_s,
                      "ratio": runpp_s / facility_s, "max_dvm_pu": dvm, "sample_steps": int(sample.size),
                      **common}), flush=True)

    ts_steps = np.arange(min(args.ts_sample, args.steps))
    run_timeseries_loop(net, p, st, steps=ts_steps[:2])  # warm-up
    t0 = time.perf_counter()
    ts = run_timeseries_loop(net, p, st, steps=ts_steps)
    ts_s = (time.perf_counter() - t0) / ts_steps.size * args.steps
    dvm_ts = float(np.abs(ts["vm_min_pu"] - res.vm_min_pu[ts_steps]).max())
    dp_ts = float(np.abs(ts["p_pcc_mw"] - res.p_pcc_mw[ts_steps]).max())
    print(json.dumps({"name": "powerflow_vs_run_timeseries", "baseline_s": ts_s, "facility_s": facility_s,
                      "ratio": ts_s / facility_s, "max_dvm_pu": dvm_ts, "sample_steps": int(ts_steps.size),
                      **{**common, "max_dp_pcc_mw": dp_ts}}), flush=True)


if __name__ == "__main__":
    main()
