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

__all__ = ["LagBound", "lag_bounds", "add_lag_bound_rows", "block_edges", "add_block_lag_rows"]


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


def add_lag_bound_rows(lp, lb: LagBound, pcc_terms, pcc_const: np.ndarray, n_hist: int, *,
                       later_terms=None, later_const: np.ndarray | None = None) -> None:
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
    lp : facility.optimize.model.linear_program.LinearProgram
    lb : LagBound
    pcc_terms : list of (col (U,), coef)
        Column terms of the PCC power on the extended axis (history steps: col = -1).
    pcc_const : numpy.ndarray (U,)
        Constant part of the PCC power (load, or the history). [MW]
    n_hist : int
        Number of history samples at the start of the axis; no row ends inside them. The rows
        that hold them as constants (upper bound σ·P_hist) are listed in ``lp.history_rows``
        as ``(rows, history index, σ)``, so a persistent model can change the history.
    later_terms : list of (col (U,), coef), optional
        Column terms of a second sequence r that stands for the later step of each pair: the
        rows then read σ r[u] − B ≤ min(σ q[u−k .. u−1]), the envelopes staying on q.
        :mod:`facility.optimize.model.pcc_grid` passes a group's largest PCC power as r and its
        smallest as q (rises; the other way round for falls), and the storages' rating less a
        group's extreme load against the group means. Default: q itself.
    later_const : numpy.ndarray (U,), optional
        Constant part of r (default ``pcc_const``). [MW]
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
    late = pcc_terms if later_terms is None else later_terms
    lc = pcc_const if later_const is None else np.asarray(later_const, dtype=float)
    pos = [(c[u2], sg * np.broadcast_to(v, (U,))[u2]) for c, v in late]
    # prefix envelope of b's block: covers [start(b), b]; exact alone when a is a block start
    lp.add_rows(name, pos + [(g[b], -1.0)], -np.inf, lb.bound_mw - sg * lc[u2],
                t=t_of[u2], soft=True)
    two = (a % k) != 0
    u3, a3 = u2[two], a[two]
    pos3 = [(c[u3], sg * np.broadcast_to(v, (U,))[u3]) for c, v in late]
    lp.add_rows(name, pos3 + [(h[a3], -1.0)], -np.inf, lb.bound_mw - sg * lc[u3],
                t=t_of[u3], soft=True)


def block_edges(n: int, block: int, fine_block: int, fine: np.ndarray | None = None) -> np.ndarray:
    """Edges of the blocks of :func:`add_block_lag_rows` on an axis of ``n`` steps: blocks of
    ``block`` steps, split into blocks of ``fine_block`` steps where ``fine`` (bool (n,)) is set
    anywhere inside them. Returns the start of every block and n. [steps]"""
    edges = np.arange(0, n, block)
    if fine is not None and fine_block < block and np.any(fine):
        hit = np.maximum.reduceat(np.asarray(fine, dtype=bool), edges)
        sub = [np.arange(a, min(a + block, n), fine_block) for a in edges[hit]]
        edges = np.union1d(edges, np.concatenate(sub))
    return np.append(edges, n).astype(np.int64)


def add_block_lag_rows(lp, bounds: list, pcc_col: np.ndarray, edges: np.ndarray, mode: str, *,
                       pcc_low_col: np.ndarray | None = None) -> dict:
    """Long lag bounds on block extremes: a restriction or a relaxation with few, short rows.

    The exact rows of :func:`add_lag_bound_rows` link every step to the step k before it, so a
    sparse factorization of the LP carries fronts of about k columns (its cost grows as N·k²;
    the per-minute limit at 0.1 s has k = 600). Here the time axis is cut into blocks J =
    [a_J, b_J] (:func:`block_edges`), each with its largest and smallest PCC power:

    .. math::

        M_J \\ge P_t \\ge m_J \\quad (t \\in J),\\qquad
        M_J - m_I \\le B_{up},\\quad M_I - m_J \\le B_{down}\\quad (I < J \\text{ in reach}),
        \\qquad M_J - m_J \\le \\min(B_{up}, B_{down})

    ``"restrict"`` reaches every earlier block holding a step at most k before one of J's
    (a_J − b_I ≤ k): the rows then imply the lag bound (pairs up to one block further apart
    are constrained too), so the LP's plan is feasible. ``"relax"`` reaches only the blocks
    whose every step is at most k before every step of J (b_J − a_I ≤ k): every feasible plan
    meets the rows, so the LP's optimum is a lower bound. The within-block row joins both
    directions: exact for the symmetric per-minute and swing limits, and left out by
    ``"relax"`` unless both directions are bounded over the block's length. The two differ by
    one block of lag: blocks of k/12 cost a few percent where such a limit binds (job starts
    and stops), nothing where it does not; :func:`block_edges` makes them finer there.

    Parameters
    ----------
    lp : LinearProgram
    bounds : list of LagBound
        Lag bounds on the axis of ``pcc_col`` (k in its steps).
    pcc_col : numpy.ndarray of int (U,)
        Column of the PCC power at each step of the axis.
    edges : numpy.ndarray of int
        Block starts and U (:func:`block_edges`).
    mode : str
        ``"restrict"`` or ``"relax"``.
    pcc_low_col : numpy.ndarray of int (U,), optional
        Where each step of the axis holds a range of PCC powers (a group's largest in
        ``pcc_col``, its smallest here): M_J ≥ ``pcc_col``, m_J ≤ this. Default ``pcc_col``.

    Returns
    -------
    dict
        ``{"M": cols, "m": cols, "rows": [(start, stop), ...]}`` — the row ranges of the pair
        and within-block rows (what a bound that must hold for the lag bound itself leaves out).
    """
    U = pcc_col.size
    edges = np.asarray(edges, dtype=np.int64)
    a, b = edges[:-1], edges[1:] - 1  # first and last step of each block
    nb = a.size
    j = np.searchsorted(edges, np.arange(U), side="right") - 1
    M = lp.add_columns("block_max", nb, -np.inf, np.inf)
    m = lp.add_columns("block_min", nb, -np.inf, np.inf)
    t = np.arange(U)
    lp.add_rows("window_envelope", [(M[j], 1.0), (pcc_col, -1.0)], 0.0, np.inf, t=t, soft=False)
    low = pcc_col if pcc_low_col is None else pcc_low_col
    lp.add_rows("window_envelope", [(m[j], 1.0), (low, -1.0)], -np.inf, 0.0, t=t, soft=False)
    out = {"M": M, "m": m, "rows": []}
    up = [lb for lb in bounds if lb.direction == "up"]
    down = [lb for lb in bounds if lb.direction == "down"]
    both = min([lb.bound_mw for lb in up] or [np.inf]), min([lb.bound_mw for lb in down] or [np.inf])
    longest = int(np.max(b - a)) if nb else 0
    inner = min(both) if mode == "restrict" else (
        max(both) if all(any(lb.k >= longest for lb in grp) for grp in (up, down)) else np.inf)
    if np.isfinite(inner):
        blk = lp.add_rows(bounds[0].limit if len(bounds) == 1 else "window_block",
                          [(M, 1.0), (m, -1.0)], -np.inf, inner, t=a, soft=True)
        out["rows"].append((blk.start, blk.stop))
    for lb in bounds:
        # earliest reachable block I of each J: restrict b_I >= a_J - k, relax a_I >= b_J - k
        lo = (np.searchsorted(b, a - lb.k, side="left") if mode == "restrict"
              else np.searchsorted(a, b - lb.k, side="left"))
        cnt = np.maximum(np.arange(nb) - lo, 0)
        jj = np.repeat(np.arange(nb), cnt)
        ii = jj - (np.arange(jj.size) - np.repeat(np.cumsum(cnt) - cnt, cnt)) - 1
        if jj.size == 0:
            continue
        terms = [(M[jj], 1.0), (m[ii], -1.0)] if lb.direction == "up" else [(M[ii], 1.0), (m[jj], -1.0)]
        blk = lp.add_rows(lb.limit, terms, -np.inf, lb.bound_mw, t=a[jj], soft=True)
        out["rows"].append((blk.start, blk.stop))
    return out
