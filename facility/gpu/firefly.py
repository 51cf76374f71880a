"""Firefly: a software secondary load that fills the primary job's low-power phases.

Model (after Choukse et al., arXiv:2508.14318 §IV-A), per rack group as a sequential pass:

* **Telemetry.** The controller reads the primary job's power (MPS block-activity / power
  counters) ``latency_s`` late: it sees ``d[k - L]`` with ``L = ceil(latency_s / dt_s)``
  (exactly ``latency_s`` when it is a multiple of ``dt_s``). Nothing is assumed before
  ``t = 0``: the secondary load cannot start before ``L`` steps have passed.
* **Fill.** While the job runs and the delayed reading is below ``trigger_frac`` x TDP, the
  secondary load (GEMMs) runs and lifts the GPU to ``target_frac`` x TDP:
  ``p = max(d, P_target)``. When the primary computes at or above the target while the
  secondary still runs (the ``latency_s`` after the compute phase restarts), the GPU is
  saturated, the power stays at the primary's, and only contention is paid.
* **Back-off.** Without per-process counters the secondary load must pause to re-read them:
  after every ``backoff_every_s`` of continuous activity it pauses for ``backoff_s`` (the
  power dips to the demand). The activity clock restarts when the fill stops.
* **Contention.** While the secondary load runs next to the primary job (MPS), the primary
  progresses ``contention_frac`` slower: lost time ``contention_frac x overlap_s``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from facility.gpu.smoothing import steps_for

__all__ = ["apply_firefly", "run_firefly"]


@nb.njit(cache=True, nogil=True)
def _firefly_kernel(p_w, running, trigger_w, target_w, lat_n, every_n, pause_n, out, fill_j,
                    active_n, n_starts):
    n_g, n_t = p_w.shape
    for g in range(n_g):
        trig = trigger_w[g]
        tgt = target_w[g]
        c = 0           # steps since the secondary load started (0 = not running)
        f = 0.0
        a = 0
        s = 0
        for k in range(n_t):
            d = p_w[g, k]
            act = False
            if running[g, k] and k >= lat_n and p_w[g, k - lat_n] < trig:
                act = True
            if act:
                if c == 0:
                    s += 1
                c += 1
                if every_n > 0 and pause_n > 0 and ((c - 1) % every_n) >= every_n - pause_n:
                    act = False   # backing off: counters re-read, secondary paused
            else:
                c = 0
            if act:
                a += 1
                if d < tgt:
                    out[g, k] = tgt
                    f += tgt - d
                else:
                    out[g, k] = d
            else:
                out[g, k] = d
        fill_j[g] = f
        active_n[g] = a
        n_starts[g] = s


def apply_firefly(p_w, running, dt_s, tdp_w, trigger_frac, target_frac, latency_s,
                  backoff_every_s=0.0, backoff_s=0.0, *, info=None):
    """Fill low-power phases with a secondary load after a telemetry delay.

    Parameters
    ----------
    p_w : numpy.ndarray, shape (G, T)
        Primary job's power of one GPU of each group. [W per GPU]
    running : numpy.ndarray of bool, shape (G, T)
        True while the primary job runs (the secondary load only runs next to it).
    dt_s : float
        Time step. [s]
    tdp_w : float or array_like, shape (G,)
        TDP of the groups' GPUs. [W]
    trigger_frac : float
        Launch the secondary load below this power. [frac of TDP]
    target_frac : float
        Power the secondary load fills up to. [frac of TDP]
    latency_s : float
        Telemetry + launch delay; rounded up to whole steps. [s]
    backoff_every_s : float
        Period of the back-off (0 = none). [s]
    backoff_s : float
        Length of each back-off pause. [s]
    info : dict, optional
        If given, receives ``fill_j`` (G,) fill energy [J per GPU], ``active_s`` (G,) time the
        secondary load ran [s], ``n_starts`` (G,) number of launches, ``latency_steps``.

    Returns
    -------
    p_w : numpy.ndarray, shape (G, T)
        Power with the fill-in. [W per GPU]
    fill_w : numpy.ndarray, shape (G, T)
        Power added by the secondary load, ``p_w_out - p_w``. [W per GPU]

    Notes
    -----
    ``p[k] = max(d[k], T·P_tdp)`` if ``running[k]`` and ``d[k-L] < R·P_tdp`` and not backing
    off, else ``d[k]``.
    """
    p_w = np.ascontiguousarray(p_w, dtype=float)
    out, inf = run_firefly(p_w, running, dt_s, tdp_w, trigger_frac, target_frac, latency_s,
                           backoff_every_s, backoff_s)
    if info is not None:
        info.update(inf)
    return out, out - p_w


def run_firefly(p_w, running, dt_s, tdp_w, trigger_frac, target_frac, latency_s,
                backoff_every_s=0.0, backoff_s=0.0):
    """:func:`apply_firefly` without the ``fill_w`` array: returns ``(p_w, info)``."""
    p_w = np.ascontiguousarray(p_w, dtype=float)
    if p_w.ndim != 2:
        raise ValueError(f"p_w must be 2-D (groups, steps), got shape {p_w.shape}")
    n_g = p_w.shape[0]
    running = np.ascontiguousarray(running, dtype=np.bool_)
    if running.shape != p_w.shape:
        raise ValueError(f"running has shape {running.shape}, expected {p_w.shape}")
    if not dt_s > 0:
        raise ValueError(f"dt_s = {dt_s} s must be > 0")
    if target_frac < trigger_frac:
        raise ValueError(f"target_frac = {target_frac:g} must be ≥ trigger_frac = {trigger_frac:g}")
    if latency_s < 0 or backoff_every_s < 0 or backoff_s < 0:
        raise ValueError("latency_s, backoff_every_s and backoff_s must be ≥ 0 s")
    tdp = np.broadcast_to(np.asarray(tdp_w, dtype=float), (n_g,))
    every_n = steps_for(backoff_every_s, dt_s)
    pause_n = min(steps_for(backoff_s, dt_s), every_n) if every_n else 0
    lat_n = steps_for(latency_s, dt_s)
    out = np.empty_like(p_w)
    fill_j = np.zeros(n_g)
    active_n = np.zeros(n_g, dtype=np.int64)
    n_starts = np.zeros(n_g, dtype=np.int64)
    _firefly_kernel(p_w, running, np.ascontiguousarray(trigger_frac * tdp),
                    np.ascontiguousarray(target_frac * tdp), lat_n, every_n, pause_n, out,
                    fill_j, active_n, n_starts)
    return out, dict(fill_j=fill_j * dt_s, active_s=active_n * dt_s, n_starts=n_starts,
                     latency_steps=lat_n)
