"""Time-domain metrics of a power series: ramps over a window, the rolling window swing, the
per-minute ramp and the dynamic range (definitions: :mod:`facility.metrics`). Imports numpy and pandas only."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["window_steps", "rolling_min_max", "max_ramp_mw_per_s", "max_window_swing_mw",
           "max_ramp_mw_per_min", "dynamic_range_mw"]


def window_steps(window_s: float, dt_s: float) -> int:
    """Number of steps k a window of ``window_s`` spans on a grid of ``dt_s``: floor(window/dt).

    Parameters
    ----------
    window_s : float
        Window length. [s]
    dt_s : float
        Time step. [s]

    Returns
    -------
    int
        k ≥ 1 (a window shorter than one step still compares neighbouring samples).
    """
    return max(1, int(np.floor(window_s / dt_s + 1e-9)))


def rolling_min_max(p_mw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Trailing minimum and maximum of P over the samples ``P[j-k] … P[j]`` (clipped at 0).

    O(N) regardless of k (pandas' monotone-deque rolling extrema).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Rolling minimum and maximum, both shape (N,). [MW]
    """
    s = pd.Series(np.asarray(p_mw, dtype=float))
    r = s.rolling(k + 1, min_periods=1)
    return r.min().to_numpy(), r.max().to_numpy()


def max_ramp_mw_per_s(p_mw: np.ndarray, dt_s: float, window_s: float = 1.0) -> tuple[float, float]:
    """Largest rise and fall of P within any window τ, divided by τ.

    Notes
    -----
    up = max_{t1 < t2 ≤ t1 + τ} (P(t2) − P(t1)) / τ,
    down = max_{t1 < t2 ≤ t1 + τ} (P(t1) − P(t2)) / τ. Not a lag difference P(t) − P(t − τ),
    which is blind to oscillations at multiples of 1/τ.

    Parameters
    ----------
    p_mw : array-like
        Power. [MW]
    dt_s : float
        Time step. [s]
    window_s : float
        τ, ``spec.ramp_window_s``. [s]

    Returns
    -------
    (float, float)
        Ramp up and ramp down, both ≥ 0. [MW/s]
    """
    p = np.asarray(p_mw, dtype=float)
    if p.size < 2:
        return 0.0, 0.0
    lo, hi = rolling_min_max(p, window_steps(window_s, dt_s))
    return float(np.max(p - lo)) / window_s, float(np.max(hi - p)) / window_s


def max_window_swing_mw(p_mw: np.ndarray, dt_s: float, window_s: float) -> float:
    """max over t of (max − min of P on [t − window_s, t]), inside the horizon. [MW]"""
    p = np.asarray(p_mw, dtype=float)
    if p.size < 2:
        return 0.0
    lo, hi = rolling_min_max(p, window_steps(window_s, dt_s))
    return float(np.max(hi - lo))


def max_ramp_mw_per_min(p_mw: np.ndarray, dt_s: float) -> float:
    """Largest rise or fall of P within any 60 s window. [MW]

    Equal to :func:`max_window_swing_mw` with a 60 s window: any two instants at most 60 s
    apart lie in one trailing window, and a window's max − min is such a pair.
    """
    return max_window_swing_mw(p_mw, dt_s, 60.0)


def dynamic_range_mw(p_mw: np.ndarray) -> float:
    """max − min of P over the horizon. [MW]"""
    p = np.asarray(p_mw, dtype=float)
    return float(p.max() - p.min()) if p.size else 0.0
