"""Hybrid sizing benchmark (issue 49): a hybrid section at single-technology speed.

Cases (``benchmarks/scenarios/``): ``hybrid_gb200_30k`` (30,000 GB200, jittered, ERCOT
proposal, 240 s at 0.02 s: 12,000 steps) and ``hybrid_h100_50k`` (50,000 H100, the same limits),
each with ``bess.technologies = ["supercap", "lfp_1h"]`` (the library's self-discharge on). The
optimizer is timed on the load ``facility size`` hands it (its first loss round), for the hybrid
and for each technology alone; ``--old`` also times the path before issue 49 (self-discharge
ruled the interior strategy out, so the full LP ran, and no candidate was pruned) under
``--old-limit-s``: a side that stops there reports its time as a floor (``"stopped": true``).

Prints one JSON line per run: ``{"case", "run", "wall_s", "cpu_s", "method", "status",
"objective_usd", "lower_bound_usd", "ratings", "candidates"}`` and per case a summary with
``hybrid_over_single`` (the hybrid's wall time over the faster technology alone's) and
``hybrid_cost_over_best_single``. CPU time counts this process only (the interior strategy's
solves run in it below 20,000 steps). Usage::

    python benchmarks/bench_sizing_hybrid.py                  # both cases, new path
    python benchmarks/bench_sizing_hybrid.py --case hybrid_gb200_30k --old --old-limit-s 600

End to end (network-loss rounds, verification run, report) the same cases run with
``python -m facility size benchmarks/scenarios/hybrid_gb200_30k.toml --out /tmp/h --no-plots``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = ("hybrid_gb200_30k", "hybrid_h100_50k")


def inputs(case: str):
    """(load [MW], dt [s], storages, spec, optimize) that ``facility size`` hands the optimizer."""
    from facility.scenario import load_scenario
    from facility.grid_impact.lp import lp_spec
    from facility.sizing.pipeline import sizing_inputs

    sc = load_scenario(str(HERE / "scenarios" / f"{case}.toml"))
    si = sizing_inputs(sc)
    return si.p_load_mw, sc.time.dt_s, sc.storages(), lp_spec(sc), si.scenario_caps.optimize


@contextmanager
def old_path():
    """The optimizer as before issue 49: no interior strategy with self-discharge, no pruning."""
    from facility.optimize.driver import prune
    from facility.optimize.strategies import interior

    applies, prune_applies = interior.applies, prune.applies
    interior.applies = lambda pb: applies(pb) and all(s.sigma_per_h == 0 for s in pb.storages.values())
    prune.applies = lambda pb: False
    try:
        yield
    finally:
        interior.applies, prune.applies = applies, prune_applies


def run(case: str, name: str, techs: list[str], data, limit_s: float | None = None) -> dict:
    from facility.optimize import size_storage

    load, dt, storages, spec, opt = data
    if limit_s is not None:
        opt = opt.model_copy(update={"time_limit_s": float(limit_s)})
    st = {"bess": storages["bess"].model_copy(update={"technologies": techs})}
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = size_storage(load, dt, st, spec, opt)
    i = r.info
    return {"case": case, "run": name, "wall_s": round(time.perf_counter() - t0, 2),
            "cpu_s": round(time.process_time() - c0, 2), "method": i.method, "status": i.status,
            "stopped": i.method == "follower", "objective_usd": i.objective_usd,
            "lower_bound_usd": i.lower_bound_usd,
            "ratings": {n: [r.p_rated_mw_opt[n], r.e_rated_mwh_opt[n]] for n in r.p_rated_mw_opt},
            "candidates": i.candidates}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", choices=CASES, action="append")
    ap.add_argument("--old", action="store_true", help="also time the path before issue 49")
    ap.add_argument("--old-limit-s", type=float, default=600.0)
    a = ap.parse_args(argv)
    for case in a.case or CASES:
        data = inputs(case)
        out = {}
        for name, techs in (("hybrid", ["supercap", "lfp_1h"]), ("supercap", ["supercap"]),
                            ("lfp_1h", ["lfp_1h"])):
            out[name] = run(case, name, techs, data)
            print(json.dumps(out[name]), flush=True)
        if a.old:
            with old_path():
                for name in ("hybrid", "supercap"):
                    techs = ["supercap", "lfp_1h"] if name == "hybrid" else ["supercap"]
                    r = run(case, f"old_{name}", techs, data, a.old_limit_s)
                    out[f"old_{name}"] = r
                    print(json.dumps(r), flush=True)
        single = min(out["supercap"]["wall_s"], out["lfp_1h"]["wall_s"])
        best = min(out["supercap"]["objective_usd"], out["lfp_1h"]["objective_usd"])
        summary = {"case": case, "summary": True,
                   "hybrid_over_single": round(out["hybrid"]["wall_s"] / single, 3),
                   "hybrid_cost_over_best_single": out["hybrid"]["objective_usd"] / best}
        if a.old:
            summary["old_hybrid_over_new_hybrid"] = round(out["old_hybrid"]["wall_s"] / out["hybrid"]["wall_s"], 2)
            summary["old_hybrid_stopped"] = out["old_hybrid"]["stopped"]
        print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
