"""Reference build: the same LP written the textbook way, one Pyomo rule per constraint and step.

This is the baseline of ``benchmarks/bench_sizing.py`` ("naive rule-based Pyomo build + default
HiGHS") and a cross-check of the matrix formulation in the tests: it states every equation of
:mod:`facility.optimize.model.formulation` with scalar rules, so a difference in the optimum would
reveal an error in either. Not used by ``size_storage``.
"""

from __future__ import annotations

import time

import numpy as np

from facility.optimize.model.storage_data import S_PER_H, StorageData
from facility.optimize.model.windows import lag_bounds

__all__ = ["build_naive", "solve_naive"]


def build_naive(p_load_mw, dt_s: float, storages: dict[str, StorageData], spec,
                price_usd_per_mwh: float):
    """Pyomo ``ConcreteModel`` of the sizing LP with rule-based constraints (no history)."""
    import pyomo.environ as pyo

    load = [float(v) for v in np.asarray(p_load_mw, dtype=float).ravel()]
    T = len(load)
    h = dt_s / S_PER_H
    price = price_usd_per_mwh / 1000.0
    m = pyo.ConcreteModel()
    m.T = pyo.RangeSet(0, T - 1)
    m.T1 = pyo.RangeSet(0, T)
    m.S = pyo.Set(initialize=list(storages))
    sd = storages
    fin = lambda v: None if not np.isfinite(v) else v  # noqa: E731
    m.p_rated = pyo.Var(m.S, bounds=lambda _m, s: (sd[s].p_lo, fin(sd[s].p_hi)))
    m.e_rated = pyo.Var(m.S, bounds=lambda _m, s: (sd[s].e_lo, fin(sd[s].e_hi)))
    m.ch = pyo.Var(m.S, m.T, within=pyo.NonNegativeReals)
    m.dis = pyo.Var(m.S, m.T, within=pyo.NonNegativeReals)
    m.e = pyo.Var(m.S, m.T1, within=pyo.NonNegativeReals)

    def pcc(mm, t):
        return load[t] + sum(mm.ch[s, t] - mm.dis[s, t] for s in mm.S)

    # one converter rating for charge plus discharge (the hull of the complementarity,
    # formulation.add_power_limits)
    m.p_lim = pyo.Constraint(m.S, m.T, rule=lambda mm, s, t: mm.ch[s, t] + mm.dis[s, t] <= mm.p_rated[s])
    m.soc = pyo.Constraint(m.S, m.T, rule=lambda mm, s, t: mm.e[s, t + 1] == (
        (1 - sd[s].sigma_per_h * h) * mm.e[s, t] + h * (sd[s].eta_c * mm.ch[s, t] - mm.dis[s, t] / sd[s].eta_d)))
    m.soc0 = pyo.Constraint(m.S, rule=lambda mm, s: mm.e[s, 0] == sd[s].soc0 * mm.e_rated[s])
    m.soc_hi = pyo.Constraint(m.S, m.T1, rule=lambda mm, s, t: mm.e[s, t] <= sd[s].soc_max * mm.e_rated[s])
    m.soc_lo = pyo.Constraint(m.S, m.T1, rule=lambda mm, s, t: mm.e[s, t] >= sd[s].soc_min * mm.e_rated[s])

    def term(mm, s):
        if sd[s].terminal == "free":
            return pyo.Constraint.Skip
        if sd[s].terminal == "equal_initial":
            return mm.e[s, T] == mm.e[s, 0]
        return mm.e[s, T] >= mm.e[s, 0]

    m.terminal = pyo.Constraint(m.S, rule=term)
    # window limits: sliding-window minima with prefix/suffix envelopes over blocks of k
    m.W = pyo.Block(range(len(lag_bounds(spec, dt_s))))
    for i, lb in enumerate(lag_bounds(spec, dt_s)):
        b, k, sg, B = m.W[i], lb.k, (1.0 if lb.direction == "up" else -1.0), lb.bound_mw
        b.g = pyo.Var(m.T)
        b.h = pyo.Var(m.T)
        b.g_le = pyo.Constraint(m.T, rule=lambda bb, t: bb.g[t] <= sg * pcc(m, t))
        b.h_le = pyo.Constraint(m.T, rule=lambda bb, t: bb.h[t] <= sg * pcc(m, t))
        b.g_chain = pyo.Constraint(m.T, rule=lambda bb, t: bb.g[t] <= bb.g[t - 1] if t % k else pyo.Constraint.Skip)
        b.h_chain = pyo.Constraint(m.T, rule=lambda bb, t: bb.h[t] <= bb.h[t + 1]
                                   if (t % k != k - 1 and t + 1 < T) else pyo.Constraint.Skip)
        b.win_g = pyo.Constraint(m.T, rule=lambda bb, t: sg * pcc(m, t) - bb.g[t - 1] <= B if t >= 1 else pyo.Constraint.Skip)
        b.win_h = pyo.Constraint(m.T, rule=lambda bb, t: sg * pcc(m, t) - bb.h[t - k] <= B
                                 if (t >= k and (t - k) % k) else pyo.Constraint.Skip)
    if spec.max_dynamic_range_mw is not None:
        m.top = pyo.Var()
        m.bot = pyo.Var()
        m.top_c = pyo.Constraint(m.T, rule=lambda mm, t: pcc(mm, t) <= mm.top)
        m.bot_c = pyo.Constraint(m.T, rule=lambda mm, t: pcc(mm, t) >= mm.bot)
        m.range_c = pyo.Constraint(expr=m.top - m.bot <= spec.max_dynamic_range_mw)
    m.obj = pyo.Objective(expr=sum(
        sd[s].c_p * m.p_rated[s] + sd[s].c_e * m.e_rated[s]
        + sum(h * price * (1 - sd[s].eta_c) * m.ch[s, t]
              + h * (price * (1 / sd[s].eta_d - 1) + sd[s].c_deg) * m.dis[s, t] for t in m.T)
        for s in m.S))
    return m


def solve_naive(p_load_mw, dt_s, storages, spec, price_usd_per_mwh, *, time_limit_s=3600.0):
    """Build with :func:`build_naive` and solve with ``SolverFactory('appsi_highs')`` defaults.

    Returns
    -------
    dict
        ``objective_kusd``, ``p_rated_mw``, ``e_rated_mwh`` (dicts), ``build_s``, ``solve_s``,
        ``termination``.
    """
    import pyomo.environ as pyo

    t0 = time.perf_counter()
    m = build_naive(p_load_mw, dt_s, storages, spec, price_usd_per_mwh)
    build_s = time.perf_counter() - t0
    opt = pyo.SolverFactory("appsi_highs")
    opt.config.time_limit = time_limit_s
    t0 = time.perf_counter()
    res = opt.solve(m, load_solutions=False)
    solve_s = time.perf_counter() - t0
    term = str(res.solver.termination_condition)
    ok = term == "optimal"
    if ok:
        m.solutions.load_from(res)
    return {"objective_kusd": float(pyo.value(m.obj)) if ok else float("nan"),
            "p_rated_mw": {s: float(pyo.value(m.p_rated[s])) for s in m.S} if ok else {},
            "e_rated_mwh": {s: float(pyo.value(m.e_rated[s])) for s in m.S} if ok else {},
            "build_s": build_s, "solve_s": solve_s, "termination": term}
