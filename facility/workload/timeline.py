"""A job's timeline on the step grid: start/stop ramps, running window and checkpoints.

Times are mapped to steps with :func:`step_index`: an event at time ``t`` takes effect at the
first step ``n`` with ``n * dt_s >= t`` (within 1e-6 of a step, so float round-off of
``k * period_s`` never moves an edge by a whole step).
"""

from __future__ import annotations

import numpy as np

__all__ = ["STEP_TOL", "step_index", "time_grid", "envelope_frac", "running_mask", "checkpoint_mask"]

#: Tolerance of the time-to-step mapping, in steps.
STEP_TOL = 1e-6


def time_grid(horizon_s: float, dt_s: float) -> np.ndarray:
    """Uniform step times ``n * dt_s`` covering ``[0, horizon_s)``, shape (T,). [s]"""
    n = int(np.ceil(horizon_s / dt_s - STEP_TOL))
    return np.arange(max(n, 1)) * dt_s


def step_index(t_s: np.ndarray | float, dt_s: float, n_steps: int) -> np.ndarray:
    """Index of the first step at or after ``t_s``, clipped to ``[0, n_steps]``.

    Parameters
    ----------
    t_s : array_like
        Event times. [s]
    dt_s : float
        Step. [s]
    n_steps : int
        Number of steps T; events at or after the horizon map to T.
    """
    x = np.ceil(np.asarray(t_s, dtype=float) / dt_s - STEP_TOL)
    return np.clip(x, 0, n_steps).astype(np.int64)


def envelope_frac(t_s: np.ndarray, start_s: float, stop_s: float | None, ramp_s: float) -> np.ndarray:
    """Share of the iteration waveform (vs idle) in the job's power, shape (T,). [frac]

    0 before ``start_s``; rises linearly to 1 over ``[start_s, start_s + ramp_s]``; 1 until
    ``stop_s``; falls linearly to 0 over ``[stop_s, stop_s + ramp_s]``; 0 after. GPU power is
    ``idle + envelope * (waveform - idle)``.
    """
    dt_s = float(t_s[1] - t_s[0]) if t_s.size > 1 else 1.0
    n = t_s.size
    if ramp_s > 0:
        w = np.clip((t_s - start_s) / ramp_s, 0.0, 1.0)
    else:
        w = np.zeros(n)
        w[step_index(start_s, dt_s, n):] = 1.0
    if stop_s is not None:
        if ramp_s > 0:
            w = np.minimum(w, np.clip(1.0 - (t_s - stop_s) / ramp_s, 0.0, 1.0))
        else:
            w[step_index(stop_s, dt_s, n):] = 0.0
    return w


def running_mask(t_s: np.ndarray, start_s: float, stop_s: float | None, ramp_s: float) -> np.ndarray:
    """True from ``start_s`` to the end of the stop ramp (``stop_s + ramp_s``), shape (T,)."""
    dt_s = float(t_s[1] - t_s[0]) if t_s.size > 1 else 1.0
    n = t_s.size
    m = np.zeros(n, dtype=bool)
    i0 = step_index(start_s, dt_s, n)
    i1 = n if stop_s is None else step_index(stop_s + ramp_s, dt_s, n)
    m[i0:i1] = True
    return m


def checkpoint_mask(t_s: np.ndarray, start_s: float, every_s: float | None, duration_s: float) -> np.ndarray:
    """True during checkpoints, shape (T,).

    Checkpoint ``k = 1, 2, ...`` occupies ``[start_s + k * every_s, start_s + k * every_s +
    duration_s)``: the first one after ``every_s`` of running. Only checkpoints that overlap
    the horizon are generated, so a job started long before t = 0 costs nothing extra.
    """
    n = t_s.size
    m = np.zeros(n, dtype=bool)
    if every_s is None or duration_s <= 0 or n == 0:
        return m
    dt_s = float(t_s[1] - t_s[0]) if n > 1 else 1.0
    t_end = t_s[-1] + dt_s
    k_lo = max(1, int(np.floor((t_s[0] - duration_s - start_s) / every_s)))
    k_hi = int(np.ceil((t_end - start_s) / every_s))
    if k_hi < k_lo:
        return m
    c = start_s + np.arange(k_lo, k_hi + 1) * every_s
    i0 = step_index(c, dt_s, n)
    i1 = step_index(c + duration_s, dt_s, n)
    d = np.zeros(n + 1, dtype=np.int64)
    np.add.at(d, i0, 1)
    np.add.at(d, i1, -1)
    return np.cumsum(d[:n]) > 0
