r"""Branch and bound where the LP still burns energy: an opt-in lower bound of the problem with
complementarity, tighter than any LP bound (``optimize.milp_bound_s``; docs/formulation.md,
*Where it does not close the gap*).

The LP relaxes complementarity: it may charge and discharge a storage at once (a "resistor").
The directions the window limits force (:mod:`facility.optimize.certificates.directions`) take it out of
most steps; where a job start's pre-ramp meets a storage near full it stays, since whether to
discharge first (to make room) and when to switch is a choice no reach argument fixes.

**The MILP.** On the full LP with the forced directions fixed, a binary z_t for each step of
a set S where the LP's optimum still charges and discharges at once:

.. math::
    p^{ch}_t \le M z_t,\qquad p^{dis}_t \le M (1 - z_t),\qquad z_t \in \{0, 1\}\quad (t \in S)

with M = :func:`facility.optimize.certificates.directions.cost_rating_bound_mw` (within the BESS's own
cap): every plan at most as costly as the best one has P̂ ≤ M. Complementarity holds on S; the other steps
keep the LP's freedom, so the MILP is still a relaxation of the problem among those plans,
and HiGHS' dual bound of it (at any point of its search) a lower bound of the realizable
optimum. When its incumbent overlaps on steps outside S, S grows by them and the MILP is
solved again (:data:`MAX_ROUNDS`); an incumbent without overlap is a plan of the problem.

*Measured* (``sizing_start_ramp``, size round 1, 3,600 steps at 0.5 s): the LP with 449 forced
directions overlaps on 120 steps (t = 0-60 s); the MILP's root node reaches 3,162,060 USD in
33 s (from 3,105,753), its incumbent is the plan ``facility size`` returns (3,168,792.8 USD):
gap 2.0 % → 0.21 %. The root LP of the MILP is solved from scratch (HiGHS' branch and bound
takes no starting basis), so the cost grows with the LP's: at 12,000 steps the LP alone did not
finish in 600 s. That is why it is opt-in.

The bound is HiGHS' (its LP tolerances, 1e-7), not a weak-duality certificate like the
interior strategy's.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from facility.optimize.certificates.directions import cost_rating_bound_mw
from facility.optimize.solvers.lp import (HIGHS_OPTIONS, highs_lp, new_highs, objective_scale_exponent,
                                  solve_highs)
from facility.optimize.model.problem import Problem, build_full, with_forced
from facility.optimize.certificates.realize import OVERLAP_NOISE_MW
from facility.optimize.model.result import plan_from_columns
from facility.optimize.solvers.solve import overlap_steps

__all__ = ["MAX_ROUNDS", "MAX_STEPS", "MilpBound", "milp_lower_bound_usd"]

#: MILPs solved at most, each with the overlap steps of the last one's incumbent added.
MAX_ROUNDS = 3
#: Longest horizon it is tried on: the MILP's root LP is solved from scratch, and on the
#: bench's 12,000-step start/stop load HiGHS' LP alone did not finish in 600 s (the direction
#: bound before it, two interior-point solves in the calling process, is not stoppable
#: either). [steps]
MAX_STEPS = 12000


class MilpBound:
    """What :func:`milp_lower_bound_usd` found.

    Attributes
    ----------
    lower_bound_usd : float
        The best bound (the LP's with the forced directions at least; -inf when not even the
        LP solved). [USD]
    plan : dict or None
        An incumbent of the MILP without overlap (a plan of the problem), else None.
    n_binary_steps : int
        Steps with a binary in the last MILP.
    rounds : int
    """

    def __init__(self):
        self.lower_bound_usd = -np.inf
        self.plan = None
        self.n_binary_steps = 0
        self.rounds = 0


def _branch_and_bound(A, c, lb, ub, rlo, rhi, integer: np.ndarray, time_limit_s: float):
    """HiGHS' branch and bound on a MILP (``integer``: the integer columns) within
    ``time_limit_s``; returns (its dual bound, -inf when it has none; an incumbent x or None)."""
    import highspy

    h = new_highs()
    h.setOptionValue("time_limit", float(max(time_limit_s, 1e-3)))
    opts = {**HIGHS_OPTIONS, "user_objective_scale": objective_scale_exponent(c)}
    opts.pop("solver")  # branch and bound picks its own LP solver
    for k, v in opts.items():
        h.setOptionValue(k, v)
    model = highs_lp(sp.csc_matrix(A), c, lb, ub, rlo, rhi)
    kinds = np.full(A.shape[1], highspy.HighsVarType.kContinuous)
    kinds[integer] = highspy.HighsVarType.kInteger
    model.integrality_ = list(kinds)
    h.passModel(model)
    h.run()
    info, sol = h.getInfo(), h.getSolution()
    has_x = bool(sol.value_valid) and info.primal_solution_status == 2  # kSolutionStatusFeasible
    bound = float(info.mip_dual_bound)
    return (bound if np.isfinite(bound) else -np.inf), (np.asarray(sol.col_value, float) if has_x else None)


def milp_lower_bound_usd(pb: Problem, upper_usd: float, forced: dict | None,
                         time_limit_s: float) -> MilpBound:
    """A lower bound of the problem with complementarity among the plans at most as costly as
    ``upper_usd`` (a realizable plan's cost), from branch and bound on the steps where the full
    LP with the ``forced`` directions still overlaps (module text), within ``time_limit_s``.

    Applies to one storage without GPU levers (:func:`facility.optimize.certificates.directions.applies`:
    the caller checks). Returns a :class:`MilpBound`.
    """
    out = MilpBound()
    deadline = time.perf_counter() + float(time_limit_s)
    m = with_forced(build_full(pb), forced)
    A, c, lb, ub, rlo, rhi = m.lp.assemble()
    off = float(m.objective_offset_kusd)
    (name, cols), = m.cols.items()
    s = pb.storages[name]
    ch, dis = np.asarray(cols["ch"]), np.asarray(cols["dis"])
    big_m = min(cost_rating_bound_mw(s, upper_usd), s.max_own_p_mw)
    lp = solve_highs(m.lp, time_limit_s=max(deadline - time.perf_counter(), 1e-3),
                     assembled=(A, c, lb, ub, rlo, rhi))
    if lp.status != "ok":
        return out
    out.lower_bound_usd = 1000.0 * (lp.objective + off)

    def overlap(x: np.ndarray) -> np.ndarray:
        return np.flatnonzero(overlap_steps(m, x, OVERLAP_NOISE_MW)[name])

    # without a finite bound of P̂ there is no big-M: the LP's bound stands
    steps = overlap(lp.x) if np.isfinite(big_m) else np.zeros(0, dtype=np.int64)
    n = A.shape[1]
    while steps.size and out.rounds < MAX_ROUNDS and time.perf_counter() < deadline:
        nb = steps.size
        k = np.arange(nb)
        # p_ch - M z <= 0 and p_dis + M z <= M, one pair of rows per binary step
        rows = np.repeat(np.arange(2 * nb), 2)
        cidx = np.empty(4 * nb, dtype=np.int64)
        vals = np.empty(4 * nb)
        cidx[4 * k], cidx[4 * k + 1], cidx[4 * k + 2], cidx[4 * k + 3] = ch[steps], n + k, dis[steps], n + k
        vals[4 * k], vals[4 * k + 1], vals[4 * k + 2], vals[4 * k + 3] = 1.0, -big_m, 1.0, big_m
        B = sp.csr_matrix((vals, (rows, cidx)), shape=(2 * nb, n + nb))
        AA = sp.vstack([sp.hstack([sp.csr_matrix(A), sp.csr_matrix((A.shape[0], nb))]), B])
        bound, xm = _branch_and_bound(
            AA, np.concatenate([c, np.zeros(nb)]), np.concatenate([lb, np.zeros(nb)]),
            np.concatenate([ub, np.ones(nb)]), np.concatenate([rlo, np.full(2 * nb, -np.inf)]),
            np.concatenate([rhi, np.tile([0.0, big_m], nb)]), np.arange(n, n + nb),
            deadline - time.perf_counter())
        out.rounds += 1
        out.n_binary_steps = nb
        if np.isfinite(bound):
            out.lower_bound_usd = max(out.lower_bound_usd, 1000.0 * (bound + off))
        if xm is None:
            break
        more = overlap(xm[:n])
        if more.size == 0:
            out.plan = plan_from_columns(m, xm[:n].copy())
            break
        steps = np.union1d(steps, more)
    return out
