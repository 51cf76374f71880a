"""What the MPC does about a load step nobody announced (a job crash, an unplanned restart).

A crash drops a job's power to idle within about a second (docs/failures.md). No schedule
contains it, so a causal controller learns of it only from the measured load; the PCC must
then keep to the spec's limits *from its own history*: it may fall no faster than the
allowed rate ``rho`` (:func:`facility.control.plan.allowed_rate_mw_per_s`), and the storage
charges the difference between the PCC and the vanished load, the triangle
``dP^2 / (2 rho)`` [MW s] at a power up to ``dP`` (the no-foresight case of
tests/optimize/test_crash_closed_form.py). Three pure functions:

* :func:`step_level` notices such a step in the measured load: the level the MPC forecasts
  is then the load since the step, not the mean of a window that straddles it;
* :func:`descent` is the fastest return of the PCC to the forecast that the spec's window
  limits (:func:`window_limits`) allow from the PCC's history, and the energy the storage
  takes along it: the MPC asks its LP to end at least that close to its SoC target when no
  closer end is feasible (instead of planning without an end, which keeps the PCC where it
  was and fills the storage);
* :func:`crash_reserve_mwh` is the charging room the storage keeps for the largest drop it
  must survive (``controller.crash_reserve_mw``; unset: :func:`crash_drop_mw`, the largest
  job with ``[jobs.failures]``): the MPC keeps its SoC target that far below the top of its
  planning window.
"""

from __future__ import annotations

import numpy as np

from facility.metrics import window_steps
from facility.workload.archetypes import resolve_job_params

__all__ = ["crash_reserve_mwh", "crash_drop_mw", "descent", "step_level", "window_limits", "STEP_FRAC"]

#: A step in the measured load: the mean of its last period leaves the range of the earlier
#: periods' means by more than this share of the level. [frac]
STEP_FRAC = 0.1


def crash_reserve_mwh(dp_mw: float, rate_mw_per_s: float, eff_charge_frac: float = 1.0) -> float:
    """Energy a storage stores while the PCC ramps down after an unannounced drop. [MWh]

    ``eta_c dP^2 / (2 rho) / 3600``: the PCC falls linearly at ``rho`` from the load before
    the drop to the load after it, the storage charging the difference (power up to ``dP``).

    Parameters
    ----------
    dp_mw : float
        Load that vanishes at once. [MW]
    rate_mw_per_s : float
        Fastest fall of the PCC the limits allow (inf: no limit, no reserve). [MW/s]
    eff_charge_frac : float
        Charging efficiency (energy stored per energy drawn). [frac]
    """
    if dp_mw <= 0 or not np.isfinite(rate_mw_per_s) or rate_mw_per_s <= 0:
        return 0.0
    return float(eff_charge_frac * dp_mw ** 2 / (2.0 * rate_mw_per_s) / 3600.0)


def crash_drop_mw(scenario) -> float:
    """The largest site-level drop a crash of one of the scenario's jobs with
    ``[jobs.failures]`` makes: its iteration-mean GPU power above idle,
    ``n_gpus (compute_frac p_high + (1 - compute_frac) p_low - idle) (1 + non_gpu_frac) pue``;
    0 without failures. What the site knows of its jobs (their sizes, that they can fail),
    not when they fail; ``scenario`` is resolved (its GPU models on ``library``). [MW]"""
    out = 0.0
    site = scenario.site
    for job in scenario.jobs:
        if job.failures is None or job.workload == "trace":
            continue
        p = resolve_job_params(job, scenario.library.gpu(job.gpu))
        mean_w = p.tdp_w * (p.compute_frac * p.p_high_frac + (1.0 - p.compute_frac) * p.p_low_frac)
        dp = p.n_gpus * max(mean_w - p.idle_w, 0.0) * (1.0 + site.non_gpu_frac) * site.pue / 1e6
        out = max(out, dp)
    return float(out)


def window_limits(spec, dt_s: float) -> list[tuple[int, float, float]]:
    """The spec's window limits on a grid of ``dt_s`` as ``(lags, max_fall_mw, max_rise_mw)``:
    over any ``lags`` steps the PCC may fall at most ``max_fall`` and rise at most ``max_rise``
    below / above any earlier sample (``max_ramp_mw_per_min``: 60 s and R both ways;
    ``max_window_swing_mw``: ``window_s`` and X; the per-second ramps over ``ramp_window_s``
    as ``rate * ramp_window_s``). [steps], [MW]"""
    out = []
    if spec.max_ramp_mw_per_min is not None:
        out.append((window_steps(60.0, dt_s), spec.max_ramp_mw_per_min, spec.max_ramp_mw_per_min))
    if spec.max_window_swing_mw is not None:
        out.append((window_steps(spec.window_s, dt_s), spec.max_window_swing_mw, spec.max_window_swing_mw))
    if spec.max_ramp_up_mw_per_s is not None or spec.max_ramp_down_mw_per_s is not None:
        w = spec.ramp_window_s
        dn = np.inf if spec.max_ramp_down_mw_per_s is None else spec.max_ramp_down_mw_per_s * w
        up = np.inf if spec.max_ramp_up_mw_per_s is None else spec.max_ramp_up_mw_per_s * w
        out.append((window_steps(w, dt_s), dn, up))
    return [(max(1, int(n)), float(dn), float(up)) for n, dn, up in out]


def descent(p_history_mw: np.ndarray, forecast_mw: np.ndarray, limits: list, dt_s: float,
            eff_charge_frac: float = 1.0, eff_discharge_frac: float = 1.0) -> tuple[np.ndarray, float]:
    """The fastest return of the PCC from its history to the forecast, and the storage energy
    it moves.

    Greedy on the plan's grid: ``P[k] = clip(forecast[k], lo_k, hi_k)`` with, over every
    limit ``(n, fall, rise)`` of :func:`window_limits`, ``lo_k = max(max(P[k-n:k]) - fall)``
    and ``hi_k = min(min(P[k-n:k]) + rise)`` (the history before ``k = 0``): each step moves
    as far toward the forecast as the windows allow (after a step down of the load, the
    rolling-window staircase). The storage supplies ``s = P - forecast`` (charging positive)
    and its energy changes by ``sum(eta_c s+ - s- / eta_d) dt / 3600``.

    Parameters
    ----------
    p_history_mw : numpy.ndarray
        PCC power of the steps before the plan, on its grid (last = latest). [MW]
    forecast_mw : numpy.ndarray (H,)
        Forecast load on the plan's grid. [MW]
    limits : list of (int, float, float)
        :func:`window_limits` of the spec the plan keeps.
    dt_s : float
        Plan step. [s]
    eff_charge_frac, eff_discharge_frac : float
        Storage efficiencies. [frac]

    Returns
    -------
    p_storage_mw : numpy.ndarray (H,)
        Storage power along the return. [MW]
    de_mwh : float
        Change of the stored energy at its end. [MWh]
    """
    fc = np.asarray(forecast_mw, dtype=float)
    hist = np.asarray(p_history_mw, dtype=float).ravel()
    n_max = max([n for n, _, _ in limits], default=0)
    seq = np.concatenate([hist[hist.size - min(hist.size, n_max):], np.empty(fc.size)])
    h0 = seq.size - fc.size
    # one step at a time: each needs the window of the steps before it (H is a plan's
    # horizon, a few hundred steps)
    for k in range(fc.size):
        i = h0 + k
        lo, hi = -np.inf, np.inf
        for n, fall, rise in limits:
            w = seq[max(0, i - n):i]
            if w.size:
                lo = max(lo, float(w.max()) - fall)
                hi = min(hi, float(w.min()) + rise)
        seq[i] = min(max(fc[k], lo), hi) if lo <= hi else lo
    s = seq[h0:] - fc
    de = float(np.sum(eff_charge_frac * np.maximum(s, 0.0)
                      - np.maximum(-s, 0.0) / eff_discharge_frac) * dt_s / 3600.0)
    return s, de


def step_level(hist_mw: np.ndarray, level_mw: float, recent_steps: int,
               window_steps: int | None = None) -> tuple[float, int] | None:
    """The load's level after a step inside the level window and the steps it is the mean
    of, or None when there is none.

    The window's last ``window_steps`` samples (all without it) are cut into blocks of
    ``recent_steps`` (one iteration period, or a second without one) from the end. The new
    level is the mean of the longest run of last blocks that agree within ``STEP_FRAC`` of
    ``level_mw`` and all lie more than that below the lowest or above the highest of the
    blocks before them (the block means of a steady jittered load wander within their own
    range; a crash leaves it). [MW], [steps]
    """
    h = np.asarray(hist_mw, dtype=float)
    if window_steps is not None:
        h = h[-max(1, int(window_steps)):]
    n = int(max(1, recent_steps))
    k = h.size // n
    if k < 2:
        return None
    blocks = h[h.size - k * n:].reshape(k, n).mean(axis=1)
    thr = max(STEP_FRAC * abs(level_mw), 1e-9)
    # the longest run of last blocks that agree among themselves (within thr) and all lie
    # beyond the range of the blocks before them
    best = None
    for j in range(1, k):
        tail, head = blocks[k - j:], blocks[:k - j]
        if tail.max() - tail.min() > thr:
            break
        if tail.max() < head.min() - thr or tail.min() > head.max() + thr:
            best = (float(tail.mean()), j * n)
    return best
