"""Sizing through the network, and under the site's controller: what each costs in time.

1. **Loss-aware against lossless** (issue target: ≤ 1.5×): the same scenario's sizing LP on the
   site load (lossless, one solve) and through the network (sequential LP,
   :func:`facility.sizing.network.size_through_network`: its LP solves and power flows), on

   * ``jittered``: the bundled ``sizing_stochastic_hour`` (an hour of a jittered 100 MW job at
     0.1 s, 36,000 steps, the interior-point strategy), and
   * ``start_stop``: the same hour with a job start at 300 s and a stop at 3,300 s (10-s ramps),
     the loads users have, not square waves.

   Both sides run in the same process, one after the other; the ratio is loss-aware / lossless
   wall time, with the rounds and the residual.
2. **Re-sizing for the MPC** (target: under 10 minutes on 2 cores): ``facility size`` of the
   bundled ``sizing_stochastic_hour`` end to end (foresight design through the network, then the
   MPC's verification runs and the bracketed search), with the runs it took, its wall time and
   its CPU time (this process and its children).

Prints one JSON line per case. Usage::

    python benchmarks/bench_sizing_network.py                 # all three, the full hour
    python benchmarks/bench_sizing_network.py --horizon-s 600 # quick
    python benchmarks/bench_sizing_network.py --only jittered start_stop
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "sizing_stochastic_hour.toml"
START_STOP = ["jobs.0.start_s=300", "jobs.0.stop_s=3300", "jobs.0.ramp_s=10"]


def _scenario(horizon_s: float, extra: list[str]):
    from facility.scenario import load_scenario

    sets = [f"time.horizon_s={horizon_s}"] + extra
    if horizon_s < 3600:
        sets = [s.replace("jobs.0.stop_s=3300", f"jobs.0.stop_s={horizon_s - 300:g}") for s in sets]
    return load_scenario(SCENARIO, sets)


def loss_case(name: str, horizon_s: float, extra: list[str]) -> dict:
    """Lossless LP against the loss-aware sequential LP on one scenario."""
    from facility.optimize import size_storage
    from facility.sizing.pipeline import sizing_inputs
    from facility.sizing.network import size_through_network

    s = _scenario(horizon_s, extra)
    si = sizing_inputs(s)
    opt = si.scenario_caps.optimize
    t0 = time.perf_counter()
    plain = size_storage(si.p_load_mw, s.time.dt_s, s.storages(), s.spec, opt, t_s=si.profile.t_s)
    t1 = time.perf_counter()
    ns = size_through_network(s, si.net, si.ctl_site.p_feeder_mw, si.p_load_mw, s.storages(), opt,
                              t_s=si.profile.t_s, net_for=si.net_for)
    t2 = time.perf_counter()
    p0, p1 = plain.p_rated_mw_opt["bess"], ns.sol.p_rated_mw_opt["bess"]
    e0, e1 = plain.e_rated_mwh_opt["bess"], ns.sol.e_rated_mwh_opt["bess"]
    return {"name": name, "n_steps": int(si.p_load_mw.size), "lossless_s": round(t1 - t0, 2),
            "loss_aware_s": round(t2 - t1, 2), "ratio": round((t2 - t1) / (t1 - t0), 3),
            "rounds": ns.rounds, "residuals_mw": [float(f"{r:.3g}") for r in ns.residuals_mw],
            "tol_mw": ns.tol_mw, "converged": ns.converged, "method": ns.sol.info.method,
            "lossless_bess": [round(p0, 4), round(e0, 5)], "loss_aware_bess": [round(p1, 4), round(e1, 5)]}


def _cpu_s() -> float:
    """CPU time of this process and its finished children (user + system): on a machine
    others share, the wall time says little, this what the run itself cost. [s]"""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def mpc_case(horizon_s: float) -> dict:
    """``facility size`` of the bundled stochastic hour, verified and re-sized for the MPC."""
    from facility.sizing.pipeline import size_scenario

    s = _scenario(horizon_s, [])
    c0 = _cpu_s()
    t0 = time.perf_counter()
    sol, res = size_scenario(s, plots=False)
    wall = time.perf_counter() - t0
    z = res.sizing
    return {"name": "mpc_resize", "n_steps": int(len(res.timeseries)), "wall_s": round(wall, 1),
            "cpu_s": round(_cpu_s() - c0, 1),
            "verified_by": z["verified_by"], "compliant": bool(res.compliant),
            "p_scale": z["resize"]["p_scale"], "e_scale": z["resize"]["e_scale"], "runs": z["resize"]["runs"],
            "foresight_bess": [round(z["foresight"]["bess"]["p_rated_mw_opt"], 3),
                               round(z["foresight"]["bess"]["e_rated_mwh_opt"], 5)],
            "bess": [round(z["bess"]["p_rated_mw_opt"], 3), round(z["bess"]["e_rated_mwh_opt"], 5)],
            "objective_usd_per_year": round(z["objective_usd_per_year"]),
            "cost_of_no_foresight_usd_per_year": round(z["cost_of_no_foresight_usd_per_year"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon-s", type=float, default=3600.0)
    ap.add_argument("--only", nargs="*", choices=("jittered", "start_stop", "mpc"),
                    default=["jittered", "start_stop", "mpc"])
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if "jittered" in args.only:
        print(json.dumps(loss_case("jittered", args.horizon_s, [])), flush=True)
    if "start_stop" in args.only:
        print(json.dumps(loss_case("start_stop", args.horizon_s, START_STOP)), flush=True)
    if "mpc" in args.only:
        print(json.dumps(mpc_case(args.horizon_s)), flush=True)


if __name__ == "__main__":
    main()
