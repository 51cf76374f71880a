"""The periodic reduction's spectral rows: band peak limits of the full horizon written in the
restriction's and the relaxation's columns, and the relaxation's Lagrangian lower bound.

See :mod:`facility.optimize.periodic` (the reduction and its proof) and
``docs/formulation.md`` (Periodic steady-state reduction, band peak limits).
"""

from __future__ import annotations

import numpy as np

from facility.optimize.lever_columns import lever_site_mw
from facility.optimize.lp import extend_highs
from facility.optimize.solve import solve_lp
from facility.optimize.spectral import LazySpectral, block_average_phasor, full_spectral, tiled_phasor

__all__ = ["upper_spectral", "lower_spectral", "solve_lower_bound", "LOWER_OPTIONS"]


def upper_spectral(pb, red, expand_plan):
    """Lazy spectral rows of the restriction (:func:`facility.optimize.periodic.build_upper`):
    the full-horizon DFT in its columns; ``expand_plan(model, x, red)`` gives the full-horizon
    storage and lever plans of a solution."""

    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    if lazy is None:
        return None
    n = pb.n_steps
    lazy.phasor = tiled_phasor(red.upper_index(n), red.a, red.stretch.period, red.r, n)

    def pcc_full(m, x):
        plan, lever_plan = expand_plan(m, x, red)
        p = pb.load_mw.copy()
        for _, _, ch, dis, _ in plan.values():
            p += ch - dis
        if pb.levers is not None:
            p += lever_site_mw(pb.levers, lever_plan, pb.dt_s)
        return p

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


#: HiGHS options of the Lagrangian relaxation (set by measurement, see _solve_lower)
LOWER_OPTIONS = None


def solve_lower_bound(ml, cand: list, optimize):
    """Solve the relaxation; with spectral rows carried from the restriction, a Lagrangian
    bound first, then cutting planes if it is not tight enough.

    Returns (solution, lower bound [USD], solver time [s]).

    *Lagrangian*: the carried rows a_r x ≤ b_r enter the cost with the restriction's
    multipliers λ_r ≥ 0: min_x c x + Σ λ_r (a_r x − b_r) over the relaxation's other rows is a
    lower bound of the relaxation with the rows (weak duality) for any λ ≥ 0, and the LP keeps
    no dense row (measured 5-10x faster). If its gap to the restriction is above
    ``max_gap_frac``: *cutting planes* — the rows the relaxation violates are added and it is
    solved again warm, until none is (any subset of them keeps a relaxation).
    """
    t_s = 0.0
    off = ml.objective_offset_kusd
    lam = [(c, v, r, l) for _, c, v, r, l in cand if l > 0]
    if lam:
        ml.lp.extra_cost = [(c, l * v) for c, v, r, l in lam]
        sol, _ = solve_lp(ml.lp, optimize, options=LOWER_OPTIONS)
        t_s += sol.solve_s
        ml.lp.extra_cost = []
        if sol.status == "ok":
            lag = 1000.0 * (float(np.concatenate(ml.lp.cost) @ sol.x) + off
                            + sum(l * (v @ sol.x[c] - r) for c, v, r, l in lam))
            return sol, lag, t_s
    sol, _ = solve_lp(ml.lp, optimize)
    t_s += sol.solve_s
    while cand and sol.status == "ok":
        act = np.array([v @ sol.x[c] - r for _, c, v, r, _ in cand])
        bad = act > 1e-9 * max(1.0, float(np.max(np.abs([row[3] for row in cand]))))
        if not bad.any():
            break
        mark = ml.lp.mark()
        for (fam, c, v, r, _), b in zip(cand, bad):
            if b:
                ml.lp.add_row(fam, c, v, -np.inf, r, soft=True)
        cand = [row for row, b in zip(cand, bad) if not b]
        sol = extend_highs(sol, ml.lp, mark) if sol.handle is not None else solve_lp(ml.lp, optimize)[0]
        t_s += sol.solve_s
    lower = 1000.0 * (float(np.concatenate(ml.lp.cost) @ sol.x) + off) if sol.status == "ok" else np.nan
    return sol, lower, t_s
