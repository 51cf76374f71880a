r"""Rows of the relaxation on groups of steps where the load moves within a group.

At a 10-ms step the interior strategy brackets the full LP between a restriction and a
relaxation on groups of g steps (:mod:`facility.optimize.model.pcc_grid`). The relaxation averages
every per-step column over a group, and with it the load: the one step where the storage
rating binds, at a load edge or at the least load of a plateau, is averaged away. The rows
here give it back what every plan of the full LP must meet there: the rating at the steps of
a group given how far the PCC power can move within it (:func:`add_group_power_rows`), and
the rating at a group's extreme-load step given the mean PCC power of the groups within a
window's reach (:func:`add_neighbour_power_rows`). Both hold for every averaged plan of the
full LP, so the relaxation stays a relaxation (docs/formulation.md, *Where the load moves
within a group*).
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.formulation import Model
from facility.optimize.model.windows import LagBound, add_lag_bound_rows, lag_bounds

__all__ = [
    "GROUP_POWER_MIN_GAIN_MW",
    "add_group_power_rows",
    "add_neighbour_power_rows",
    "group_power_offsets",
    "within_group_range_mw",
]


def within_group_range_mw(spec, dt_s: float, margin_frac: float, g: int) -> float:
    """Largest range max − min the PCC power of a plan of the full LP can span within a group
    of g consecutive steps: a lag bound of k ≥ g − 1 steps covers every pair of the group (a
    rise at most B_up, a fall at most B_down), and the dynamic range bounds it too; inf when
    no limit does. [MW]"""
    cover = [b for b in lag_bounds(spec, dt_s, margin_frac) if b.k >= g - 1]
    span = max(min((b.bound_mw for b in cover if b.direction == d), default=np.inf)
               for d in ("up", "down"))
    if spec.max_dynamic_range_mw is not None:
        span = min(span, spec.max_dynamic_range_mw * (1.0 - margin_frac))
    return float(span)


#: Group power rows are added where they raise the rating a group needs by more than this
#: over what its mean already asks. [MW]
GROUP_POWER_MIN_GAIN_MW = 1e-6


def group_power_offsets(load_groups: np.ndarray, range_mw: float) -> tuple[np.ndarray, np.ndarray]:
    r"""α_j, β_j of :func:`add_group_power_rows` for the load of each group (rows of
    ``load_groups``, (G, g)) and the PCC power's range within a group R [MW]:

    .. math::  α_j = -\operatorname{mean}_t \min(L_t, \min_j L + R),\qquad
               β_j = \operatorname{mean}_t \max(L_t, \max_j L - R).
    """
    x = np.asarray(load_groups, dtype=float)
    lo, hi = x.min(axis=1, keepdims=True), x.max(axis=1, keepdims=True)
    return -np.minimum(x, lo + range_mw).mean(axis=1), np.maximum(x, hi - range_mw).mean(axis=1)


def add_group_power_rows(m: Model, Q: np.ndarray, load_groups: np.ndarray, range_mw: float) -> int:
    r"""Rows of the relaxation on groups that carry the rating a group's steps need, where the
    load moves within the group by more than the PCC power can follow.

    Averaged over a group j, the power rows only ask :math:`\sum_s \hat P_s \ge |Q_j - \bar L_j|`
    (Q_j: the group's mean PCC power). In a plan of the full LP every step has
    :math:`|P_t - L_t| = |\sum_s (p^{ch}_{s,t} - p^{dis}_{s,t})| \le \sum_s \hat P_s`, and
    within the group P_t = Q_j + u_t with :math:`\sum_t u_t = 0` and
    :math:`\max u - \min u \le R` (:func:`within_group_range_mw`). The least that
    :math:`\max_t (u_t - L_t)` can be under those two conditions is α_j
    (:func:`group_power_offsets`: with M = max u, every u_t ≥ M − R and u_t ≤ z + L_t give
    M ≤ z + min L + R and u_t ≤ z + min(L_t, min L + R); the sum over the group is 0, so
    z ≥ α_j; the bound is met by u_t = z + min(L_t, min L + R)); β_j the same for
    :math:`\max_t (L_t - u_t)`. So every plan of the full LP, averaged, meets

    .. math::  \sum_s \hat P_s - Q_j \ge α_j,\qquad \sum_s \hat P_s + Q_j \ge β_j,

    and the relaxation with them stays a relaxation. They differ from what the mean asks
    (α_j = −L̄_j, β_j = L̄_j) only where the load spans more than R within the group: the
    edges of a measured trace at 10 ms on groups of 4 (up to 18 MW in 40 ms, R = 2 MW). On the
    first 300 s of the measured-format trace hour (``benchmarks/bench_sizing.py``'s storage
    and spec) the relaxation's optimum rises from 7,044,540 to 7,045,812 USD (the held
    restriction: 7,054,455), at the same solve time. Rows are added only where they ask more
    (by :data:`GROUP_POWER_MIN_GAIN_MW`).
    Returns the number of rows added.
    """
    if not np.isfinite(range_mw) or not m.cols:
        return 0
    x = np.asarray(load_groups, dtype=float)
    a, b = group_power_offsets(x, range_mw)
    mean = x.mean(axis=1)
    pr = [c["p_rated"][0] for c in m.cols.values()]
    n = 0
    for sign, off, plain in ((-1.0, a, -mean), (1.0, b, mean)):
        j = np.flatnonzero(off > plain + GROUP_POWER_MIN_GAIN_MW)
        if j.size:
            m.lp.add_rows("group_power", [(np.full(j.size, c), 1.0) for c in pr] + [(Q[j], sign)],
                          off[j], np.inf, t=j, soft=False)
            n += j.size
    return n


def add_neighbour_power_rows(m: Model, Q: np.ndarray, load_groups: np.ndarray, spec,
                             dt_s: float, margin_frac: float, *, max_window_s: float = np.inf) -> int:
    r"""Rows of the relaxation on groups that see a group's extreme load against its
    neighbours' mean PCC power.

    In a plan of the full LP every step s needs :math:`\sum_s \hat P_s \ge P_s - L_s` and
    :math:`\ge L_s - P_s`. A window limit of k steps ties P_s to every step t of a group i
    whose steps all lie within k of s (|i − j| ≤ ⌊(k + 1)/g⌋ − 1 groups for s in group j):
    P_s ≥ P_t − B for a t after s when B bounds rises (before s: falls), so
    P_s ≥ max_{t ∈ i} P_t − B ≥ Q_i − B, and P_s ≤ Q_i + B the other way round. At the step
    of group j with the least load, and at the one with the most,

    .. math::

        \sum_s \hat P_s \ge \max_{i} Q_i - B - \min_{t \in j} L_t,\qquad
        \sum_s \hat P_s \ge \max_{t \in j} L_t - B - \min_{i} Q_i,

    i over the groups before j in reach (B the falls' bound in the first row, the rises' in
    the second) and after it (the other way round). Every averaged plan of the full LP meets
    them. Written with the envelopes of :func:`~facility.optimize.model.windows.add_lag_bound_rows`
    (the later sequence: the rating less the extreme load; the future windows on the reversed
    axis): two columns and about four rows per group and family. Windows of ``max_window_s``
    or longer are left out (:mod:`~facility.optimize.model.pcc_grid` passes its ``LONG_WINDOW_S``:
    the per-minute limit's block rows reach far; fewer rows: still a relaxation).
    :mod:`~facility.optimize.model.pcc_grid` adds none where a job starts, stops or checkpoints
    (:func:`~facility.optimize.model.pcc_grid.has_job_transients`).

    Why: the group means average away the single step where the rating binds. On 60 s of the
    measured-format trace hour at 10 ms, the full LP's optimum (7,141,260 USD) drops the PCC
    power by R at a load edge and ramps it back within a second, its rating binding at the
    one step of least load, 0.066 MW below its group's mean; the relaxation on groups of 4
    lay 7.0e-4 below the optimum, with these rows 1.1e-4 (7,140,463 USD; 1.7 s against
    1.0 s). Returns the number of families added.
    """
    if not m.cols:
        return 0
    x = np.asarray(load_groups, dtype=float)
    G, g = x.shape
    lo, hi = x.min(axis=1), x.max(axis=1)
    pr = [c["p_rated"][0] for c in m.cols.values()]
    zeros = np.zeros(G)
    n = 0
    for lb in lag_bounds(spec, dt_s, margin_frac):
        kk = (lb.k + 1) // g - 1
        if kk < 1 or lb.k * dt_s >= max_window_s:
            continue
        # (rows' direction σ, future window?, the rating's coefficient, extreme load):
        # σ = −1 reads max Q(window) − (ΣP̂ + L) ≤ B, σ = +1 reads (L − ΣP̂) − min Q(window) ≤ B
        if lb.direction == "down":  # falls: a past group above the least load's step, the
            fams = ((-1.0, False, 1.0, lo), (1.0, True, -1.0, hi))  # most load's above a future one
        else:
            fams = ((1.0, False, -1.0, hi), (-1.0, True, 1.0, lo))
        for sg, future, coef, load in fams:
            r = slice(None, None, -1) if future else slice(None)
            # a name of its own per family (the columns' boxes are found by name)
            name = f"{lb.limit}:{lb.direction}:rating_{'future' if future else 'past'}"
            add_lag_bound_rows(m.lp, LagBound(name, "up" if sg > 0 else "down", kk, lb.bound_mw),
                               [(Q[r], 1.0)], zeros, 0,
                               later_terms=[(np.full(G, c), coef) for c in pr], later_const=load[r])
            n += 1
    return n
