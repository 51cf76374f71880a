"""The uniform grid a measured trace is replayed on, and what keeps it within reason.

:func:`trace_on_grid` puts a trace's polls on a uniform grid at their median spacing and
low-passes it for the scenario's ``dt_s``; :func:`check_time_span` refuses (when the file is
read, so at ``validate``) a poll interval outside [:data:`MIN_POLL_INTERVAL_S`,
:data:`MAX_POLL_INTERVAL_S`] and a span whose grid would exceed :data:`MAX_REPLAY_POINTS`
(a clock that jumps from 2024 to 2099 mid-file), with the figures. The resource estimate
counts the grid (:func:`replay_points` x :data:`REPLAY_ARRAYS` x 8 B).
"""

from __future__ import annotations

import numpy as np
from scipy import signal

from facility.errors import ScenarioError

__all__ = ["MIN_POLL_INTERVAL_S", "MAX_POLL_INTERVAL_S", "MAX_REPLAY_POINTS", "REPLAY_ARRAYS", "replay_points",
           "check_time_span", "trace_on_grid"]

#: Allowed median poll interval of a trace. [s] No power sensor reads faster than ~1 ms (NVML's
#: instantaneous sensor; nvidia-smi ``-lms`` takes 1 ms at least), so 1 us leaves room for
#: oscilloscope captures; a finer one is a time column in the wrong unit. Above an hour a trace
#: shows no iteration at all.
MIN_POLL_INTERVAL_S = 1e-6
MAX_POLL_INTERVAL_S = 3600.0
#: Most points of the uniform grid a trace is replayed on (its span / its median interval,
#: :func:`trace_on_grid`): 5e7 float64 points are 0.37 GiB per array, and the replay holds about
#: :data:`REPLAY_ARRAYS` of them at once. A 256 MB file (the largest read) holds at most ~2e7 polls;
#: more grid points than that mean a time jump (a clock set to 2099 after 200 polls).
MAX_REPLAY_POINTS = 50_000_000
#: Arrays of the replay grid's length alive at once in :func:`trace_on_grid` and the replay
#: (grid, interpolated trace, the filter's forward and backward passes, their padding). [-]
REPLAY_ARRAYS = 6
#: Downsampling ratio (dt_s / poll interval) above which a trace is first averaged in blocks
#: before the Butterworth filter (whose design loses accuracy at cutoffs far below Nyquist and
#: fails outright, a singular matrix, near 1e-9 of it). [-]
_PRE_AVERAGE_RATIO = 64.0


def replay_points(span_s: float, interval_s: float) -> float:
    """Points of the uniform grid a trace spanning ``span_s`` at median interval ``interval_s``
    is replayed on (:func:`trace_on_grid`). [-]"""
    return float(np.floor(span_s / interval_s + 1e-9)) + 1.0


def _span_text(s: float) -> str:
    if s >= 2 * 86400 * 365:
        return f"{s / (86400 * 365.25):.4g} years"
    if s >= 2 * 86400:
        return f"{s / 86400:.4g} days"
    if s >= 2 * 3600:
        return f"{s / 3600:.4g} h"
    return f"{s:.4g} s"


def check_time_span(t_rel: np.ndarray, med: float, g: int, where: str, col: str) -> None:
    """Refuse a poll interval outside [MIN_POLL_INTERVAL_S, MAX_POLL_INTERVAL_S] and a span
    whose replay grid exceeds :data:`MAX_REPLAY_POINTS` (with the figures)."""
    if not (MIN_POLL_INTERVAL_S <= med <= MAX_POLL_INTERVAL_S):
        raise ScenarioError(
            f"{where}: the polls are {med:.4g} s apart (median of time column {col!r}); allowed "
            f"{MIN_POLL_INTERVAL_S:g} s to {MAX_POLL_INTERVAL_S:g} s — is the time column in another unit? "
            f"(a header like 't_ms' or 'time [ms]' says so; seconds are assumed otherwise)")
    span = float(t_rel[-1])
    n = replay_points(span, med)
    if n > MAX_REPLAY_POINTS:
        gib = n * 8.0 * REPLAY_ARRAYS / 2 ** 30
        gib_text = f"{gib:,.0f}" if gib >= 10 else f"{gib:.2g}"
        gap = float(t_rel[g + 1] - t_rel[g])
        raise ScenarioError(
            f"{where}: the polls span {span:.4g} s ({_span_text(span)}) at a median interval of {med:.4g} s: "
            f"the replay's uniform grid would hold {n:.3g} points (~{gib_text} GiB), more than the "
            f"{MAX_REPLAY_POINTS:.3g} allowed; the longest gap is {gap:.4g} s ({_span_text(gap)}) after poll "
            f"{g + 1} (t = {t_rel[g]:.6g} s) — a clock jump? Fix the timestamps or cut the file to at most "
            f"{MAX_REPLAY_POINTS * med:.4g} s at this interval")


def _block_mean(p: np.ndarray, k: int) -> np.ndarray:
    """Means of ``k`` samples centred on every ``k``-th sample (0, k, 2k, ...; shorter at the ends)."""
    n = p.size
    c = np.concatenate([[0.0], np.cumsum(p)])
    centre = np.arange(0, n, k)
    lo = np.maximum(centre - k // 2, 0)
    hi = np.minimum(centre - k // 2 + k, n)
    return (c[hi] - c[lo]) / (hi - lo)


def trace_on_grid(t_s: np.ndarray, p_frac: np.ndarray, dt_s: float) -> tuple[np.ndarray, float]:
    """Prepare a trace for replay at step ``dt_s``: uniform native grid, anti-aliased.

    The trace is first interpolated linearly onto a uniform grid at its median sample spacing.
    Where that spacing is over 64 x finer than ``dt_s``, block means centred on every k-th point
    (k = dt_s / (8 x spacing)) bring it to ~dt_s / 8 first.
    If that spacing is finer than ``dt_s`` (downsampling), a zero-phase 6th-order Butterworth
    low-pass (``sosfiltfilt``) at 0.8 x the Nyquist frequency of ``dt_s`` removes what the
    coarser grid cannot carry, so replay never aliases. The replay itself interpolates this
    signal linearly (:func:`numpy.interp`) at the needed times.

    Returns
    -------
    p_native : numpy.ndarray
        Filtered trace on the uniform native grid. [frac of TDP]
    native_dt_s : float
        Its spacing. [s]
    """
    native = float(np.median(np.diff(t_s)))
    n = int(replay_points(float(t_s[-1]), native))
    grid = np.arange(n) * native
    p = np.interp(grid, t_s, p_frac)
    if dt_s / native > _PRE_AVERAGE_RATIO and n > 3:
        # far finer than dt_s: block means first (a boxcar low-pass of its own), so the
        # Butterworth below works at a ratio of ~8, where its design is accurate
        k = max(1, int(dt_s / (8.0 * native)))
        p, native = _block_mean(p, k), native * k
        n = p.size
    if native < dt_s * (1.0 - 1e-6) and n > 3:
        wn = 0.8 * native / dt_s          # cutoff / native Nyquist = 0.8 * (1/(2 dt)) / (1/(2 native))
        sos = signal.butter(6, wn, output="sos")
        p = signal.sosfiltfilt(sos, p, padlen=min(n - 1, 3 * int(np.ceil(dt_s / native)) * 6))
        p = np.maximum(p, 0.0)
    return p, native
