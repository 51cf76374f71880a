"""The co-design's switch between storage and GPU controls, prepared for the loop kernel.

The kernel (:mod:`facility.control.kernel`) blends the plain site power and the GPU-engaged
one with a weight ``w``. Three things decide how that switch looks at the PCC:

* **blend rate** (:func:`blend_steps`): if no storage absorbed the change, the drawn load
  would move by ``dw * |alt - plain|`` in a step. With ``codesign_blend_s`` unset the weight
  moves at most ``rate * dt / D`` per step, ``rate`` half of the fastest steady PCC change the
  spec's ramp and window limits allow (:func:`facility.control.plan.allowed_rate_mw_per_s`),
  ``D`` the largest ``|alt - plain|`` of the last window: the switch alone never uses more
  than half of the limits.
* **GPU ramp state** (:func:`gpu_ramp_mw_per_s`): while the switch is under way the drawn
  load leaves its current value at most at the GPUs' programmed ramp rates (site level),
  instead of jumping onto the precomputed engaged trace, whose ramp limiter had a different
  history.
* **release only when storage can carry the plain load** (:func:`storage_sufficient`): GPU
  controls are released when every storage is back inside its SoC margin *and* the storages
  could carry the plain load's swing (power and ripple energy) over the last window, *and*
  the SoC levels now leave room for one such swing down and up inside the release margins
  (a storage that could carry the swing from mid-band but not from where it is would run
  into a bound right after the release, and the switch back and forth is what swings the
  PCC); the site knows the GPUs' demand behind the floor (the GPUs report the power they
  burn). With ``warm_start`` a site whose storage cannot carry the load from its initial
  SoC starts with GPU controls engaged, and stays so while that holds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from facility.control.forecast import estimate_period_steps, moving_mean
from facility.metrics import rolling_min_max

__all__ = ["blend_steps", "plain_swing", "storage_sufficient", "swing_sufficient", "gpu_ramp_mw_per_s",
           "room_for_swing"]


def blend_steps(plain_mw: np.ndarray, engaged_mw: np.ndarray, dt_s: float, blend_s: float | None,
                rate_mw_per_s: float, window_steps: int) -> np.ndarray:
    """Largest change of the blend weight per step, shape (T,) or (1,). [1/step]

    Parameters
    ----------
    plain_mw, engaged_mw : numpy.ndarray (T,)
        Plain and GPU-engaged site power. [MW]
    dt_s : float
        Step. [s]
    blend_s : float or None
        ``controller.codesign_blend_s``: 0 = at once, > 0 = linear over that time, None =
        from the rate. [s]
    rate_mw_per_s : float
        Allowed rate of the drawn load's change during the switch (inf = at once). [MW/s]
    window_steps : int
        Window of the trailing maximum of ``|alt - plain|``. [steps]
    """
    if blend_s is not None:
        return np.array([1.0 if blend_s <= 0 else min(1.0, dt_s / blend_s)])
    if not np.isfinite(rate_mw_per_s) or rate_mw_per_s <= 0:
        return np.array([1.0])
    d = np.abs(np.asarray(engaged_mw, float) - np.asarray(plain_mw, float))
    _, d_max = rolling_min_max(d, max(1, int(window_steps)))
    return np.minimum(1.0, rate_mw_per_s * dt_s / np.maximum(d_max, 1e-9))


def plain_swing(plain_mw: np.ndarray, dt_s: float, window_steps: int,
                pre_mw: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """What the storages would carry of the plain load, step by step (trailing window).

    With ``dev = plain - (trailing mean over the window)``: the power ``P = max |dev|`` over
    the last window, and the energy of one swing, the largest range of the integral of
    ``dev`` over one iteration period (detected from the first minute by autocorrelation;
    the window when none shows) within the last window.

    Parameters
    ----------
    plain_mw : numpy.ndarray (T,)
        Plain site power (GPU demand without the engaged controls). [MW]
    dt_s : float
        Step. [s]
    window_steps : int
        Trailing window (the controller's averaging window). [steps]
    pre_mw : numpy.ndarray, optional
        Load before t = 0 (warm start), prepended for the first windows. [MW]

    Returns
    -------
    (p_need_mw (T,), e_need_mwh (T,)) [MW], [MWh]
    """
    x = np.asarray(plain_mw, dtype=float)
    n_pre = 0 if pre_mw is None else int(np.size(pre_mw))
    if n_pre:
        x = np.concatenate([np.asarray(pre_mw, float), x])
    n = max(1, int(window_steps))
    dev = x - moving_mean(x, n)
    _, p_need = rolling_min_max(np.abs(dev), n)
    q = max(1, int(round(0.05 / dt_s)))
    head = x[:int(round(60.0 / dt_s))]
    per = estimate_period_steps(head[:(head.size // q) * q].reshape(-1, q).mean(axis=1)) if head.size >= 8 * q else None
    k = n if per is None else max(1, min(n, per * q))
    e = np.cumsum(dev) * dt_s / 3600.0
    lo, hi = rolling_min_max(e, k)
    _, e_need = rolling_min_max(hi - lo, n)
    return p_need[n_pre:], e_need[n_pre:]


def storage_sufficient(plain_mw: np.ndarray, dt_s: float, window_steps: int, p_rated_mw: float,
                       e_usable_mwh: float, pre_mw: np.ndarray | None = None) -> np.ndarray:
    """Whether the storages could carry the plain load, step by step (trailing window), (T,).

    Sufficient when the power of :func:`plain_swing` is ``<= 0.9 p_rated_mw`` and its swing
    energy ``<= 0.5 e_usable_mwh``: a tenth of the power and half of the energy band stay
    for the controller's own errors (target lag, SoC drift and its recovery). Where the SoC
    levels are matters too: the kernel releases only when they leave room for one swing
    both ways (``release_e_mwh``, the swing energy).

    Parameters
    ----------
    plain_mw, dt_s, window_steps, pre_mw
        As :func:`plain_swing`.
    p_rated_mw : float
        Sum of the storages' power ratings. [MW]
    e_usable_mwh : float
        Sum of the storages' energy between their co-design margins. [MWh]
    """
    p_need, e_need = plain_swing(plain_mw, dt_s, window_steps, pre_mw)
    return swing_sufficient(p_need, e_need, p_rated_mw, e_usable_mwh)


def swing_sufficient(p_need_mw: np.ndarray, e_need_mwh: np.ndarray, p_rated_mw: float,
                     e_usable_mwh: float) -> np.ndarray:
    """The thresholds of :func:`storage_sufficient` on a swing already computed by
    :func:`plain_swing`: ``P <= 0.9 p_rated_mw`` and ``E <= 0.5 e_usable_mwh``, (T,) int8.
    [MW], [MWh]"""
    return ((p_need_mw <= 0.9 * p_rated_mw) & (e_need_mwh <= 0.5 * e_usable_mwh)).astype(np.int8)


def gpu_ramp_mw_per_s(scenario) -> tuple[float, float]:
    """Site-level ramp rates of the GPUs under the programmed smoothing. [MW/s]

    Sum over jobs on GPUs with hardware smoothing of ``n_gpus * ramp_w_per_s``, scaled to the
    site by ``(1 + non_gpu_frac) * pue``; inf when smoothing is off or when any part of the
    engaged load can change without a programmed ramp (firefly, GPUs without smoothing).
    ``scenario`` is resolved (its GPU models on ``library``).
    """
    gs = scenario.gpu_smoothing
    if not gs.enabled or scenario.firefly.enabled:
        return float("inf"), float("inf")
    n = 0.0
    for j in scenario.jobs:
        if not scenario.library.gpu(j.gpu).supports_power_smoothing:
            return float("inf"), float("inf")
        n += j.n_gpus
    k = n * (1.0 + scenario.site.non_gpu_frac) * scenario.site.pue / 1e6
    up = float("inf") if gs.ramp_up_w_per_s is None else gs.ramp_up_w_per_s * k
    down = float("inf") if gs.ramp_down_w_per_s is None else gs.ramp_down_w_per_s * k
    return up, down


@njit(cache=True)
def room_for_swing(soc, soc_min, soc_max, release_margin, e_rated, need_mwh):
    """Whether the SoC levels ``soc`` (S,) leave room, inside the release margins, for one
    swing of ``need_mwh`` [MWh] both down and up (the phase it starts in is not known): the
    co-design's release rule on where the storages are. [frac], [MWh]"""
    room_lo = 0.0
    room_hi = 0.0
    for i in range(soc.size):
        if e_rated[i] > 0:
            room_lo += (soc[i] - soc_min[i] - release_margin) * e_rated[i]
            room_hi += (soc_max[i] - release_margin - soc[i]) * e_rated[i]
    return room_lo >= need_mwh and room_hi >= need_mwh
