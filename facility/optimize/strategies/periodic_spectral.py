"""The periodic reduction's spectral rows: band peak limits of the full horizon written in the
restriction's and the relaxation's columns, and the relaxation's Lagrangian lower bound.

See :mod:`facility.optimize.strategies.periodic` (the reduction and its proof) and
``docs/formulation.md`` (Periodic steady-state reduction, band peak limits).
"""

from __future__ import annotations

import numpy as np

from facility.optimize.solvers.lp import extend_highs, resolve_with_cost
from facility.optimize.model.result import gap_frac, plan_pcc_mw
from facility.optimize.solvers.solve import solve_lp
from facility.optimize.model.spectral import LazySpectral, block_average_phasor, full_spectral, tiled_phasor

__all__ = ["upper_spectral", "lower_spectral", "solve_lower_bound"]


def upper_spectral(pb, red, expand_plan):
    """Lazy spectral rows of the restriction (:func:`facility.optimize.strategies.periodic.build_upper`):
    the full-horizon DFT in its columns; ``expand_plan(model, x, red)`` gives the full-horizon
    storage and lever plans of a solution."""

    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    if lazy is None:
        return None
    n = pb.n_steps
    lazy.phasor = tiled_phasor(red.upper_index(n), red.a, red.stretch.period, red.r, n)

    def pcc_full(m, x):
        plan, lever_plan = expand_plan(m, x, red)
        return plan_pcc_mw(pb.load_mw, plan, pb.dt_s, pb.levers, lever_plan)

    return LazySpectral(lazy.limits, lazy.const_dft, lazy.phasor, pcc_full)


def lower_spectral(pb, red):
    """Spectral rows of the relaxation: the bins where every block has the same phase
    (k K / N whole), on which X_k = explicit parts + B x̄'s (see the module docstring)."""
    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    if lazy is None:
        return None
    n, K = pb.n_steps, red.block
    ph = block_average_phasor(red.lower_index(n), red.a, K, red.n_blocks, n)
    return LazySpectral(lazy.limits, lazy.const_dft, ph, None,
                        allowed=lambda k: (k * K) % n == 0)


#: A cold Lagrangian solve gets this many times the restriction's solve time (at least
#: :data:`MIN_LAGRANGIAN_S`) before the plain relaxation and a warm Lagrangian take over. [-]
LAGRANGIAN_BUDGET_FACTOR = 3.0
MIN_LAGRANGIAN_S = 10.0


def solve_lower_bound(ml, cand: list, optimize, *, upper_usd: float | None = None,
                      upper_solve_s: float | None = None):
    """Solve the relaxation; with spectral rows carried from the restriction, the tightest of
    three lower bounds that is needed to reach ``optimize.max_gap_frac`` against
    ``upper_usd`` (the restriction's optimum).

    Returns (solution, lower bound [USD], solver time [s]); the solution is the last one
    solved to optimality (status "failed" when none was).

    Every value returned is a lower bound of the relaxation *with* the carried rows
    a_r x ≤ b_r, hence of the full problem:

    1. *Lagrangian*: the rows enter the cost with the restriction's multipliers λ_r ≥ 0;
       min_x c x + Σ λ_r (a_r x − b_r) over the relaxation's other rows is ≤ its optimum
       with the rows (weak duality) for any λ ≥ 0, and the LP keeps no dense row. Tried cold
       first, within ``LAGRANGIAN_BUDGET_FACTOR`` times the restriction's solve time
       (with :data:`facility.optimize.solvers.lp.HIGHS_OPTIONS`, scaling by the largest value and the
       objective scaled: 1.7–2.6 s on the benchmark's mix case; with HiGHS' default
       equilibration and no objective scaling 4.4–4.7 s there, 72–119 s on ieso_2026 at
       5 USD/MWh in the mix study, where it was left for step 2).
    2. *Plain relaxation* (the rows dropped: fewer constraints, a smaller optimum), then,
       when its gap is above ``max_gap_frac``, the Lagrangian cost set on its optimal basis
       and solved warm (ieso_2026: 15 s + 26 s); the larger of the two bounds is kept.
    3. *Cutting planes*, if still above: the carried rows the solution violates are added
       and the relaxation solved again warm, until none is violated (any subset of them
       keeps a relaxation).
    """
    t_s = 0.0
    off = ml.objective_offset_kusd
    lam = [(c, v, r, l) for _, c, v, r, l in cand if l > 0]
    cost0 = np.concatenate(ml.lp.cost)
    plain = lambda x: 1000.0 * (float(cost0 @ x) + off)  # noqa: E731
    lagr = lambda x: plain(x) + 1000.0 * sum(l * (v @ x[c] - r) for c, v, r, l in lam)  # noqa: E731
    tight = lambda lo: upper_usd is not None and gap_frac(upper_usd, lo) <= optimize.max_gap_frac  # noqa: E731
    if lam:
        budget = None
        if upper_solve_s is not None:
            budget = min(optimize.time_limit_s,
                         max(MIN_LAGRANGIAN_S, LAGRANGIAN_BUDGET_FACTOR * upper_solve_s))
        ml.lp.extra_cost = [(c, l * v) for c, v, r, l in lam]
        sol, _ = solve_lp(ml.lp, optimize, time_limit_s=budget)
        t_s += sol.solve_s
        ml.lp.extra_cost = []
        if sol.status == "ok":
            lower = lagr(sol.x)
            if upper_usd is None or tight(lower) or not cand:
                return sol, lower, t_s
            lower_sol = (sol, lower)
        else:
            lower_sol = None
    sol, _ = solve_lp(ml.lp, optimize)
    t_s += sol.solve_s
    if sol.status != "ok":
        return sol, np.nan, t_s
    lower = plain(sol.x)
    if lam and lower_sol is not None:
        lower = max(lower, lower_sol[1])
    elif lam and sol.handle is not None and not tight(lower):
        c1 = cost0.copy()
        for c, v, _, l in lam:
            np.add.at(c1, c, l * v)
        idx = np.flatnonzero(c1 != cost0)
        warm = resolve_with_cost(sol, idx, c1[idx])
        t_s += warm.solve_s
        if warm.status == "ok":
            lower = max(lower, lagr(warm.x))
        warm.handle.changeColsCost(idx.size, idx.astype(np.int32), cost0[idx])  # back to plain
        sol = warm if warm.status == "ok" else sol
    while cand and not tight(lower):
        act = np.array([v @ sol.x[c] - r for _, c, v, r, _ in cand])
        bad = act > 1e-9 * max(1.0, float(np.max(np.abs([row[3] for row in cand]))))
        if not bad.any():
            break
        mark = ml.lp.mark()
        for (fam, c, v, r, _), b in zip(cand, bad):
            if b:
                ml.lp.add_row(fam, c, v, -np.inf, r, soft=True)
        cand = [row for row, b in zip(cand, bad) if not b]
        nxt = extend_highs(sol, ml.lp, mark) if sol.handle is not None else solve_lp(ml.lp, optimize)[0]
        t_s += nxt.solve_s
        if nxt.status != "ok":
            break  # the bound so far stands
        sol = nxt
        lower = max(lower, plain(sol.x))
    return sol, lower, t_s
