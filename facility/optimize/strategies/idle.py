"""Strategy ``idle``: the storages at their least ratings, doing nothing, where that is allowed.

A spec that the load meets by itself needs no storage. The LP finds that too, but an
interior point returns ratings of ~1e-7 MW and a bound from duals of the same accuracy, so
its plan costs a few micro-dollars and its gap is measured against almost nothing. This
strategy settles the case before any LP is built.

**Proof of optimality.** Every cost term of the LP is ≥ 0 (capex c_P P̂ + c_E Ê on ratings
bounded below by P_lo and E_lo, conversion losses and degradation on the step powers), so
every feasible plan costs at least c_P P_lo + c_E E_lo. The plan P̂ = P_lo, Ê = E_lo, no
charge or discharge, SoC held at s₀ costs exactly that. When
:func:`facility.optimize.certificates.verify.verify_plan` finds it feasible (it checks every row of the
full LP: window limits with the PCC history, dynamic range, spectral limits, SoC recursion
with self-discharge, terminal SoC and its band), it is optimal, with lower bound = objective.

It does not apply with GPU levers (their least-cost setting is a problem of its own), a
PCC variation price (the storage could lower it) or slack mode.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.formulation import plan_cost_kusd
from facility.optimize.model.problem import Problem
from facility.optimize.model.result import SizingResult, SolveInfo, pack_result
from facility.optimize.certificates.verify import verify_plan

__all__ = ["solve_idle"]


def solve_idle(pb: Problem) -> SizingResult | None:
    """The idle plan (least ratings, zero powers) when it meets every limit, else None.

    Returns
    -------
    SizingResult or None
        ``info.method = "idle"``, ``lower_bound_usd = objective_usd`` (the proof in the
        module text), ``gap_frac = 0``.
    """
    if (pb.levers is not None or pb.pcc_variation_cost_usd_per_mw > 0
            or pb.optimize.allow_slack or not pb.storages):
        return None
    T = pb.n_steps
    plan = {n: (float(s.p_lo), float(s.e_lo), np.zeros(T), np.zeros(T),
                np.full(T + 1, s.soc0 * float(s.e_lo)))
            for n, s in pb.storages.items()}
    if verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.optimize.limit_margin_frac,
                   pb.p_pcc_history_mw) is not None:
        return None
    obj = 1000.0 * plan_cost_kusd(pb.storages, plan, pb.dt_s, pb.optimize.energy_price_usd_per_mwh)
    info = SolveInfo(status="optimal", termination="the load meets every limit with the storages idle",
                     objective_usd=obj, build_s=0.0, solve_s=0.0, n_variables=0, n_constraints=0, relaxed_objective_usd=obj, method="idle",
                     lower_bound_usd=obj, gap_frac=0.0)
    return pack_result(pb.load_mw, pb.storages, plan, info)
