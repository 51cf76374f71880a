"""Strategy ``full``: one LP over the whole horizon (exact; the reference of the others)."""

from __future__ import annotations

import time

import numpy as np

from facility.errors import InfeasibleError, SolverTimeLimit
from facility.optimize.certificates.fallback import best_effort
from facility.optimize.model.lever_columns import lever_plan_from_columns
from facility.optimize.solvers.lp import resolve_same_matrix, solve_highs
from facility.optimize.model.problem import Problem, build_full, with_forced
from facility.optimize.model.result import SizingResult, pack_result, plan_from_columns
from facility.optimize.solvers.solve import overlap_steps, solve_model
from facility.optimize.model.spectral import full_spectral

__all__ = ["solve_full", "lp_bound_usd", "LpBounds"]


def solve_full(pb: Problem, forced: dict | None = None) -> SizingResult:
    """Solve the full LP (raises :class:`facility.errors.InfeasibleError` with a diagnosis).

    ``forced``: directions fixed beforehand (:func:`~facility.optimize.model.problem.with_forced`); the LP optimum
    (``relaxed_objective_usd``, ``lower_bound_usd``) then bounds the problem with
    complementarity among the plans at most as costly as the one they come from.

    Band peak limits become lazy rows on the horizon's FFT bins
    (:func:`facility.optimize.model.spectral.full_spectral`).

    When the solver stops at ``optimize.time_limit_s`` (or the complementarity repair cannot
    remove every overlap), the best verified plan with its proven gap is returned instead
    (:func:`facility.optimize.certificates.fallback.best_effort`, ``info.status = "gap"``, a warning);
    :class:`~facility.errors.SolverTimeLimit` (exit 3) only when no plan passes the
    check. Slack mode (``allow_slack``) keeps raising: its callers have their own fallback.
    """
    t0 = time.perf_counter()
    m = with_forced(build_full(pb), forced)
    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    build_s = time.perf_counter() - t0
    try:
        x, info = solve_model(m, lambda: with_forced(build_full(pb), forced), pb.optimize, pb.dt_s,
                              build_s, spectral=lazy)
    except SolverTimeLimit as stop:
        if pb.optimize.allow_slack:
            raise
        return best_effort(pb, stop, build_s=build_s, solve_s=time.perf_counter() - t0 - build_s)
    if not pb.optimize.allow_slack and any(b.any() for b in overlap_steps(m, x).values()):
        # the repair failed (its warning is out): the LP optimum is still a lower bound
        stop = SolverTimeLimit("the complementarity repair left steps that charge and discharge "
                               "at once.", {"termination": info.termination},
                               lower_bound_usd=info.relaxed_objective_usd)
        try:
            return best_effort(pb, stop, build_s=build_s, solve_s=info.solve_s,
                               reason="the complementarity repair could not remove every "
                                      "simultaneous charge and discharge")
        except SolverTimeLimit:
            pass  # no realizable plan either: the LP's plan, as the warning says
    return pack_result(pb.load_mw, pb.storages, plan_from_columns(m, x), info,
                       levers=pb.levers, lever_plan=lever_plan_from_columns(m, x), dt_s=pb.dt_s)


def lp_bound_usd(pb: Problem) -> float:
    """The full LP's optimum without the complementarity repair, band rows added lazily as in
    :func:`solve_full` (a subset of them keeps a relaxation): a lower bound of the problem. [USD]

    Raises :class:`facility.errors.InfeasibleError` when the LP is infeasible and
    :class:`~facility.errors.SolverTimeLimit` at the time limit."""
    t0 = time.perf_counter()
    m = build_full(pb)
    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    _, info = solve_model(m, lambda: build_full(pb), pb.optimize, pb.dt_s, time.perf_counter() - t0,
                          spectral=lazy, repair=False)
    return info.relaxed_objective_usd


class LpBounds:
    """:func:`lp_bound_usd` for a sequence of LPs that share one matrix (the relaxed boxes of
    :mod:`facility.optimize.strategies.lever_search` differ in bounds and costs only): each solved warm
    from the last one's basis. Measured on a jittered 5-min load at 0.1 s with 44 cap pieces:
    a box 37-45 s cold, 0.1-18 s warm. With band limits (lazy rows) every LP is solved cold."""

    def __init__(self):
        self._last = None

    def __call__(self, pb: Problem, upper_usd: float = np.inf) -> float:
        """A lower bound of the problem's LP (its optimum; ``upper_usd`` is not needed). [USD]"""
        if full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac) is not None:
            return lp_bound_usd(pb)
        m = build_full(pb)
        arrays = m.lp.assemble()
        limit = float(pb.optimize.time_limit_s)
        sol = None if self._last is None else resolve_same_matrix(self._last, arrays, time_limit_s=limit)
        if sol is None:
            sol = solve_highs(m.lp, time_limit_s=limit, assembled=arrays)
            sol.matrix = arrays[0]
        if sol.status != "ok":
            self._last = None
            if "infeasible" in sol.termination.lower():
                raise InfeasibleError(f"the relaxed LP is infeasible ({sol.termination})")
            raise SolverTimeLimit(f"the relaxed LP stopped: {sol.termination}",
                                  {"termination": sol.termination})
        self._last = sol
        return 1000.0 * (sol.objective + m.objective_offset_kusd)
