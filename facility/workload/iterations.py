"""Synchronous training iterations of one job, per rack group, on the step grid.

Model (after Ko & Zhu, arXiv:2508.16457, with the symbols of their parameter table):

- iteration ``i`` lasts ``T_i = period_s * (1 + xi_i)``, ``xi_i ~ N(0, jitter_frac^2)``
  (clipped so that ``T_i >= 0.1 * period_s``); boundaries ``B_i`` are the cumulative sum;
- its compute phase is the first ``r_i * T_i``, ``r_i = compute_frac + N(0,
  compute_frac_jitter^2)`` clipped to [0.02, 0.98]; the communication phase is the rest;
- the communication-phase level is ``p_low_frac + N(0, drop_jitter_frac^2)`` per iteration
  (the depth of the drop, shared by the whole job);
- each rack group adds its own Gaussian level noise per phase (``noise_high_frac`` in compute,
  ``noise_low_frac`` in communication), a phase offset ``N(0, phase_offset_s^2)`` (skew of the
  collective), and, for a share ``straggler_frac`` of the groups, an extra delay
  ``straggler_delay_s`` of its whole waveform;
- levels are clipped to ``[0, max(p_high_frac, EDP)]`` of TDP, where EDP is the GPU model's
  ``min_edp_frac`` (H100: 1.0, GB200/B200: 1.1): noise never drives a group above the power
  the GPU can draw.

Iterations are counted from the job's ``start_s``. Only the iterations that overlap the
horizon are drawn: a job started before t = 0 begins its random sequence at the iteration
boundary ``k * period_s`` just before the horizon (the random history before it does not
matter). With every irregularity at 0 (``square``), ``B_i = i * period_s`` exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facility.workload.archetypes import JobParams
from facility.workload.timeline import step_index

__all__ = ["IterationPlan", "draw_iteration_plan", "segment_starts_s", "iteration_wave"]

_MIN_PERIOD_FRAC = 0.1


@dataclass
class IterationPlan:
    """The random draws of one job: iteration boundaries and per-group levels and offsets.

    Attributes
    ----------
    start_s : float
        Origin of the iteration clock (the job's ``start_s``). [s]
    bounds_s : numpy.ndarray, shape (K+1,)
        Iteration boundaries on the iteration clock, ``bounds_s[k+1] - bounds_s[k] = T_k``. [s]
    compute_s : numpy.ndarray, shape (K,)
        Duration of each compute phase ``r_k * T_k``. [s]
    offset_s : numpy.ndarray, shape (G,)
        Delay of each group's waveform (phase offset plus straggler delay). [s]
    level_frac : numpy.ndarray, shape (G, 2K)
        Level of segment ``2k`` (compute) and ``2k+1`` (communication) per group. [frac of TDP]
    straggler : numpy.ndarray of bool, shape (G,)
        Which groups are stragglers.
    """

    start_s: float
    bounds_s: np.ndarray
    compute_s: np.ndarray
    offset_s: np.ndarray
    level_frac: np.ndarray
    straggler: np.ndarray

    @property
    def n_iterations(self) -> int:
        return int(self.compute_s.size)


def draw_iteration_plan(p: JobParams, n_groups: int, t_end_s: float,
                        rng: np.random.Generator) -> IterationPlan:
    """Draw the iterations of one job that overlap ``[0, t_end_s)``.

    Parameters
    ----------
    p : JobParams
        Resolved job parameters.
    n_groups : int
        Number of rack groups G.
    t_end_s : float
        Last time the waveform is needed (horizon, or end of the stop ramp if earlier). [s]
    rng : numpy.random.Generator
        Source of every random draw (draw order is fixed, so a seed reproduces the plan).
    """
    g = n_groups
    offset = rng.normal(0.0, p.phase_offset_s, g) if p.phase_offset_s > 0 else np.zeros(g)
    straggler = np.zeros(g, dtype=bool)
    n_strag = int(round(p.straggler_frac * g))
    if n_strag > 0:
        straggler[rng.choice(g, size=n_strag, replace=False)] = True
        offset = offset + straggler * p.straggler_delay_s
    period = p.period_s
    # iteration-clock span needed by any group
    tau_lo = 0.0 - p.start_s - (offset.max() if g else 0.0)
    tau_hi = t_end_s - p.start_s - (offset.min() if g else 0.0)
    k0 = max(0, int(np.floor(tau_lo / period)) - 1)
    b0 = k0 * period
    span = max(tau_hi - b0, period)
    if p.jitter_frac > 0:
        n = int(np.ceil(span / period * 1.2)) + 4
        xi = rng.normal(0.0, p.jitter_frac, n)
        periods = period * np.maximum(1.0 + xi, _MIN_PERIOD_FRAC)
        while periods.sum() < span + period:     # rare: extend the draw
            xi = rng.normal(0.0, p.jitter_frac, n)
            periods = np.concatenate([periods, period * np.maximum(1.0 + xi, _MIN_PERIOD_FRAC)])
        k = int(np.searchsorted(np.cumsum(periods), span + period)) + 1
        periods = periods[:k]
        bounds = b0 + np.concatenate([[0.0], np.cumsum(periods)])
    else:
        k = int(np.ceil(span / period)) + 2
        bounds = (k0 + np.arange(k + 1)) * period
        periods = np.diff(bounds)
    duty = np.full(k, p.compute_frac)
    if p.compute_frac_jitter > 0:
        duty = np.clip(duty + rng.normal(0.0, p.compute_frac_jitter, k), 0.02, 0.98)
    low = np.full(k, p.p_low_frac)
    if p.drop_jitter_frac > 0:
        low = low + rng.normal(0.0, p.drop_jitter_frac, k)
    level = np.empty((g, 2 * k))
    level[:, 0::2] = p.p_high_frac
    level[:, 1::2] = low
    if p.noise_high_frac > 0:
        level[:, 0::2] += rng.normal(0.0, p.noise_high_frac, (g, k))
    if p.noise_low_frac > 0:
        level[:, 1::2] += rng.normal(0.0, p.noise_low_frac, (g, k))
    np.clip(level, 0.0, p.max_level_frac, out=level)
    return IterationPlan(start_s=p.start_s, bounds_s=bounds, compute_s=duty * periods,
                         offset_s=offset, level_frac=level, straggler=straggler)


def segment_starts_s(plan: IterationPlan) -> np.ndarray:
    """Scenario time at which each segment begins, per group, shape (G, 2K). [s]

    Segment ``2k`` is iteration k's compute phase, ``2k+1`` its communication phase.
    """
    b = plan.bounds_s[:-1]
    local = np.empty(2 * b.size)
    local[0::2] = b
    local[1::2] = b + plan.compute_s
    return plan.start_s + plan.offset_s[:, None] + local[None, :]


def iteration_wave(plan: IterationPlan, n_steps: int, dt_s: float,
                   scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The iteration waveform of every group on the step grid.

    Each segment start is mapped to its first step (:func:`step_index`); the step counts
    between consecutive starts are the run lengths of the segments' levels, expanded with one
    ``numpy.repeat`` over all groups at once (fully vectorized, no per-step work in Python).
    Steps before a group's first segment take that segment's level (the job is not running
    there, the envelope hides it).

    Parameters
    ----------
    plan : IterationPlan
        The job's draws.
    n_steps : int
        Number of steps T.
    dt_s : float
        Step. [s]
    scale : float
        Factor applied to the levels before expansion (e.g. ``tdp_w`` for W per GPU).

    Returns
    -------
    wave_frac : numpy.ndarray, shape (G, T)
        GPU power of the group's GPUs as if the job ran throughout. [frac of TDP] x scale
    compute : numpy.ndarray of bool, shape (G, T)
        True in compute segments.
    """
    g, n_seg = plan.level_frac.shape
    idx = step_index(segment_starts_s(plan), dt_s, n_steps)          # (G, 2K) in [0, T]
    idx[:, 0] = 0
    np.maximum.accumulate(idx, axis=1, out=idx)                      # guard: never decreasing
    lengths = np.empty_like(idx)
    lengths[:, :-1] = idx[:, 1:] - idx[:, :-1]
    lengths[:, -1] = n_steps - idx[:, -1]
    lengths = lengths.ravel()
    levels = plan.level_frac.ravel() * scale if scale != 1.0 else plan.level_frac.ravel()
    wave = np.repeat(levels, lengths).reshape(g, n_steps)
    parity = np.zeros(n_seg, dtype=bool)
    parity[0::2] = True
    compute = np.repeat(np.broadcast_to(parity, (g, n_seg)).ravel(), lengths).reshape(g, n_steps)
    return wave, compute
