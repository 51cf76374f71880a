"""Relaxations of the GPU levers over many pieces at once (*boxes*): what
:mod:`facility.optimize.lever_search` bounds.

The levers, their pieces and the exact per-piece coefficients are in
:mod:`facility.optimize.levers`; the columns and rows in :mod:`facility.optimize.lever_columns`.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.levers import (
    _TOL,
    JobInput,
    JobLever,
    LeverInputs,
    LeverSet,
    _job_piece,
    _label,
    _lever_set,
    cap_extra_s,
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
        # the slowdown below a line through φ(C_b) with the slope of φ's chord just above C_b
        # (φ is convex in C: that slope is at least φ' there, so the line lies below φ on the
        # box); the clip room ties to C through one row (lever_columns: total clip below R's
        # chord over the box)
        phi_at = lambda C: float(cap_extra_s(j, np.array([C]), p >= C * c - _TOL * c, dt_s)[0])  # noqa: E731
        phi_b, h = phi_at(cr[1]), 1e-6
        slope = min((phi_at(cr[1] + h) - phi_b) / h, 0.0)
        grid = np.array([cr[0], cr[1]])
        extra = np.array([phi_b + slope * (cr[0] - cr[1]), phi_b])
        ceiling = cr[1] * c
    head = (n * np.maximum(ceiling - p, 0.0) * j.running).sum(axis=0)
    return JobLever(j.name, float(j.n_gpus.sum()), j.burn, floor, cap, z, f_const, z, c_const,
                    head, z, run.astype(float), grid, extra, (), f_room, c_room)
