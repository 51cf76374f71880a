"""The GPU levers in the LP: their columns, rows, PCC terms and costs (a step of
:func:`facility.optimize.model.formulation.build_model`), and what a solved plan of them is.

The levers themselves — inputs, pieces, the per-piece coefficients — are in
:mod:`facility.optimize.model.levers`; the equations are stated there and in ``docs/formulation.md``.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.storage_data import S_PER_H
from facility.optimize.model.levers import LeverSet, site_response_mw

__all__ = ["add_lever_columns", "lever_plan_from_columns", "lever_delta_mw", "lever_site_mw",
           "lever_cost_kusd", "check_lever_plan"]


def add_lever_columns(m, lv: LeverSet) -> None:
    """Columns, rows, PCC terms and costs of the levers (a step of
    :func:`facility.optimize.model.formulation.build_model`).

    .. math::
        F_j \\in [F_{lo}, F_{hi}],\\quad C_j = C_{lo} + \\sum_i \\delta_{j,i},\\
        \\delta_{j,i} \\in [0, C_{i+1} - C_i],\\quad F_j \\le C_j,

        0 \\le e_{j,t},\\quad e_{j,t} + F_j a^F_{j,t} - C_j a^H_{j,t} \\le H^0_{j,t} - d^F_{j,t}
        \\ (\\text{running } t),\\quad e_{j,t} = 0\\ (\\text{else}),

        P_t \\mathrel{+}= \\kappa_{it} \\Delta P_t + y_t\\ \\text{(lag) or } \\kappa\\,\\Delta P_t,\\quad
        \\Delta P_t = \\sum_j F_j a^F_{j,t} + e_{j,t} + C_j a^C_{j,t}

    (the constants d^F − d^C are in the load: ΔP = b^F + e − r). Objective [k$]: π Δt_h κ Σ_t w_t (F a^F + d^F + e)
    + v n_j/3600 [φ(C_lo) + Σ_i s_i δ_i], s_i the chord slopes of φ [s per unit C], v the
    value of lost time [k$ per GPU-hour], w_t the step weights of a reduced model.
    """
    T = m.n_steps
    lp = m.lp
    w = np.ones(T) if m.op_weight is None else np.asarray(m.op_weight, dtype=float)
    h = m.dt_s / S_PER_H
    pi = m.price_kusd_per_mwh
    kappa = lv.site_per_gpu
    k_pcc = lv.it_per_gpu if lv.lagged else kappa
    delta = []  # (col (T,), coef (T,)) terms of ΔP
    for jl in lv.jobs:
        c: dict = {}
        if jl.floor is not None:
            f = lp.add_columns(f"{jl.name}:floor", 1, jl.floor[0], jl.floor[1],
                               pi * h * kappa * float(np.sum(w * jl.floor_coef_mw)))
            m.objective_offset_kusd += pi * h * kappa * float(np.sum(w * jl.floor_const_mw))
            c["floor"] = f
            delta.append((np.full(T, f[0]), jl.floor_coef_mw))
        if jl.cap is not None:
            g, phi = jl.cap_grid, jl.cap_extra_s
            v = lv.slowdown_usd_per_gpu_h / 1000.0 * jl.n_gpus / S_PER_H  # k$ per s of job time
            slopes = np.diff(phi) / np.maximum(np.diff(g), 1e-15)
            cap = lp.add_columns(f"{jl.name}:cap", 1, g[0], g[-1])
            seg = lp.add_columns(f"{jl.name}:cap_seg", g.size - 1, 0.0, np.diff(g), v * slopes)
            lp.add_row("cap_pieces", np.concatenate([cap, seg]), np.concatenate([[1.0], -np.ones(seg.size)]),
                       g[0], g[0], soft=False)  # C - sum of the segments = C_lo
            m.objective_offset_kusd += v * float(phi[0])
            c["cap"], c["cap_seg"] = cap, seg
            delta.append((np.full(T, cap[0]), jl.cap_coef_mw))
            if jl.floor is not None:
                lp.add_rows("floor_below_cap", [(c["floor"], 1.0), (cap, -1.0)], -np.inf, 0.0, t=-1,
                            soft=False)
        if jl.floor_room_mw is not None:  # a relaxed lever (lever_boxes): more floor burn
            c["floor_room"] = lp.add_columns(f"{jl.name}:floor_room", T, 0.0, jl.floor_room_mw,
                                             pi * h * kappa * w)
            delta.append((c["floor_room"], np.ones(T)))
        if jl.clip_room_mw is not None:  # and more clipping, free
            c["clip_room"] = lp.add_columns(f"{jl.name}:clip_room", T, 0.0, jl.clip_room_mw)
            delta.append((c["clip_room"], -np.ones(T)))
            if "cap" in c and jl.cap[1] > jl.cap[0]:
                # the total clip R(C) is convex and falls with C: below its chord over the box,
                # sum_t room_t <= K (C_b - C), K = (R(C_a) - R(C_b)) / (C_b - C_a)
                k = float(np.sum(jl.clip_room_mw)) / (jl.cap[1] - jl.cap[0])
                lp.add_row("clip_below_chord", np.concatenate([c["clip_room"], c["cap"]]),
                           np.concatenate([np.ones(T), [k]]), -np.inf, k * jl.cap[1], soft=False)
        if jl.burn:
            run = jl.running > 0
            ub = np.where(run, np.inf, 0.0)
            simple = jl.floor is None and jl.cap is None and jl.floor_room_mw is None
            if simple:
                ub = np.where(run, np.maximum(jl.head_const_mw, 0.0), 0.0)
            else:
                ub = np.where(run, np.maximum(_burn_room_mw(jl), 0.0), 0.0)
                ub[ub <= _ROOM_TOL * max(float(np.max(np.abs(jl.head_const_mw), initial=0.0)), 1.0)] = 0.0
            e = lp.add_columns(f"{jl.name}:burn", T, 0.0, ub, pi * h * kappa * w)
            c["burn"] = e
            delta.append((e, np.ones(T)))
            if not simple:
                # the row binds the burn only where it has room; where it has none the burn is
                # fixed at 0 (a bound) and the row is kept only if it still ties F or C
                t = np.flatnonzero(run & ((ub > 0) | _ties_levers(jl)))
                terms = [(e[t], 1.0)]
                if jl.floor is not None:
                    terms.append((np.full(t.size, c["floor"][0]), jl.floor_coef_mw[t]))
                if jl.cap is not None:
                    terms.append((np.full(t.size, c["cap"][0]), -jl.head_coef_mw[t]))
                if "floor_room" in c:
                    terms.append((c["floor_room"][t], 1.0))
                lp.add_rows("burn_headroom", terms, -np.inf, jl.head_const_mw[t] - jl.floor_const_mw[t],
                            t=t, soft=False)
        m.lever_cols[jl.name] = c
    if not delta:
        return
    terms = [(col, k_pcc * np.broadcast_to(coef, (T,))) for col, coef in delta]
    m.pcc_terms += terms
    m.lever_pcc_terms += terms
    if lv.lagged:
        _add_cooling_lag(m, lv, delta)


#: Burn room below this share of the largest headroom is none (the burn column is fixed at 0). [-]
_ROOM_TOL = 1e-12


def _burn_room_mw(jl) -> np.ndarray:
    """Largest burn the headroom row allows per step over the job's floor and cap boxes: the
    row e_t + F a^F_t − C a^H_t + room_t ≤ h_t − d^F_t at the F and C that loosen it most and
    no relaxed floor room (an implied upper bound of e_t: where it is 0 the row alone would
    squeeze the column to zero, a feasible set without interior for the interior point). [MW]"""
    room = jl.head_const_mw - jl.floor_const_mw
    if jl.floor is not None:
        room = room - np.minimum(jl.floor[0] * jl.floor_coef_mw, jl.floor[1] * jl.floor_coef_mw)
    if jl.cap is not None:
        room = room + np.maximum(jl.cap[0] * jl.head_coef_mw, jl.cap[1] * jl.head_coef_mw)
    return room


def _ties_levers(jl) -> np.ndarray:
    """Steps where the headroom row has a floor or cap coefficient (it constrains F or C even
    with the burn at 0)."""
    tie = np.zeros(jl.head_const_mw.shape, bool)
    if jl.floor is not None:
        tie |= jl.floor_coef_mw != 0
    if jl.cap is not None:
        tie |= jl.head_coef_mw != 0
    if jl.floor_room_mw is not None:
        tie |= np.asarray(jl.floor_room_mw) > 0
    return tie


def _add_cooling_lag(m, lv: LeverSet, delta: list) -> None:
    """Cooling state y_t of the levers' change, as :func:`facility.workload.site.cooling_lag`:
    y_t − a y_{t−1} − (1 − a) x_t = 0 (t ≥ 1), y_0 − (1 − a) x_0 − (a / n_0) Σ_{t<n_0} x_t = 0,
    x_t = (pue − 1) κ_it ΔP_t."""
    T, lp = m.n_steps, m.lp
    a = float(np.exp(-m.dt_s / lv.cooling_tau_s))
    kc = lv.cooling_per_gpu
    y = lp.add_columns("cooling_lag", T, -np.inf, np.inf)
    t = np.arange(1, T)
    terms = [(y[t], 1.0), (y[t - 1], -a)] + [(col[t], -(1 - a) * kc * np.broadcast_to(cf, (T,))[t])
                                              for col, cf in delta]
    lp.add_rows("cooling_lag", terms, 0.0, 0.0, t=t, soft=False)
    n0 = max(1, min(T, int(np.ceil(5.0 * lv.cooling_tau_s / m.dt_s))))
    cols, vals = [y[:1]], [np.ones(1)]
    for col, cf in delta:
        cf = np.broadcast_to(cf, (T,)).astype(float)
        v = -(a / n0) * kc * cf[:n0]
        v = v.copy()
        v[0] += -(1 - a) * kc * cf[0]
        cols.append(col[:n0])
        vals.append(v)
    lp.add_row("cooling_lag", np.concatenate(cols), np.concatenate(vals), 0.0, 0.0, t=0, soft=False)
    m.lever_cols["_cooling"] = {"y": y}
    m.pcc_terms.append((y, np.ones(T)))
    m.lever_pcc_terms.append((y, np.ones(T)))


def lever_plan_from_columns(m, x: np.ndarray) -> dict:
    """Lever decisions of a solved model: ``{job: {"floor": F | None, "cap": C | None,
    "burn": e (T,) | None}}``. A floor that reaches no step of its piece (its coefficient
    0 on every step: every value of its range is the same plan at the same cost) is given at
    its least value, as a simplex vertex would (an interior point returns the middle)."""
    out = {}
    idle_floor = {jl.name: jl.floor[0] for jl in (m.levers.jobs if m.levers is not None else ())
                  if jl.floor is not None and not np.any(jl.floor_coef_mw)}
    for name, c in m.lever_cols.items():
        if name.startswith("_"):
            continue
        out[name] = {"floor": (idle_floor[name] if name in idle_floor else float(x[c["floor"][0]]))
                     if "floor" in c else None,
                     "cap": float(x[c["cap"][0]]) if "cap" in c else None,
                     "burn": np.maximum(x[c["burn"]], 0.0) if "burn" in c else None}
        for k in ("floor_room", "clip_room"):  # a relaxed lever's (a bound, not a plan)
            if k in c:
                out[name][k] = np.maximum(x[c[k]], 0.0)
    return out


def lever_delta_mw(lv: LeverSet, plan: dict) -> dict:
    """Per job the GPU power change of a lever plan: ``{job: (floor_burn, burn, curtail)}``
    (T,) each [MW GPU side]; the constants of the piece included."""
    out = {}
    for jl in lv.jobs:
        d = plan.get(jl.name, {})
        T = jl.floor_coef_mw.size
        fb = (d["floor"] * jl.floor_coef_mw + jl.floor_const_mw) if d.get("floor") is not None else np.zeros(T)
        cu = (jl.cap_const_mw - d["cap"] * jl.cap_coef_mw) if d.get("cap") is not None else np.zeros(T)
        b = d["burn"] if d.get("burn") is not None else np.zeros(T)
        fb = np.maximum(fb, 0.0) + d.get("floor_room", 0.0)
        cu = np.maximum(cu, 0.0) + d.get("clip_room", 0.0)
        out[jl.name] = (fb, np.asarray(b, dtype=float), cu)
    return out


def lever_site_mw(lv: LeverSet, plan: dict, dt_s: float) -> np.ndarray:
    """Site power change of the plan's variable parts (F a^F + e + C a^C; the piece's
    constants are in the problem's load), through the site model. [MW]"""
    T = lv.jobs[0].floor_coef_mw.size if lv.jobs else 0
    var = np.zeros(T)
    for jl in lv.jobs:
        d = plan.get(jl.name, {})
        if d.get("floor") is not None:
            var += d["floor"] * jl.floor_coef_mw
        if d.get("cap") is not None:
            var += d["cap"] * jl.cap_coef_mw
        if d.get("burn") is not None:
            var += d["burn"]
        var += d.get("floor_room", 0.0) - d.get("clip_room", 0.0)
    if lv.lagged:
        return site_response_mw(var, dt_s, lv.it_per_gpu, lv.cooling_per_gpu, lv.cooling_tau_s)
    return lv.site_per_gpu * var


def lever_cost_kusd(lv: LeverSet, plan: dict, dt_s: float, price_usd_per_mwh: float) -> dict:
    """Cost of a lever plan over the horizon [k$], as the LP prices it:
    ``{"burn": energy of floor burn + burn, "slowdown": chord value of the cap's slowdown}``."""
    h = dt_s / S_PER_H
    energy = slow = 0.0
    for jl in lv.jobs:
        fb, b, _ = lever_delta_mw(lv, plan)[jl.name]
        energy += price_usd_per_mwh / 1000.0 * h * lv.site_per_gpu * float(np.sum(fb + b))
        C = plan.get(jl.name, {}).get("cap")
        if C is not None and jl.cap_grid.size:
            slow += (lv.slowdown_usd_per_gpu_h / 1000.0 * jl.n_gpus / S_PER_H
                     * float(np.interp(C, jl.cap_grid, jl.cap_extra_s)))
    return {"burn": energy, "slowdown": slow}


def check_lever_plan(lv: LeverSet, plan: dict, tol_mw: float = 1e-5) -> str | None:
    """Bounds of a lever plan (ranges, burn within the headroom on running steps); None if met."""
    for jl in lv.jobs:
        d = plan.get(jl.name, {})
        F, C, b = d.get("floor"), d.get("cap"), d.get("burn")
        if F is not None and not jl.floor[0] - 1e-9 <= F <= jl.floor[1] + 1e-9:
            return f"{jl.name}: floor outside its piece"
        if C is not None and not jl.cap[0] - 1e-9 <= C <= jl.cap[1] + 1e-9:
            return f"{jl.name}: cap outside its piece"
        for k, room in (("floor_room", jl.floor_room_mw), ("clip_room", jl.clip_room_mw)):
            if k in d and (room is None or np.any(d[k] < -tol_mw) or np.any(d[k] > room + tol_mw)):
                return f"{jl.name}: {k} outside [0, its relaxed piece's room]"
        if b is not None:
            fb, _, _ = lever_delta_mw(lv, plan)[jl.name]
            head = jl.head_const_mw + (C * jl.head_coef_mw if C is not None else 0.0)
            run = jl.running > 0
            if b.min() < -tol_mw or np.any(b[~run] > tol_mw):
                return f"{jl.name}: burn negative or outside the running steps"
            if np.any((b + fb - head)[run] > tol_mw):
                return f"{jl.name}: burn above the headroom"
    return None
