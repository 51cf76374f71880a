r"""Directions of the storage power that the window limits force: a tighter lower bound.

The LP relaxes complementarity (:func:`facility.optimize.model.formulation.add_power_limits`): it
may charge and discharge a storage at once and burn the losses as a "resistor" where the SoC
would pass its upper bound, which no converter can do. Across a job start, a checkpoint or a
stop under a per-minute limit that resistor is what the LP's optimum uses, and no LP bound
sees what a realizable plan pays instead (1-6 % on the benchmark's start/stop loads).

But at most of those steps the direction of a realizable plan is not free. The PCC power
P_t may move by at most D(n) over n steps (the window limits, chained), and with one storage
the PCC power is the load plus the storage's net power q_t = P_t − L_t, |q_t| ≤ P̂. So

.. math::
    P_t \ge \max_s \big(L_s - \hat P^{max} - D(s, t)\big) =: \underline P_t,\qquad
    P_t \le \min_s \big(L_s + \hat P^{max} + D(t, s)\big) =: \overline P_t,

with D(s, t) the bound of a rise (s after t) or a fall (s before t) over |s − t| steps, and
P̂^max any upper bound of the power rating of an optimal plan. Where
:math:`\underline P_t \ge L_t` every such plan has q_t ≥ 0, so with complementarity
p^dis_t = 0; where :math:`\overline P_t \le L_t`, p^ch_t = 0. Those upper bounds of 0 are valid
rows of the problem with complementarity (for every plan at most as costly as the plan that
gave P̂^max), so the LP with them is still a relaxation of it, and its optimum a lower bound
of the realizable optimum: tighter, since the resistor is gone from those steps.

*The chained bound* (:func:`lag_reach_mw`): a lag bound "P rises by at most B within k
steps" chains to ⌈n/k⌉ B over n steps, and bounds of several windows combine (a minute's
20 MW and then a second's 2 MW): D(n) = min_f (B_f + D(n − k_f)), D(n ≤ 0) = 0, the least
cost of covering n steps with hops of the windows' lengths; a dynamic range caps it.

*P̂^max*: c_P P̂ ≤ the plan's cost (every other cost ≥ 0) at first; tighter, the largest P̂
of the LP relaxation (with the directions that bound forces) whose cost is at most the plan's
(an LP of its own, bounded by weak duality: :func:`facility.optimize.certificates.bracket_jobs.rating_bound_at`).
On the benchmark's 5-min start/stop load at 0.1 s (3,000 steps, the full LP in a scratch
run, D as ⌈n/k⌉ B without the chaining): P̂^max 56.7 MW from the cost alone fixed 2,615
directions and lifted the LP bound from 8,425,096 to 8,491,614 USD (plan 8,510,041: gap
1.0e-2 → 2.2e-3); the relaxation's largest P̂ within the plan's cost, 43.25 MW, fixed 2,958
and lifted it to 8,509,574 (gap 5.5e-5). With the chained D: 2,791 and 2,970 directions.

*Where it does not apply* (:func:`applies`): several storages (one may charge while another
discharges: a resistor a real site can build), GPU levers (the burn lever realizes the
resistor; a floor or cap moves the load), a PCC history (receding horizon).
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.windows import lag_bounds

__all__ = ["applies", "lag_reach_mw", "window_extreme", "pcc_reach_mw", "cost_rating_bound_mw",
           "forced_directions",
           "merge_directions", "on_groups", "n_forced"]


def applies(pb) -> bool:
    """Whether the forced directions hold for this problem (module text): exactly one
    storage, no GPU levers, no PCC history, and at least one window limit."""
    return (len(pb.storages) == 1 and pb.levers is None and pb.p_pcc_history_mw is None
            and bool(lag_bounds(pb.spec, pb.dt_s, pb.margin_frac)))


def lag_reach_mw(bounds: list, direction: str, n_max: int, dynamic_range_mw: float | None = None
                 ) -> np.ndarray:
    """The most the PCC power may change in one direction over n = 0..n_max steps. [MW]

    .. math::  D(n) = \\min_f \\big(B_f + D(n - k_f)\\big),\\quad D(n \\le 0) = 0,

    over the lag bounds f of that direction (rises ``"up"`` or falls ``"down"``: each allows
    B_f within k_f steps), capped by the dynamic range. Every pair of samples n apart is
    joined by a chain of hops of at most k_f steps, each within its bound, so the difference
    is at most D(n). Computed in slices of the shortest k (each slice needs only earlier ones).

    Returns
    -------
    numpy.ndarray (n_max + 1,)
        inf where no bound of that direction exists.
    """
    fam = [(int(b.k), float(b.bound_mw)) for b in bounds if b.direction == direction and b.k >= 1]
    d = np.full(n_max + 1, np.inf)
    d[0] = 0.0
    if fam:
        k_min = min(k for k, _ in fam)
        for a in range(1, n_max + 1, k_min):
            n = np.arange(a, min(a + k_min, n_max + 1))
            d[n] = np.min([b + d[np.maximum(n - k, 0)] for k, b in fam], axis=0)
    if dynamic_range_mw is not None:
        d[1:] = np.minimum(d[1:], dynamic_range_mw)
    return d


def window_extreme(x: np.ndarray, a: int, b: int, kind: str = "max") -> np.ndarray:
    """y_t = max (or min) of x[t + a .. t + b] within the array, ±inf where that range is
    empty (a ≤ b, either may be negative). O(T) for any width: the van Herk / Gil-Werman
    prefix and suffix extremes of blocks of the window's width."""
    x = np.asarray(x, dtype=float)
    T, w = x.size, b - a + 1
    fill = -np.inf if kind == "max" else np.inf
    acc = np.maximum if kind == "max" else np.minimum
    if w <= 0:
        return np.full(T, fill)
    # pad so that every index t + a .. t + b exists: xp[u] = x[u - a_pad]
    pad_l, pad_r = max(0, -a), max(0, b)
    n = T + pad_l + pad_r
    n_blk = -(-n // w)
    xp = np.full(n_blk * w, fill)
    xp[pad_l:pad_l + T] = x
    blk = xp.reshape(n_blk, w)
    pre = acc.accumulate(blk, axis=1).ravel()
    suf = acc.accumulate(blk[:, ::-1], axis=1)[:, ::-1].ravel()
    start = np.arange(T) + a + pad_l          # window [start, start + w - 1] in xp
    return acc(suf[start], pre[start + w - 1])


def _pieces(d: np.ndarray, first: int) -> list[tuple[int, int, float]]:
    """Runs of equal finite values of d[first:]: [(n_lo, n_hi, value), ...]."""
    n = np.arange(first, d.size)
    v = d[first:]
    ok = np.isfinite(v)
    n, v = n[ok], v[ok]
    if n.size == 0:
        return []
    cut = np.flatnonzero((np.diff(v) != 0) | (np.diff(n) != 1)) + 1
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [n.size]]) - 1
    return [(int(n[s]), int(n[e]), float(v[s])) for s, e in zip(starts, ends)]


def pcc_reach_mw(load_mw: np.ndarray, dt_s: float, spec, margin_frac: float, p_max_mw: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Least and most PCC power of any plan whose storage net power stays within ±p_max_mw,
    under the window limits and the dynamic range (module text). [MW]

    Only lags with D(n) below the load's span less ``p_max_mw`` are searched: beyond them
    neither side can pass the load at any step (``lo`` ≤ max L − p_max − D < min L), so the
    directions of :func:`forced_directions` do not change; the sides are then looser than
    they could be, never wrong. O(T) per run of equal D(n)."""
    load = np.asarray(load_mw, dtype=float)
    T = load.size
    bounds = lag_bounds(spec, dt_s, margin_frac)
    span = float(np.ptp(load)) - p_max_mw
    dr = None if spec.max_dynamic_range_mw is None else spec.max_dynamic_range_mw * (1.0 - margin_frac)
    lo = load.copy()
    hi = load.copy()
    if span <= 0 or T < 2:
        return lo - p_max_mw, hi + p_max_mw
    reach = {}
    for direction in ("up", "down"):
        n_max = max(T - 1, 1)
        # grow the lag range until D passes the span (doubling: D is nondecreasing)
        n = 64
        while True:
            n = min(n, n_max)
            d = lag_reach_mw(bounds, direction, n, dr)
            if n == n_max or d[-1] > span:
                break
            n *= 2
        reach[direction] = d
    # s after t (lag n ≥ 1): P_t ≥ L_s − D_up(n) and P_t ≤ L_s + D_down(n) (before: the mirror)
    for sign, d_lo, d_hi in ((1, reach["up"], reach["down"]), (-1, reach["down"], reach["up"])):
        for n_a, n_b, v in _pieces(d_lo, 1):
            a, b = (n_a, n_b) if sign > 0 else (-n_b, -n_a)
            lo = np.maximum(lo, window_extreme(load, a, b, "max") - v)
        for n_a, n_b, v in _pieces(d_hi, 1):
            a, b = (n_a, n_b) if sign > 0 else (-n_b, -n_a)
            hi = np.minimum(hi, window_extreme(load, a, b, "min") + v)
    return lo - p_max_mw, hi + p_max_mw


def cost_rating_bound_mw(s, upper_usd: float) -> float:
    """P̂^max from a plan's cost alone (module text): c_P P̂ ≤ ``upper_usd`` (every other cost
    is ≥ 0, so every plan at most as costly has it), within the rating's own bound P̂_hi of
    storage ``s`` (a :class:`~facility.optimize.model.storage_data.StorageData`). [MW]"""
    return min(s.p_hi, upper_usd / 1000.0 / s.c_p) if s.c_p > 0 else s.p_hi


def forced_directions(pb, p_max_mw: float) -> dict:
    """Per storage, the steps whose direction every plan with power rating ≤ ``p_max_mw``
    [MW] has (module text): ``{name: {"ch": no charge (T,), "dis": no discharge (T,)}}``
    (the columns whose upper bound may be 0). Empty where :func:`applies` is False."""
    if not applies(pb) or not np.isfinite(p_max_mw):
        return {}
    (name, s), = pb.storages.items()
    p_max = min(float(p_max_mw), float(s.max_own_p_mw))
    lo, hi = pcc_reach_mw(pb.load_mw, pb.dt_s, pb.spec, pb.margin_frac, p_max)
    load = np.asarray(pb.load_mw, dtype=float)
    return {name: {"ch": hi <= load, "dis": lo >= load}}


def merge_directions(a: dict | None, b: dict | None) -> dict | None:
    """Union of two ``{name: {side: mask}}`` direction fixes (None = none)."""
    if not a:
        return {n: {k: v.copy() for k, v in d.items()} for n, d in b.items()} if b else None
    out = {n: {k: v.copy() for k, v in d.items()} for n, d in a.items()}
    for n, d in (b or {}).items():
        for k, v in d.items():
            out.setdefault(n, {}).setdefault(k, np.zeros(v.size, bool))
            out[n][k] = out[n][k] | v
    return out


def on_groups(fixed: dict | None, g: int) -> dict | None:
    """Direction fixes on group means of g steps (the relaxation on groups): a group mean may
    be fixed only where every step of the group is (the mean of zeros); a last partial group
    is dropped, as the relaxation drops it."""
    if not fixed or g == 1:
        return fixed
    out = {}
    for n, d in fixed.items():
        out[n] = {}
        for k, v in d.items():
            G = v.size // g
            out[n][k] = v[:G * g].reshape(G, g).all(axis=1)
    return out


def n_forced(fixed: dict | None) -> int:
    """How many (storage, step) directions a fix holds."""
    return int(sum(v.sum() for d in (fixed or {}).values() for v in d.values()))
