"""Relaxations of the GPU levers over many pieces at once (*boxes*): what
:mod:`facility.optimize.strategies.lever_search` bounds.

The levers, their pieces and the exact per-piece coefficients are in
:mod:`facility.optimize.model.levers`; the columns and rows in :mod:`facility.optimize.model.lever_columns`.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.levers import (
    _TOL,
    JobInput,
    JobLever,
    LeverInputs,
    LeverSet,
    _job_piece,
    _label,
    _lever_set,
    capped_power_sums,
    no_cap_frac,
)

__all__ = ["box_levers"]


def box_levers(inp: LeverInputs, per_job: list, box: tuple, dt_s: float,
               slowdown_usd_per_gpu_h: float = 0.0) -> tuple[LeverSet, np.ndarray] | None:
    """The levers of a *box* of piece combinations: per job a run of consecutive floor pieces
    and a run of cap pieces, ``box[j] = ((f0, f1), (c0, c1))`` (indices into
    :func:`piece_lists`, inclusive). A box of one combination is that piece, exact; a wider
    one is a relaxation of all its pieces at once (None when the floor lies above the cap on
    all of it).

    *Relaxation* of floors in [F_a, F_b] and caps in [C_a, C_b]: the floor is fixed at F_a and
    each step may burn up to b^F_t(F_b) − b^F_t(F_a) more, at the energy price; the cap clips
    c_t(C_b) and each step may clip up to c_t(C_a) − c_t(C_b) more, free; the slowdown is
    φ(C_b), exactly; the burn's headroom is that under C_b. With b^F_t(F) = Σ_g n_g
    max(F c − p_g(t), 0) increasing and c_t(C) = Σ_g n_g max(p_g(t) − C c, 0) decreasing,
    every combination of the box meets these rows with its own F, C and burn at no higher
    cost (its floor burn and clipping lie in the step boxes, its slowdown chords lie above
    φ(C) ≥ φ(C_b), its headroom is below C_b's, F ≤ C gives F_a ≤ C): the relaxation's
    optimum bounds the box's cheapest piece from below.
    """
    jobs, labels = [], []
    for (j, pf, pc), ((f0, f1), (c0, c1)) in zip(per_job, box):
        fr = None if pf[0] is None else (pf[f0][0], pf[f1][1])
        # the no-cap choice (a last None) relaxes as a cap at the job's highest power
        cr = None if pc[0] is None or pc[c0] is None else (
            pc[c0][0], no_cap_frac(j) if pc[c1] is None else pc[c1][1])
        if fr is not None and cr is not None and fr[0] > cr[1] + _TOL:
            return None
        if f0 == f1 and c0 == c1:
            fp, cp = pf[f0], pc[c0]
            if fp is not None and cp is not None and fp[0] > cp[1] + _TOL:
                return None
            jobs.append(_job_piece(j, fp, cp, dt_s))
            labels.append(_label(j.name, fp, cp))
        else:
            jobs.append(_relaxed_piece(j, fr, cr, dt_s))
            labels.append(_label(j.name, fr, cr) + " (relaxed)")
    return _lever_set(inp, jobs, slowdown_usd_per_gpu_h, labels)


def _relaxed_piece(j: JobInput, fr, cr, dt_s: float) -> JobLever:
    """One job's relaxed lever over floors ``fr`` and caps ``cr`` (see :func:`box_levers`)."""
    c = j.tdp_w
    n = j.n_gpus.astype(float)[:, None] / 1e6  # MW per W
    p = j.p_gpu_w
    z = np.zeros(p.shape[1])
    run = j.running.any(axis=0)
    floor = f_room = None
    f_const = c_const = z
    if fr is not None:
        burn_at = lambda F: (n * np.maximum(F * c - p, 0.0) * j.held).sum(axis=0)  # noqa: E731
        f_const = burn_at(fr[0])
        f_room = np.maximum(burn_at(fr[1]) - f_const, 0.0)
        floor = (fr[0], fr[0])
    cap = c_room = None
    grid = extra = np.zeros(0)
    ceiling = j.ceiling_w
    if cr is not None:
        clip_at = lambda C: (n * np.maximum(p - C * c, 0.0)).sum(axis=0)  # noqa: E731
        c_const = clip_at(cr[1])
        c_room = np.maximum(clip_at(cr[0]) - c_const, 0.0)
        cap = cr
        # the slowdown below φ on the box: the upper envelope of tangents of the convex φ
        # (:func:`slowdown_below`); the clip room ties to C through one row (lever_columns:
        # total clip below R's chord over the box)
        grid, extra = slowdown_below(j, cr, dt_s)
        ceiling = cr[1] * c
    head = (n * np.maximum(ceiling - p, 0.0) * j.running).sum(axis=0)
    return JobLever(j.name, float(j.n_gpus.sum()), j.burn, floor, cap, z, f_const, z, c_const,
                    head, z, run.astype(float), grid, extra, (), f_room, c_room)


#: Tangent points of φ per relaxed cap box (:func:`slowdown_below`), evenly over the box.
N_TANGENTS = 12


def _phi_and_subgradient(j: JobInput, C: float, dt_s: float) -> tuple[float, float]:
    """φ(C) of :func:`cap_extra_s` and a subgradient of it [s, s per unit C]: with the capped
    set p ≥ C c, φ(C) = Δt max(0, max_g [a_g (C c)^{-κ} − n_g]), a_g = Σ p^κ over the group's
    capped compute steps; the active group's derivative −κ Δt a_g c^{-κ} C^{-κ-1} (0 where
    φ = 0). Each step's term max(0, (p / C c)^κ − 1) is convex in C and is 0 where it is
    not capped, so φ is convex and the capped set with equality gives a left derivative, a
    subgradient."""
    c, e = j.tdp_w, j.perf_exponent
    a, cnt = capped_power_sums(j, j.p_gpu_w >= C * c - _TOL * c)
    per = a * (C * c) ** (-e) - cnt
    if per.size == 0 or per.max() <= 0.0:
        return 0.0, 0.0
    g = int(np.argmax(per))
    return dt_s * float(per[g]), -e * dt_s * float(a[g]) * c ** (-e) * C ** (-e - 1.0)


def slowdown_below(j: JobInput, cr: tuple[float, float], dt_s: float) -> tuple[np.ndarray, np.ndarray]:
    """A convex piecewise linear ψ ≤ φ on caps ``cr`` = [C_a, C_b]: the upper envelope of the
    tangents ℓ_i(C) = φ(t_i) + s_i (C − t_i) at :data:`N_TANGENTS` points t_i over the box
    (s_i a subgradient, :func:`_phi_and_subgradient`) and of 0. Each tangent of a convex
    function lies below it everywhere, so ψ ≤ φ ≤ every piece's chords of φ. Returned as
    ψ's values at its breakpoints (the box ends and the tangents' pairwise intersections in
    between: the envelope bends nowhere else), so its interpolation is ψ itself. [unit C], [s]

    (A single line through φ(C_b) with φ's slope there, as before, priced a box that reaches
    'no cap' almost nothing for clipping: φ is flat at C_b and steep at C_a.)"""
    lines = [(0.0, 0.0)]  # (slope, intercept)
    for t in np.linspace(cr[0], cr[1], N_TANGENTS):
        v, sl = _phi_and_subgradient(j, float(t), dt_s)
        lines.append((sl, v - sl * t))
    sl = np.array([ln[0] for ln in lines])
    b0 = np.array([ln[1] for ln in lines])
    pts = [cr[0], cr[1]]
    for i in range(len(lines)):
        for k in range(i + 1, len(lines)):
            if abs(sl[i] - sl[k]) > 1e-15:
                x = (b0[k] - b0[i]) / (sl[i] - sl[k])
                if cr[0] < x < cr[1]:
                    pts.append(float(x))
    grid = np.unique(np.round(np.asarray(pts), 12))
    grid = grid[(grid >= cr[0]) & (grid <= cr[1])]
    psi = np.max(sl[:, None] * grid[None, :] + b0[:, None], axis=0)
    return grid, psi

