"""What the MPC expects of the load: iteration period, level, schedule, ripple reserves.

Pure functions over numpy arrays; :mod:`facility.control.mpc` calls them at every re-plan.

The forecast separates two time scales:

* the **level**: the load averaged over whole iterations. It is what the grid should see, and
  what the receding-horizon LP plans on. Measured as the mean of the last whole periods of
  the drawn load (the period detected by autocorrelation, :func:`estimate_period_steps`), and
  moved ahead with what the site knows of its schedule (job start/stop ramps, checkpoints):
  ``level[k] = measured_level + (schedule[k] - schedule_now)`` (:func:`level_forecast`).
* the **ripple**: the iteration swing around that level, which no plan can place exactly in
  time (period and duty jitter): the storages absorb it as it comes. The plan keeps room for
  it: every storage's SoC window is narrowed by the energy excursion of its share of the
  ripple (:func:`ripple_reserves_mwh`).
"""

from __future__ import annotations

import numpy as np

from facility.metrics import rolling_min_max

__all__ = ["estimate_period_steps", "block_mean", "level_window_steps", "measured_level",
           "level_forecast", "forecast_load", "ripple_shares", "ripple_of", "ripple_reserves_mwh",
           "moving_mean"]


def block_mean(x: np.ndarray, r: int) -> np.ndarray:
    """Mean over consecutive blocks of ``r`` samples, aligned to the END of ``x``."""
    n = (x.size // r) * r
    if n == 0:
        return np.empty(0)
    return x[x.size - n:].reshape(-1, r).mean(axis=1)


def moving_mean(x: np.ndarray, n: int) -> np.ndarray:
    """Trailing mean over the last ``n`` samples (fewer at the start), same length as ``x``."""
    x = np.asarray(x, dtype=float)
    n = max(1, int(n))
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(1, x.size + 1)
    lo = np.maximum(i - n, 0)
    return (c[i] - c[lo]) / (i - lo)


def estimate_period_steps(hist: np.ndarray, min_lag: int = 2) -> int | None:
    """Period of a measured series in samples.

    The local maximum of the (unbiased) autocorrelation at the first lag after its first zero
    crossing that comes within 10 % of the highest peak up to half the series (multiples of
    the period tie); None if there is no clear peak (< 0.3).
    """
    x = np.asarray(hist, dtype=float)
    n = x.size
    if n < 4 * min_lag:
        return None
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * n)
    ac = np.fft.irfft(f * np.conj(f))[:n]
    if ac[0] <= 0:
        return None
    ac = ac / ac[0] * n / (n - np.arange(n))          # unbiased
    half = n // 2
    neg = np.flatnonzero(ac[:half] < 0)
    if neg.size == 0:
        return None
    lo = max(int(neg[0]), min_lag)
    if lo >= half:
        return None
    seg = ac[lo:half]
    best = float(seg.max())
    if best <= 0.3:
        return None
    k = int(np.flatnonzero(seg >= 0.9 * best)[0])
    # the first multiple found: climb to its local maximum (the flank before it is within
    # 10 % of the peak too)
    while k + 1 < seg.size and seg[k + 1] >= seg[k]:
        k += 1
    return lo + k


def level_window_steps(period_steps: int | None, min_steps: int, max_steps: int) -> int:
    """Averaging window of the measured level: the most whole periods that fit in
    ``max_steps`` (at least one), else ``min_steps`` when no period is known. [steps]"""
    if period_steps is None or period_steps <= 0 or period_steps > max_steps:
        return int(max(1, min(min_steps, max_steps)))
    return int(period_steps * max(1, max_steps // period_steps))


def measured_level(hist_mw: np.ndarray, window_steps: int) -> float:
    """Mean of the last ``window_steps`` samples of the measured load. [MW]"""
    h = np.asarray(hist_mw, dtype=float)
    return float(h[-min(h.size, max(1, window_steps)):].mean()) if h.size else float("nan")


def level_forecast(level_mw: float, n_steps: int, schedule_mw: np.ndarray | None = None,
                   schedule_now_mw: float | None = None) -> np.ndarray:
    """Forecast of the load level on the MPC grid.

    ``level[k] = level_mw + schedule_mw[k] - schedule_now_mw``: the measured level, moved by
    what the declared schedule changes from now on (no schedule: the level persists).

    Parameters
    ----------
    level_mw : float
        Measured level now (:func:`measured_level`). [MW]
    n_steps : int
        MPC steps to forecast.
    schedule_mw : numpy.ndarray, optional
        Expected site level of the declared schedule over the next ``n_steps`` (block means). [MW]
    schedule_now_mw : float, optional
        The same expectation over the window the level was measured on. [MW]
    """
    out = np.full(n_steps, float(level_mw))
    if schedule_mw is not None and schedule_now_mw is not None and np.size(schedule_mw):
        s = np.asarray(schedule_mw, dtype=float)[:n_steps]
        out[:s.size] += s - schedule_now_mw
        out[s.size:] += s[-1] - schedule_now_mw
    return out


def forecast_load(kind: str, hist_mw: np.ndarray, n_steps: int, *, lead_steps: int = 1,
                  period_steps: int | None = None, future_mw: np.ndarray | None = None) -> np.ndarray:
    """Waveform forecast on the MPC grid: ``perfect`` (the true future), ``persistence`` (the
    last sample held) or ``periodic`` (the last period repeated, from ``lead_steps`` after
    the last sample; persistence without a period or enough history).

    Parameters
    ----------
    kind : {'perfect', 'persistence', 'periodic'}
    hist_mw : numpy.ndarray
        Measured history on the MPC grid, last sample = latest measurement. [MW]
    n_steps : int
    lead_steps : int
        Distance from the last measured sample to the first forecast sample (>= 1).
    period_steps : int, optional
    future_mw : numpy.ndarray, optional
        The true future for 'perfect'. [MW]
    """
    if kind == "perfect":
        if future_mw is None:
            raise ValueError("perfect forecast needs future_mw")
        return np.asarray(future_mw, dtype=float)[:n_steps]
    last = hist_mw[-1] if hist_mw.size else 0.0
    if kind == "periodic" and period_steps and hist_mw.size >= period_steps:
        off = lead_steps + np.arange(n_steps)
        k = np.ceil(off / period_steps)
        src = hist_mw.size - 1 + (off - k * period_steps).astype(np.int64)
        return hist_mw[src]
    return np.full(n_steps, last)


def ripple_shares(amplitude_mw: float, p_rated_mw: np.ndarray, fast: int,
                  follows: np.ndarray | None = None) -> np.ndarray:
    """Linear shares of the ripple (the plan's error) among the storages, shape (S,), sum 1.

    The fast storage takes as much as its rating allows at the ripple's amplitude,
    ``min(1, 0.9 p_fast / amplitude)``; the others that can follow a ripple (``follows``: no
    converter lag or ramp limit) share the rest by rating. Linear shares keep every
    storage's share of a zero-mean ripple zero-mean, so none of them drifts.
    """
    p = np.asarray(p_rated_mw, dtype=float)
    S = p.size
    out = np.zeros(S)
    if S == 0:
        return out
    ok = np.ones(S, bool) if follows is None else np.asarray(follows, bool).copy()
    ok[fast] = False
    tot = p[ok].sum()
    if tot <= 0 or not np.isfinite(amplitude_mw) or amplitude_mw <= 0:
        out[fast] = 1.0
        return out
    out[fast] = min(1.0, 0.9 * p[fast] / amplitude_mw)
    out[ok] = (1.0 - out[fast]) * p[ok] / tot
    return out


def ripple_of(load_mw: np.ndarray, period_steps: int) -> np.ndarray:
    """The load minus its trailing mean over one period (the first period dropped). [MW]"""
    x = np.asarray(load_mw, dtype=float)
    n = max(1, int(period_steps))
    if x.size < 2 * n:
        return np.zeros(0)
    r = (x - moving_mean(x, n))[n:]
    return r - r.mean()


def ripple_reserves_mwh(ripple_mw: np.ndarray, dt_s: float, period_steps: int,
                        shares: np.ndarray) -> np.ndarray:
    """Energy each storage needs on either side of its planned SoC to absorb its share of the
    ripple. [MWh]

    ``E_i = shares_i * max_t (max - min of the ripple's integral on [t - period, t])``.

    Parameters
    ----------
    ripple_mw : numpy.ndarray
        Ripple on the simulation grid (:func:`ripple_of`). [MW]
    dt_s : float
        Its step. [s]
    period_steps : int
        Iteration period on that grid (>= 1). [steps]
    shares : numpy.ndarray (S,)
        Each storage's share (:func:`ripple_shares`).
    """
    r = np.asarray(ripple_mw, dtype=float)
    sh = np.asarray(shares, dtype=float)
    if r.size < 2:
        return np.zeros(sh.size)
    e = np.cumsum(r) * dt_s / 3600.0
    lo, hi = rolling_min_max(e, max(1, int(period_steps)))
    return sh * float(np.max(hi - lo))
