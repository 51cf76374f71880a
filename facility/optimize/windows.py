"""Window limits on the PCC power: which lag bounds the spec sets, and their O(N) rows.

Every window limit of ``docs/contract.md`` §4 is a *lag bound*: with the PCC power sampled
as P[0..T-1] and k = ``window_steps(window_s, dt_s)``,

    P[t2] - P[t1] <= B_up    and    P[t1] - P[t2] <= B_down    for all 0 < t2 - t1 <= k.

============================== ================== ===================== =====================
spec limit                     k                  B_up [MW]             B_down [MW]
============================== ================== ===================== =====================
``max_ramp_up_mw_per_s``       steps(τ)           max_ramp_up · τ       -
``max_ramp_down_mw_per_s``     steps(τ)           -                     max_ramp_down · τ
``max_ramp_mw_per_min``        steps(60 s)        max_ramp_mw_per_min   max_ramp_mw_per_min
``max_window_swing_mw``        steps(window_s)    max_window_swing_mw   max_window_swing_mw
============================== ================== ===================== =====================

(τ = ``ramp_window_s``.) The per-minute and swing limits bound max - min over the trailing
window [t-k, t], which is the largest |P[t2] - P[t1]| over pairs at most k apart, so the same
lag bound expresses them exactly. A bound is implied by another of the same direction with
k' >= k and B' <= B; implied bounds are dropped (exact).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facility.metrics import window_steps

__all__ = ["LagBound", "lag_bounds", "add_lag_bound_rows"]


@dataclass(frozen=True)
class LagBound:
    """One direction of one window limit.

    Attributes
    ----------
    limit : str
        Spec key it comes from (e.g. ``max_window_swing_mw``).
    direction : str
        ``"up"`` (rises) or ``"down"`` (falls).
    k : int
        Largest lag in steps. [-]
    bound_mw : float
        Largest allowed change of P within the lag. [MW]
    """

    limit: str
    direction: str
    k: int
    bound_mw: float


def lag_bounds(spec, dt_s: float, margin_frac: float = 0.0) -> list[LagBound]:
    """Lag bounds of a spec on a grid of ``dt_s``, implied ones removed.

    Parameters
    ----------
    spec : facility.config.schema.SpecConfig
    dt_s : float
        Time step. [s]
    margin_frac : float
        Share by which every bound is tightened (``optimize.limit_margin_frac``). [frac]

    Returns
    -------
    list of LagBound
    """
    out: list[LagBound] = []
    tau = spec.ramp_window_s
    if spec.max_ramp_up_mw_per_s is not None:
        out.append(LagBound("max_ramp_up_mw_per_s", "up", window_steps(tau, dt_s),
                            spec.max_ramp_up_mw_per_s * tau))
    if spec.max_ramp_down_mw_per_s is not None:
        out.append(LagBound("max_ramp_down_mw_per_s", "down", window_steps(tau, dt_s),
                            spec.max_ramp_down_mw_per_s * tau))
    for key, w in (("max_ramp_mw_per_min", 60.0), ("max_window_swing_mw", spec.window_s)):
        b = getattr(spec, key)
        if b is not None:
            k = window_steps(w, dt_s)
            out += [LagBound(key, "up", k, b), LagBound(key, "down", k, b)]
    out = [LagBound(b.limit, b.direction, b.k, b.bound_mw * (1.0 - margin_frac)) for b in out]
    keep = []
    for i, a in enumerate(out):
        implied = any(j != i and b.direction == a.direction and b.k >= a.k and b.bound_mw <= a.bound_mw
                      and (b.k, -b.bound_mw, -j) > (a.k, -a.bound_mw, -i)
                      for j, b in enumerate(out))
        if not implied:
            keep.append(a)
    return keep


def add_lag_bound_rows(lp, lb: LagBound, pcc_terms, pcc_const: np.ndarray, n_hist: int) -> None:
    """Add the rows of one lag bound, linearized exactly with O(N) sliding-window minima.

    With q = σ P (σ = +1 for rises, -1 for falls) the bound reads
    q[u] - B <= min(q[u-k .. u-1]) for every u. The trailing window of k samples spans at
    most two blocks of a fixed partition of the time axis into blocks of k samples (van Herk /
    Gil-Werman), so its minimum is the smaller of a *suffix* minimum of the first block and a
    *prefix* minimum of the second. The LP carries lower envelopes instead of minima:

    .. math::

        g_u \\le q_u,\\quad g_u \\le g_{u-1}\\ (u\\ \\text{not a block start}),\\qquad
        h_u \\le q_u,\\quad h_u \\le h_{u+1}\\ (u\\ \\text{not a block end}),

        q_u - g_{u-1} \\le B,\\qquad q_u - h_{u-k} \\le B\\ (\\text{if } u-k \\text{ is not a block start}).

    Any feasible P with the true minima as g, h satisfies the rows; conversely g and h are
    lower bounds of every q in their block range, so the rows imply the lag bound: the
    linearization is exact, with 2 columns and at most 6 rows per step.

    ===========  =======  ===================================================
    symbol       unit     meaning
    ===========  =======  ===================================================
    q_u          MW       σ · PCC power at step u (history steps are constants)
    g_u, h_u     MW       prefix / suffix lower envelope of q in u's block
    k            -        largest lag (block length)
    B            MW       bound of the limit
    ===========  =======  ===================================================

    Parameters
    ----------
    lp : facility.optimize.lp.LinearProgram
    lb : LagBound
    pcc_terms : list of (col (U,), coef)
        Column terms of the PCC power on the extended axis (history steps: col = -1).
    pcc_const : numpy.ndarray (U,)
        Constant part of the PCC power (load, or the history). [MW]
    n_hist : int
        Number of history samples at the start of the axis; no row ends inside them. The rows
        that hold them as constants (upper bound σ·P_hist) are listed in ``lp.history_rows``
        as ``(rows, history index, σ)``, so a persistent model can change the history.
    """
    sg = 1.0 if lb.direction == "up" else -1.0
    U = pcc_const.size
    k = lb.k
    u = np.arange(U)
    name = f"{lb.limit}:{lb.direction}"
    g = lp.add_columns(f"{name}:g", U, lb=-np.inf, ub=np.inf)
    h = lp.add_columns(f"{name}:h", U, lb=-np.inf, ub=np.inf)
    neg = [(c, -sg * np.broadcast_to(v, (U,))) for c, v in pcc_terms]
    t_of = u - n_hist
    # envelopes below q
    bg = lp.add_rows("window_envelope", [(g, 1.0)] + neg, -np.inf, sg * pcc_const, t=t_of, soft=False)
    bh = lp.add_rows("window_envelope", [(h, 1.0)] + neg, -np.inf, sg * pcc_const, t=t_of, soft=False)
    if n_hist:
        hu = np.arange(n_hist)
        lp.history_rows.append((np.concatenate([bg.start + hu, bh.start + hu]),
                                np.concatenate([hu, hu]), sg))
    inner = u[(u % k) != 0]
    lp.add_rows("window_envelope", [(g[inner], 1.0), (g[inner - 1], -1.0)], -np.inf, 0.0,
                t=t_of[inner], soft=False)
    notlast = u[((u % k) != k - 1) & (u + 1 < U)]
    lp.add_rows("window_envelope", [(h[notlast], 1.0), (h[notlast + 1], -1.0)], -np.inf, 0.0,
                t=t_of[notlast], soft=False)
    # window rows for every u >= max(1, n_hist): window [a, b] = [max(u-k, 0), u-1]
    u2 = u[u >= max(1, n_hist)]
    if u2.size == 0:
        return
    a = np.maximum(u2 - k, 0)
    b = u2 - 1
    pos = [(c[u2], sg * np.broadcast_to(v, (U,))[u2]) for c, v in pcc_terms]
    # prefix envelope of b's block: covers [start(b), b]; exact alone when a is a block start
    lp.add_rows(name, pos + [(g[b], -1.0)], -np.inf, lb.bound_mw - sg * pcc_const[u2],
                t=t_of[u2], soft=True)
    two = (a % k) != 0
    u3, a3 = u2[two], a[two]
    pos3 = [(c[u3], sg * np.broadcast_to(v, (U,))[u3]) for c, v in pcc_terms]
    lp.add_rows(name, pos3 + [(h[a3], -1.0)], -np.inf, lb.bound_mw - sg * pcc_const[u3],
                t=t_of[u3], soft=True)
