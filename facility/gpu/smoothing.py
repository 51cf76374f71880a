"""GB200-style GPU power smoothing: minimum power floor, programmed ramps, stop delay.

The hardware controller (NVML "power smoothing" preset profile) is modelled per GPU as a
sequential recursion over the time steps of one rack group (all GPUs of a group see the same
demand, so one row stands for each of them):

1. **Target.** While the workload runs, the target is ``max(demand, floor)``: the floor
   controller burns power to keep the GPU at the minimum power floor (MPF). After the workload
   stops (``running`` falls to False), the floor is held for ``stop_delay_s`` more, then the
   target falls back to the demand. During communication phases ``running`` stays True, so the
   floor stays engaged across them.
2. **Secondary floor (optional).** With an activation window, a trailing moving average of the
   demand over ``activation_window_s`` selects the floor: at or above the activation point
   (secondary floor + activation offset) the *secondary* floor applies, below it the primary
   floor (NVML ``SECONDARY_POWER_FLOOR`` / ``PRIMARY_FLOOR_ACT_WIN_MULT`` / ``ACT_OFFSET``).
3. **Hysteresis.** A ramp-down starts only after the target has stayed below the current power
   for ``hysteresis_s`` (NVML ``RAMP_DOWN_HYSTERESIS``); meanwhile the power is held (burned).
4. **Ramp limiter.** ``y[k] = clip(target[k], y[k-1] - r_down dt, y[k-1] + r_up dt)``.

Samples are instantaneous values of a piecewise-linear power, so the limiter is exact at any
``dt_s``: a limited edge follows ``y(t) = y0 + r (t - t0)`` from the last sample before the
edge, its slope between samples is the programmed rate, and delays (stop delay, hysteresis)
shift the waveform by exactly their duration when they are multiples of ``dt_s`` (otherwise
they are rounded up to whole steps).

Costs accounted for in ``info``:

* burned energy ``burn_j``: ``sum(max(y - demand, 0)) dt`` [J per GPU] (floor, held ramps);
* lost compute ``deficit_s``: in compute phases a ramp-up limit delivers power ``y < demand``;
  the GPU's throughput is taken proportional to its power, so the work not done is
  ``sum((demand - y) / demand) dt`` seconds of full-power compute, made up later. This equals
  the compute-phase energy deficit divided by the compute-phase power. It stretches the job
  (``training.slowdown_frac``); the time grid of the trace is not warped (the nominal schedule
  is kept, see docs/gpu_controls.md).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

__all__ = ["apply_power_smoothing", "steps_for"]

_EPS = 1e-9


def steps_for(duration_s: float, dt_s: float) -> int:
    """Number of whole steps covering ``duration_s`` (rounded up, exact for multiples). [-]"""
    if duration_s <= 0:
        return 0
    return int(math.ceil(duration_s / dt_s - _EPS))


@nb.njit(cache=True, nogil=True)
def _smooth_kernel(p_w, running, compute, enabled, dt_s, floor_w, sec_floor_w, act_point_w,
                   act_n, ramp_up_dt, ramp_down_dt, stop_n, hyst_n, out, burn_j, deficit_s,
                   engaged_s):
    n_g, n_t = p_w.shape
    for g in range(n_g):
        if not enabled[g]:
            for k in range(n_t):
                out[g, k] = p_w[g, k]
            continue
        up = ramp_up_dt[g]
        down = ramp_down_dt[g]
        floor = floor_w[g]
        sec = sec_floor_w[g]
        use_sec = act_n > 0
        ever_ran = False
        n_off = 0          # consecutive non-running steps (stop delay counter)
        n_below = 0        # consecutive steps with target below the current power
        ma_sum = 0.0       # running sum of the demand over the activation window
        y = 0.0
        burn = 0.0
        deficit = 0.0
        eng = 0
        for k in range(n_t):
            d = p_w[g, k]
            if use_sec:
                ma_sum += d
                if k >= act_n:
                    ma_sum -= p_w[g, k - act_n]
                cnt = act_n if k + 1 >= act_n else k + 1
                fl = sec if ma_sum / cnt >= act_point_w[g] else floor
            else:
                fl = floor
            if running[g, k]:
                ever_ran = True
                n_off = 0
                hold = True
            else:
                n_off += 1
                hold = ever_ran and n_off <= stop_n
            tgt = d if (not hold or d >= fl) else fl
            if k == 0:
                y = tgt
            elif tgt > y:
                n_below = 0
                y = y + up if tgt > y + up else tgt
            elif tgt < y:
                n_below += 1
                if n_below > hyst_n:
                    y = y - down if tgt < y - down else tgt
            else:
                n_below = 0
            out[g, k] = y
            if y > d:
                burn += y - d
            elif y < d and compute[g, k] and d > 0.0:
                deficit += (d - y) / d
            if y != d:
                eng += 1
        burn_j[g] = burn * dt_s
        deficit_s[g] = deficit * dt_s
        engaged_s[g] = eng * dt_s


def _per_group(x, n_g: int, name: str, *, inf_for_none: bool = False) -> np.ndarray:
    if x is None:
        if inf_for_none:
            return np.full(n_g, np.inf)
        raise ValueError(f"{name} is required")
    a = np.broadcast_to(np.asarray(x, dtype=float), (n_g,)).copy()
    return a


def apply_power_smoothing(p_w, running, dt_s, floor_w, ramp_up_w_per_s=None,
                          ramp_down_w_per_s=None, stop_delay_s=0.0, hysteresis_s=0.0, *,
                          compute=None, enabled=None, secondary_floor_w=None,
                          activation_window_s=0.0, activation_offset_w=0.0):
    """Apply the GPU power-smoothing controller to per-GPU power rows.

    Parameters
    ----------
    p_w : numpy.ndarray, shape (G, T)
        Demanded power of one GPU of each group. [W per GPU]
    running : numpy.ndarray of bool, shape (G, T)
        True while the workload runs (the floor is engaged).
    dt_s : float
        Time step. [s]
    floor_w : float or array_like, shape (G,)
        Minimum power floor (MPF) while running. [W per GPU]
    ramp_up_w_per_s, ramp_down_w_per_s : float or array_like (G,), optional
        Programmed ramp rates; None or inf = unlimited. [W/s per GPU]
    stop_delay_s : float
        Time the floor is held after the workload stops. [s]
    hysteresis_s : float
        Delay before a ramp-down starts once the target falls below the power. [s]
    compute : numpy.ndarray of bool, shape (G, T), optional
        Compute phases (for the lost-work account); None = every running step.
    enabled : array_like of bool, shape (G,), optional
        Groups whose GPU supports smoothing; the others pass through unchanged. Default all.
    secondary_floor_w : float or array_like (G,), optional
        Secondary floor applied while the activation moving average is at or above the
        activation point. [W per GPU]
    activation_window_s : float
        Length of the trailing moving average of the demand; 0 = no secondary floor. [s]
    activation_offset_w : float or array_like (G,)
        Activation point = secondary floor + this offset. [W per GPU]

    Returns
    -------
    p_w : numpy.ndarray, shape (G, T)
        Smoothed power. [W per GPU]
    info : dict
        ``burn_j`` (G,) energy burned above the demand [J per GPU]; ``deficit_s`` (G,) compute
        time lost to the ramp-up limit [s]; ``engaged_s`` (G,) time the output differs from
        the demand [s]; ``enabled`` (G,) bool.

    Notes
    -----
    ``y[k] = clip(max(d[k], F·h[k]), y[k-1] - r_down dt, y[k-1] + r_up dt)`` with
    ``h[k]`` = running or within ``stop_delay_s`` of the last running step, ``y[0]`` = target,
    and ramp-downs held for ``hysteresis_s``. See the module docstring.
    """
    p_w = np.ascontiguousarray(p_w, dtype=float)
    if p_w.ndim != 2:
        raise ValueError(f"p_w must be 2-D (groups, steps), got shape {p_w.shape}")
    n_g, n_t = p_w.shape
    running = np.ascontiguousarray(running, dtype=np.bool_)
    if running.shape != p_w.shape:
        raise ValueError(f"running has shape {running.shape}, expected {p_w.shape}")
    compute = running if compute is None else np.ascontiguousarray(compute, dtype=np.bool_)
    if compute.shape != p_w.shape:
        raise ValueError(f"compute has shape {compute.shape}, expected {p_w.shape}")
    if not dt_s > 0:
        raise ValueError(f"dt_s = {dt_s} s must be > 0")
    floor = _per_group(floor_w, n_g, "floor_w")
    up = _per_group(ramp_up_w_per_s, n_g, "ramp_up_w_per_s", inf_for_none=True)
    down = _per_group(ramp_down_w_per_s, n_g, "ramp_down_w_per_s", inf_for_none=True)
    for name, a in (("ramp_up_w_per_s", up), ("ramp_down_w_per_s", down)):
        if np.any(~(a > 0)):
            raise ValueError(f"{name} must be > 0 W/s (None = unlimited), got {a.min():g}")
    if stop_delay_s < 0 or hysteresis_s < 0 or activation_window_s < 0:
        raise ValueError("stop_delay_s, hysteresis_s and activation_window_s must be ≥ 0 s")
    en = np.ones(n_g, dtype=np.bool_) if enabled is None else \
        np.broadcast_to(np.asarray(enabled, dtype=np.bool_), (n_g,)).copy()
    act_n = 0
    sec = floor.copy()
    act_point = np.zeros(n_g)
    if secondary_floor_w is not None and activation_window_s > 0:
        act_n = max(1, steps_for(activation_window_s, dt_s))
        sec = _per_group(secondary_floor_w, n_g, "secondary_floor_w")
        act_point = sec + _per_group(activation_offset_w, n_g, "activation_offset_w")
    out = np.empty_like(p_w)
    burn = np.zeros(n_g)
    deficit = np.zeros(n_g)
    engaged = np.zeros(n_g)
    if n_t == 0:
        return out, dict(burn_j=burn, deficit_s=deficit, engaged_s=engaged, enabled=en)
    _smooth_kernel(p_w, running, compute, en, float(dt_s), floor, sec, act_point, act_n,
                   up * dt_s, down * dt_s, steps_for(stop_delay_s, dt_s),
                   steps_for(hysteresis_s, dt_s), out, burn, deficit, engaged)
    return out, dict(burn_j=burn, deficit_s=deficit, engaged_s=engaged, enabled=en)
