"""The fast guard: the spec's rolling-window and ramp limits as a causal bound on the next PCC
power, given the PCC history already measured.

Every linear limit of the spec (``facility.metrics``) is of one form on the sample grid: a
window of k steps (``k = floor(window / dt)``, the samples ``P[t-k] … P[t]``) in which the
newest sample may rise at most ``up`` above the window's minimum and fall at most ``dn``
below its maximum:

* ``max_window_swing_mw`` L over ``window_s``: ``up = dn = L``;
* ``max_ramp_up_mw_per_s`` / ``max_ramp_down_mw_per_s`` over ``ramp_window_s`` τ:
  ``up = R_up τ``, ``dn = R_down τ`` (the metric's max over t1 < t2 ≤ t1 + τ);
* ``max_ramp_mw_per_min`` R over 60 s: ``up = dn = R``.

So ``P[t]`` keeps every limit where it lies in ``[max over the window − dn, min over the
window + up]`` for each of them. The guard clips the outer controller's PCC set-point to the
intersection of those intervals, narrowed by ``guard_margin_frac`` (losses between storage and
PCC, measurement error), and the storage takes the difference. The window extrema come from
monotone deques (O(1) amortized per step), kept in arrays so the closed loop can stop and
resume (MPC re-plans).

Pure numba helpers, called from :func:`facility.control.kernel.control_loop`;
:func:`guard_limits` builds their arrays from a spec's window limits
(:func:`facility.control.crash.window_limits`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from facility.control.crash import window_limits

__all__ = ["guard_limits", "new_guard_state", "guard_bounds", "guard_shift", "guard_breach", "guard_push",
           "guard_info", "guard_events"]


def guard_limits(spec, dt_s: float, margin_frac: float) -> tuple[np.ndarray, np.ndarray]:
    """The spec's linear limits as guard rows.

    Parameters
    ----------
    spec : facility.config.schema.SpecConfig
        Limits; those that are None are left out.
    dt_s : float
        Step. [s]
    margin_frac : float
        The guard holds ``(1 - margin_frac)`` of each limit. [frac]

    Returns
    -------
    (numpy.ndarray (C,) int64, numpy.ndarray (C, 4))
        Window steps k, and per row ``[up, dn, up_raw, dn_raw]``: the largest rise above the
        window's minimum and fall below its maximum the guard allows (margined) and the spec
        allows (raw); one row per limit of :func:`facility.control.crash.window_limits`, in
        its order (:func:`guard_bounds` takes the tightest over the rows). [-], [MW]
    """
    rows = window_limits(spec, dt_s)
    k = np.array([n for n, _, _ in rows], dtype=np.int64)
    lim = np.zeros((len(rows), 4))
    for c, (_, d, u) in enumerate(rows):
        lim[c] = ((1.0 - margin_frac) * u, (1.0 - margin_frac) * d, u, d)
    return k, lim


def new_guard_state(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empty deques for window steps ``k`` (C,): indices ``(2C, max k + 2)`` (row 2c the
    window minimum's, 2c + 1 the maximum's) and ``(2C, 2)`` [head, count]."""
    cap = int(k.max()) + 2 if k.size else 1
    return np.zeros((2 * k.size, cap), dtype=np.int64), np.zeros((2 * k.size, 2), dtype=np.int64)


@njit(cache=True, inline="always")
def _front(q, qs, r, t_min):
    """Index at the front of deque r after dropping those older than ``t_min`` (-1: empty)."""
    cap = q.shape[1]
    h = qs[r, 0]
    n = qs[r, 1]
    while n > 0 and q[r, h] < t_min:
        h = (h + 1) % cap
        n -= 1
    qs[r, 0] = h
    qs[r, 1] = n
    return q[r, h] if n > 0 else -1


@njit(cache=True)
def guard_bounds(t, p, k, lim, q, qs):
    """Bounds on ``p[t]`` from the history ``p[t-k] … p[t-1]`` of every guard row.

    Returns
    -------
    (float, float, float, float, bool)
        ``lo, hi`` (margined), ``lo_raw, hi_raw`` (the spec's) [MW] and whether any row has
        history (False at t = 0: nothing is bounded).
    """
    lo = -np.inf
    hi = np.inf
    lo_r = -np.inf
    hi_r = np.inf
    seen = False
    for c in range(k.size):
        i_min = _front(q, qs, 2 * c, t - k[c])
        i_max = _front(q, qs, 2 * c + 1, t - k[c])
        if i_min < 0:
            continue
        seen = True
        hi = min(hi, p[i_min] + lim[c, 0])
        lo = max(lo, p[i_max] - lim[c, 1])
        hi_r = min(hi_r, p[i_min] + lim[c, 2])
        lo_r = max(lo_r, p[i_max] - lim[c, 3])
    return lo, hi, lo_r, hi_r, seen


@njit(cache=True)
def guard_push(t, p, k, q, qs):
    """Add sample ``p[t]`` to every deque (minimum rows keep increasing values, maximum rows
    decreasing ones), dropping what the next step's windows no longer hold."""
    cap = q.shape[1]
    for r in range(q.shape[0]):
        is_max = (r % 2) == 1
        _front(q, qs, r, t + 1 - k[r // 2])
        h = qs[r, 0]
        n = qs[r, 1]
        while n > 0:
            b = q[r, (h + n - 1) % cap]
            if (is_max and p[b] <= p[t]) or ((not is_max) and p[b] >= p[t]):
                n -= 1
            else:
                break
        if n == cap:             # cannot happen with cap = k + 2; keep the newest
            h = (h + 1) % cap
            n -= 1
        q[r, (h + n) % cap] = t
        qs[r, 0] = h
        qs[r, 1] = n + 1


@njit(cache=True)
def guard_shift(close_gap, gap_target, m, sp, rec, xr, fast_idx, lo, hi):
    """How far the guard moves the PCC set-point [MW]: the PCC the controller asks for (gap
    mode: the grid target plus what the storages' recovery and reservoir terms add to it; else
    the measured load plus every set-point) clipped to ``[lo, hi]``; where the history already
    breaks a limit (``lo > hi``) the middle, the least breach."""
    if close_gap:
        req = gap_target + rec[fast_idx]
        for i in range(sp.size):
            if i != fast_idx:
                req += rec[i] + xr[i]
    else:
        req = m
        for i in range(sp.size):
            req += sp[i]
    want = min(max(req, lo), hi) if lo <= hi else 0.5 * (lo + hi)
    return want - req


@njit(cache=True)
def guard_breach(t, pcc, lo_raw, hi_raw, out_lim, g_cnt):
    """Whether the PCC ``pcc`` of step t left the spec's own interval: ``(who, over)``, the
    first storage that saturated in the step (-1: none; the measurement or a converter's lag
    missed it) and by how much [MW] (0: no breach). Counts the step in ``g_cnt`` (S + 1, 8) by
    storage and limit (row S: none saturated)."""
    over = max(pcc - hi_raw, lo_raw - pcc)
    if over <= 1e-6:
        return -1, 0.0
    n_sto = out_lim.shape[0]
    who = -1
    for i in range(n_sto):
        if out_lim[i, t] > 0:
            g_cnt[i, out_lim[i, t]] += 1
            if who < 0:
                who = i
    if who < 0:
        g_cnt[n_sto, 0] += 1
    return who, over


def guard_info(names: list[str], g_cnt: np.ndarray, n_clipped: int, n_steps: int,
               limit_names: dict) -> dict:
    """The guard's counters for ``info["guard"]``: steps it moved the PCC set-point, steps the
    PCC broke a limit anyway, and those by storage and saturated resource (``limit_names``:
    power, min_soc, max_soc, network; ``none``: no storage saturated)."""
    by: dict = {}
    for i, n in enumerate(names + ["none"]):
        row = {("none" if n == "none" else limit_names.get(j, str(j))): int(g_cnt[i, j])
               for j in range(g_cnt.shape[1]) if g_cnt[i, j]}
        if row:
            by[n] = row
    return {"clipped_steps": int(n_clipped), "clipped_frac": float(n_clipped) / n_steps,
            "breach_steps_by_storage": by, "breach_count": int(g_cnt.sum())}


def guard_events(names: list[str], breaches, dt_s: float, limit_names: dict, cap: int = 20) -> list[dict]:
    """One ``guard_breach`` event per breach (consecutive steps count once; the first ``cap``)
    from ``breaches`` = iterable of (step, storage index or -1, limit code, excess [MW]),
    naming the storage and the resource that saturated."""
    out: list[dict] = []
    for step, i, code, over in breaches:
        if len(out) >= cap:           # the rest are counted in info["guard"]
            break
        if i >= 0:
            lim = limit_names.get(int(code), "?")
            who = f"{names[i]} saturated at its {lim} limit"
            ev = {"storage": names[i], "limit": lim}
        else:
            who = "no storage saturated (measurement delay or a converter's lag)"
            ev = {"storage": None, "limit": None}
        out.append({"t_s": float(step * dt_s), "kind": "guard_breach", **ev, "excess_mw": float(over),
                    "detail": f"the fast guard could not hold the spec's window/ramp limits: PCC "
                              f"{over:.3g} MW beyond what the measured history allows; {who}"})
    return out
