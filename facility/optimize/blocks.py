r"""Strategy ``blocks``: long horizons whose load does not repeat, bracketed by two bounds.

The full LP's solve time grows about with the square of its steps (a jittered 5 min at 0.1 s:
13 s; an hour: no answer in 300 s). Its structure is local: the window limits couple steps at
most ``H = max k`` apart (60 s for the per-minute limit), and the only long-range couplings
are the stored energy and the ratings. This strategy uses that twice.

**Upper bound: a rolling plan** (:func:`rolling_plan`). The horizon is planned in stretches
of ``C`` committed steps, each solved as the full formulation over ``C + A`` steps (``A`` steps
of look-ahead) from the state the committed plan left: stored energy, the last ``H`` PCC
samples as history of every window row, the PCC envelope so far (dynamic range). Ratings start
at a guess (the lower bound's) and may grow at their capex when a stretch needs more; since
σ = 0, growing Ê by ΔÊ shifts the committed stored energy by s₀ΔÊ, which keeps every
committed step feasible (SoC bounds, the initial SoC row). The last stretch has the
storage's own terminal policy; every other look-ahead end either keeps e ≥ s₀Ê (hard end) or
pays a price per MWh below it (priced end, :func:`deficit_prices`): :func:`solve_blocks` runs
the priced pass, then the hard one while time is left, and keeps the cheaper plan. Charge and discharge are made complementary stretch by stretch
(the direction of each overlapping step fixed, re-solved warm). Stretches of equal length have
the same matrix, so one HiGHS model is kept and re-solved warm with new bounds. The assembled
plan is checked step by step on the whole horizon
(:func:`facility.optimize.verify.verify_plan`); its cost is the upper bound.

**Lower bound: windows of the horizon** (:func:`window_lower_bound`). Window w covers
[a_w − C, a_w + C) for a_w = 0, C, 2C, … (C = the stretch length), and is the full
formulation on its steps alone: ratings free within their bounds, the stored energy at its
start free (the first window starts at the initial SoC), the terminal row only on the window
that ends the horizon, window rows only between its own steps, its own operating cost.

*Proof.* Take any feasible plan x of the full LP. Its restriction to a window meets every row
of the window's LP with x's ratings: each row is a row of the full LP, or implied by one (the
window's dynamic-range envelope spans a subset of the steps; its start SoC is free). Its cost
there is capex + the operating cost of the window's steps ≤ x's cost (every operating term is
≥ 0). So every window's optimum is ≤ the full LP's optimum, and so is the largest; the full
LP's optimum is ≤ the optimum with complementarity, so the bound holds for the realizable
plan too. Any window gives a valid bound: the binding one (largest optimum) is doubled
backwards while the bracket is wider than ``optimize.max_gap_frac`` and the measured cost of
the longer LP (:data:`FULL_LP_S_PER_STEP2`) fits the time left (:func:`refine_window_bound`).

The strategy applies to sizing problems without self-discharge, PCC history, GPU levers,
spectral limits and a PCC-variation price (the lower bound's proof and the rolling plan's
SoC shift need σ = 0; the others have their own paths), on horizons where the full LP would
be slow (:data:`MIN_STEPS`). It returns ``method = "blocks"`` with ``lower_bound_usd`` and
``gap_frac``; ``status = "optimal"`` when the gap is within ``optimize.max_gap_frac``, else
``"gap"`` with a warning.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from facility.optimize.formulation import Model, build_model, plan_cost_kusd
from facility.optimize.lp import HighsModel, LinearProgram, solve_highs
from facility.optimize.problem import Problem
from facility.optimize.result import SizingResult, SolveInfo, gap_frac, pack_result
from facility.optimize.verify import verify_plan
from facility.optimize.windows import lag_bounds

__all__ = ["MIN_STEPS", "applies", "longest_lag_steps", "rolling_plan", "window_lower_bound",
           "refine_window_bound", "solve_blocks", "BlockStats"]

#: Horizons shorter than this go to the full LP (it is fast there).
MIN_STEPS = 6000
#: Committed steps per stretch of the rolling plan: max(CORE_PER_LAG·H, MIN_CORE_STEPS), H the
#: longest lag; its look-ahead max(H, MIN_CORE_STEPS / 2). Measured on the jittered 5 min:
#: C = 2H, A = H within 1.2e-3 of the optimum, shorter look-aheads 2-5 % above it.
CORE_PER_LAG = 2
MIN_CORE_STEPS = 600
#: Rounds of the complementarity repair inside one stretch.
REPAIR_ROUNDS = 3


def applies(pb: Problem) -> bool:
    """Whether the strategy's bounds are proven for this problem (see the module text)."""
    return (pb.p_pcc_history_mw is None and pb.levers is None and not pb.has_spectral
            and pb.pcc_variation_cost_usd_per_mw <= 0 and bool(pb.storages)
            and all(s.sigma_per_h == 0 for s in pb.storages.values())
            and all(s.soc_min <= s.soc0 <= s.soc_max for s in pb.storages.values()))


def longest_lag_steps(pb: Problem) -> int:
    """H: the largest lag of the spec's window limits on the problem's grid. [steps]"""
    ks = [lb.k for lb in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac)]
    return max(ks) if ks else 1


@dataclass
class BlockStats:
    """What the strategy did (for ``SolveInfo`` and the benchmark)."""

    n_stretches: int = 0
    n_cold: int = 0
    n_warm: int = 0
    n_repaired_steps: int = 0
    rolling_s: float = 0.0
    lower_s: float = 0.0
    n_windows: int = 0
    n_rounds: int = 0
    grown_at: list = field(default_factory=list)
    refined: list = field(default_factory=list)
    passes: list = field(default_factory=list)


class _WarmSolver:
    """One HiGHS model re-solved warm while the matrix stays the same; a cold model otherwise."""

    def __init__(self, time_limit_s: float):
        self.time_limit_s = time_limit_s
        self.hm = None
        self.key = None

    def solve(self, lp: LinearProgram, col_patch=(), cost_patch=()):
        A, c, lb, ub, rlo, rhi = lp.assemble()
        for cols, lo, hi in col_patch:
            lb[cols], ub[cols] = lo, hi
        for cols, dc in cost_patch:
            c[cols] += dc
        key = (A.shape, A.indptr.tobytes(), A.indices.tobytes(), A.data.tobytes())
        cold = self.hm is None or key != self.key
        if cold:
            self.hm = HighsModel(lp, time_limit_s=self.time_limit_s)
            self.key = key
            n = A.shape[1]
            self.hm.set_col_bounds(np.arange(n), lb, ub)
            self.hm.set_col_cost(np.arange(n), c)
        else:
            self.hm.set_col_cost(np.arange(A.shape[1]), c)
            self.hm.set_col_bounds(np.arange(A.shape[1]), lb, ub)
            self.hm.set_row_bounds(np.arange(A.shape[0]), rlo, rhi)
        ok, term, obj, x, _ = self.hm.solve()
        return ok, term, x, cold, lb, ub

    def resolve_with_upper(self, cols, lb, ub):
        """Set upper bounds of ``cols`` to 0 (a complementarity fix) and solve again warm."""
        self.hm.set_col_bounds(cols, lb[cols], np.zeros(len(cols)))
        ok, term, obj, x, _ = self.hm.solve()
        return ok, term, x


def _stretch_storages(pb: Problem, P: dict, E: dict, end: int, priced: bool) -> dict:
    """Storages of the stretch whose look-ahead ends at step ``end``: ratings at least the
    committed ones; the last stretch has the storage's own terminal policy, the others end at
    least at the initial SoC (hard end) or anywhere in the SoC band (``priced``: the deficit
    below s_0 is priced by a row of :func:`rolling_plan`). Measured on a jittered 20 min: a
    fixed SoC floor below s_0, or a band around the middle of the SoC window, let the myopic
    stretches drain the storage and grow both ratings more when they must recover it (8.2 and
    9.4 M USD against 7.5 M USD); the full LP optimum's own SoC trajectory as the end target
    (±0.02 of its Ê, an oracle) gives 7.24 M USD, within 0.26 % of the optimum."""
    T = pb.n_steps
    out = {}
    for n, s in pb.storages.items():
        data = replace(s, p_lo=min(P[n], s.p_hi), e_lo=min(E[n], s.e_hi))
        if end < T:
            data = replace(data, terminal="free", soc_end_lo=(s.soc_min if priced else s.soc0),
                           soc_end_hi=s.soc_max)
        out[n] = data
    return out


def rolling_plan(pb: Problem, p0_mw: dict, e0_mwh: dict, *, core_steps: int, look_steps: int,
                 time_limit_s: float, deficit_usd_per_mwh: dict | None = None,
                 stats: BlockStats | None = None) -> tuple[dict | None, str]:
    """A feasible plan built stretch by stretch (the module text states the rules).

    Parameters
    ----------
    pb : Problem
    p0_mw, e0_mwh : dict of name -> float
        Starting ratings (clipped to each storage's bounds); they only grow. [MW], [MWh]
    core_steps, look_steps : int
        Committed steps per stretch and look-ahead beyond them. [steps]
    time_limit_s : float
        Wall-clock budget of the whole pass. [s]
    deficit_usd_per_mwh : dict of name -> float, optional
        A priced end instead of the hard one: each look-ahead may end below the initial SoC
        (down to the SoC floor) at this price per MWh of deficit, d ≥ s₀Ê − e_end, d ≥ 0
        (:func:`deficit_prices`). [USD/MWh]
    stats : BlockStats, optional
        Filled with counts and timings.

    Returns
    -------
    (plan or None, reason) : the plan (``(P, E, ch, dis, e)`` per storage) or None with the
        reason it stopped.
    """
    st = stats if stats is not None else BlockStats()
    t_start = time.perf_counter()
    T, dt = pb.n_steps, pb.dt_s
    H = longest_lag_steps(pb)
    names = list(pb.storages)
    P = {n: max(float(p0_mw.get(n, s.p_lo)), s.p_lo) for n, s in pb.storages.items()}
    E = {n: max(float(e0_mwh.get(n, s.e_lo)), s.e_lo) for n, s in pb.storages.items()}
    ch = {n: np.zeros(T) for n in names}
    dis = {n: np.zeros(T) for n in names}
    e = {n: np.zeros(T + 1) for n in names}
    for n, s in pb.storages.items():
        e[n][0] = s.soc0 * E[n]
    pcc = np.asarray(pb.load_mw, dtype=float).copy()
    top, bot = -np.inf, np.inf
    solver = _WarmSolver(time_limit_s)
    a = 0
    while a < T:
        left = time_limit_s - (time.perf_counter() - t_start)
        if left <= 0:
            return None, "time limit"
        solver.time_limit_s = left
        b = min(T, a + core_steps + look_steps)
        last = b >= T
        hist = pcc[max(0, a - H):a] if a > 0 else None
        data = _stretch_storages(pb, P, E, b, deficit_usd_per_mwh is not None)
        off = {n: e[n][a] - pb.storages[n].soc0 * E[n] for n in names}
        m = build_model(pb.load_mw[a:b], dt, data, pb.spec, pb.price_usd_per_mwh,
                        p_pcc_history_mw=hist, margin_frac=pb.margin_frac, initial_offset_mwh=off)
        patch = []
        if pb.spec.max_dynamic_range_mw is not None and a > 0:
            patch = [(m.lp.col_names["pcc_max"], top, np.inf), (m.lp.col_names["pcc_min"], -np.inf, bot)]
        if deficit_usd_per_mwh is not None and not last:
            # soft end: e_end + d >= s0 E, d >= 0 priced (a deficit below the initial SoC)
            for n in names:
                c = m.cols[n]
                d = m.lp.add_columns(f"{n}:end_deficit", 1, 0.0, np.inf, deficit_usd_per_mwh[n] / 1000.0)
                m.lp.add_rows("end_deficit", [(c["e"][-1:], 1.0), (c["e_rated"], -pb.storages[n].soc0),
                                              (d, 1.0)], 0.0, np.inf, t=np.array([b - a]), soft=False)
        ok, term, x, cold, lb, ub = solver.solve(m.lp, patch)
        st.n_cold += int(cold)
        st.n_warm += int(not cold)
        if not ok:
            return None, f"stretch at step {a} ({a * dt:g} s): {term}"
        x, n_rep, ok = _repair(solver, m, x, lb, ub)
        st.n_repaired_steps += n_rep
        if not ok:
            return None, f"stretch at step {a} ({a * dt:g} s): the complementarity repair failed"
        n_keep = (b - a) if last else core_steps
        for n in names:
            c = m.cols[n]
            pn, en = float(x[c["p_rated"][0]]), float(x[c["e_rated"][0]])
            if en > E[n] + 1e-12:
                e[n][:a + 1] += pb.storages[n].soc0 * (en - E[n])  # σ = 0: a shift stays feasible
            if pn > P[n] * (1 + 1e-9) + 1e-9 or en > E[n] * (1 + 1e-9) + 1e-12:
                st.grown_at.append(a)
            P[n], E[n] = max(P[n], pn), max(E[n], en)
            ch[n][a:a + n_keep] = x[c["ch"]][:n_keep]
            dis[n][a:a + n_keep] = x[c["dis"]][:n_keep]
            e[n][a + 1:a + n_keep + 1] = x[c["e"]][1:n_keep + 1]
        pcc[a:a + n_keep] = m.pcc_of(x)[:n_keep]
        top, bot = max(top, float(pcc[a:a + n_keep].max())), min(bot, float(pcc[a:a + n_keep].min()))
        st.n_stretches += 1
        a += n_keep
    st.rolling_s += time.perf_counter() - t_start
    # solver round-off may leave -1e-12 on a power column: clip to the column's bound
    return {n: (P[n], E[n], np.maximum(ch[n], 0.0), np.maximum(dis[n], 0.0), e[n]) for n in names}, ""


def _repair(solver: _WarmSolver, m: Model, x: np.ndarray, lb, ub, tol_mw: float = 1e-6):
    """Fix the direction of the stretch's overlapping steps (p_ch·p_dis > 0) to the sign of their
    net power and solve again warm, up to :data:`REPAIR_ROUNDS` rounds."""
    n_fixed = 0
    zero_all = []
    for _ in range(REPAIR_ROUNDS):
        zero = []
        for c in m.cols.values():
            over = np.minimum(x[c["ch"]], x[c["dis"]]) > tol_mw
            if not over.any():
                continue
            net = x[c["ch"]] - x[c["dis"]]
            zero += [c["dis"][over & (net >= 0)], c["ch"][over & (net < 0)]]
            n_fixed += int(over.sum())
        if not zero:
            return x, n_fixed, True
        zero_all.append(np.concatenate(zero))
        cols = np.unique(np.concatenate(zero_all)).astype(np.int32)
        ok, _, x = solver.resolve_with_upper(cols, lb, ub)
        if not ok:
            return x, n_fixed, False
    over = any((np.minimum(x[c["ch"]], x[c["dis"]]) > tol_mw).any() for c in m.cols.values())
    return x, n_fixed, not over


def _window_model(pb: Problem, a: int, b: int) -> Model:
    """The full formulation on steps [a, b) alone (the window LP of the module text): free
    ratings, free start SoC unless a = 0, the terminal row only where b ends the horizon."""
    return build_model(pb.load_mw[a:b], pb.dt_s, pb.storages, pb.spec, pb.price_usd_per_mwh,
                       margin_frac=pb.margin_frac,
                       initial_offset_mwh={n: (0.0 if a == 0 else None) for n in pb.storages},
                       terminal=b >= pb.n_steps)


def window_lower_bound(pb: Problem, core_steps: int, pre_steps: int, time_limit_s: float,
                       stats: BlockStats | None = None):
    r"""The largest optimum of the windows' own LPs: a lower bound of the full LP. [USD]

    Window w covers [a_w - pre, a_w + core) for a_w = 0, core, 2·core, … and is the full
    formulation on its steps alone: ratings free within their bounds, the stored energy at its
    start free (the first window starts at the initial SoC), the terminal row only on the window
    that ends the horizon, window rows only inside it, its own operating cost.

    **Proof.** The restriction of any feasible plan of the full LP to a window meets every row
    of the window's LP (each is a row of the full LP, or implied by one: the window's
    dynamic-range envelope spans fewer steps) with the plan's ratings, and costs at most the
    plan's cost (capex the same, the operating cost of a subset of the steps, each term ≥ 0).
    So each window's optimum is ≤ the full LP's optimum, and so is their maximum.

    Returns
    -------
    (lower_bound_usd or None, ratings, window) : None when a window did not solve in time;
        ``ratings`` ``{name: (P, E)}`` of the largest rating of each kind over the windows
        [MW], [MWh] (a start for :func:`rolling_plan`), ``window`` the (a, b) of the binding one.
    """
    st = stats if stats is not None else BlockStats()
    t_start = time.perf_counter()
    T = pb.n_steps
    solver = _WarmSolver(time_limit_s)
    best, arg = -np.inf, None
    p_max = {n: s.p_lo for n, s in pb.storages.items()}
    e_max = {n: s.e_lo for n, s in pb.storages.items()}
    for a0 in range(0, T, core_steps):
        left = time_limit_s - (time.perf_counter() - t_start)
        if left <= 0:
            return None, {}, None
        solver.time_limit_s = left
        a, b = max(0, a0 - pre_steps), min(T, a0 + core_steps)
        m = _window_model(pb, a, b)
        ok, term, x, cold, _, _ = solver.solve(m.lp)
        st.n_cold += int(cold)
        st.n_warm += int(not cold)
        st.n_windows += 1
        if not ok:
            return None, {}, None
        obj = float(np.concatenate(m.lp.cost) @ x)
        if obj > best:
            best, arg = obj, (a, b)
        for n in pb.storages:
            c = m.cols[n]
            p_max[n] = max(p_max[n], float(x[c["p_rated"][0]]))
            e_max[n] = max(e_max[n], float(x[c["e_rated"][0]]))
    st.lower_s += time.perf_counter() - t_start
    return 1000.0 * best, {n: (p_max[n], e_max[n]) for n in pb.storages}, arg


def refine_window_bound(pb: Problem, window: tuple, time_limit_s: float):
    """One longer window around a binding one: twice as long, grown backwards (forwards at
    the horizon's start). Its optimum is a lower bound by the same proof. [USD]

    Returns
    -------
    (lower_bound_usd or None, window) : None when it did not solve within ``time_limit_s``.
    """
    T = pb.n_steps
    a, b = window
    n = b - a
    a2 = max(0, a - n)
    b2 = min(T, b + (n - (a - a2)))
    sol = solve_highs(_window_model(pb, a2, b2).lp, time_limit_s=time_limit_s)
    if sol.status != "ok":
        return None, (a2, b2)
    return 1000.0 * float(sol.objective), (a2, b2)


#: λ = DEFICIT_PRICE_FACTOR · c_P / (C + A)Δt: see :func:`deficit_prices`.
DEFICIT_PRICE_FACTOR = 1.2


def deficit_prices(pb: Problem, stretch_steps: int) -> dict | None:
    r"""Price of ending a stretch below the initial SoC, per storage. [USD/MWh]

    .. math::  \lambda_s = f \, \frac{c_{P,s}}{(C + A)\,\Delta t_h}

    A deficit of δ MWh left at a look-ahead's end must be won back within about one stretch
    ((C + A)Δt), which takes δ / ((C + A)Δt) MW of converter power more, at c_P per MW. With
    f = :data:`DEFICIT_PRICE_FACTOR`. Measured on the jittered benchmark load (12,000 steps,
    C + A = 1,800): below 3 M USD/MWh the stretches drain the storage and the recovery grows
    P̂ by 15 % (8.3 M USD), from 6 M USD/MWh up the plan is the hard end's (7.50 M USD), in
    between 7.34 M USD (λ = 3.6 M: f = 1.2); at 36,000 steps 7,476,463 against the hard end's
    7,571,291 USD. None when no storage's power rating has a price (the hard end then).
    """
    t_h = stretch_steps * pb.dt_s / 3600.0
    lam = {n: DEFICIT_PRICE_FACTOR * 1000.0 * s.c_p / t_h for n, s in pb.storages.items()}
    return lam if any(v > 0 for v in lam.values()) else None


#: Refinement stops after a doubling raised the bound by less than this share of
#: ``optimize.max_gap_frac`` (36,000 jittered steps: the 4,800-step window moved it by 1e-6,
#: the 9,600-step one (176 s) by another 1e-6).
REFINE_STALL_FRAC = 0.1


#: Measured full-LP solve time per squared step on the jittered benchmark here (12,000 steps:
#: 235 s); the driver tries the full LP after the bounds only when the time left covers it.
FULL_LP_S_PER_STEP2 = 1.6e-6


def solve_blocks(pb: Problem, *, min_steps: int | None = None,
                 stats: BlockStats | None = None) -> SizingResult | None:
    """Strategy ``blocks``: the rolling plan bracketed by the window bound (module text).

    Parameters
    ----------
    pb : Problem
    min_steps : int, optional
        Shorter horizons return None (the full LP is fast there); default :data:`MIN_STEPS`.
    stats : BlockStats, optional
        Filled with counts and timings (benchmark).

    Returns
    -------
    SizingResult or None
        None when the strategy does not apply or found no verified plan within
        ``optimize.time_limit_s``; else ``info.method = "blocks"``, ``lower_bound_usd`` the
        largest window optimum, ``gap_frac`` against the plan's cost, ``status`` ``"optimal"``
        when the gap is within ``optimize.max_gap_frac``, else ``"gap"``.
    """
    if pb.n_steps < (MIN_STEPS if min_steps is None else min_steps) or not applies(pb):
        return None
    t0 = time.perf_counter()
    limit = float(pb.optimize.time_limit_s)
    H = longest_lag_steps(pb)
    core, look = max(CORE_PER_LAG * H, MIN_CORE_STEPS), max(H, MIN_CORE_STEPS // 2)
    st = stats if stats is not None else BlockStats()
    lower, ratings, win = window_lower_bound(pb, core, core, 0.4 * limit, st)
    p0 = {n: r[0] for n, r in ratings.items()} if lower is not None else {}
    plan, obj, whys = None, np.inf, []
    # the priced end first, then the hard end while time is left (the cheaper verified plan)
    lam = deficit_prices(pb, core + look)
    for price in ([lam] if lam is not None else []) + [None]:
        left = limit - (time.perf_counter() - t0)
        if price is None and plan is not None and st.passes and left < 2.0 * st.passes[-1][2]:
            break
        t1 = time.perf_counter()
        cand, why = rolling_plan(pb, p0, {}, core_steps=core, look_steps=look, time_limit_s=left,
                                 deficit_usd_per_mwh=price, stats=st)
        if cand is not None:
            bad = verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, cand, pb.margin_frac)
            if bad is not None:
                cand, why = None, f"the rolling plan breaks {bad}"
        cost = (1000.0 * plan_cost_kusd(pb.storages, cand, pb.dt_s, pb.price_usd_per_mwh)
                if cand is not None else None)
        kind = "priced" if price is not None else "hard"
        st.passes.append((kind, cost, time.perf_counter() - t1))
        if cand is None:
            whys.append(f"{kind} end: {why}")
        if cost is not None and cost < obj:
            plan, obj = cand, cost
    if plan is None:
        warnings.warn(f"strategy blocks found no plan ({'; '.join(whys)}); trying the next strategy",
                      stacklevel=3)
        return None
    lows = [1000.0 * sum(s.c_p * s.p_lo + s.c_e * s.e_lo for s in pb.storages.values())]
    if lower is not None:
        lows.append(lower)
    target = float(pb.optimize.max_gap_frac)
    n_rounds = 0
    while win is not None and gap_frac(obj, max(lows)) > target and win != (0, pb.n_steps):
        left = limit - (time.perf_counter() - t0)
        est = 4.0 * FULL_LP_S_PER_STEP2 * (win[1] - win[0]) ** 2
        if left < est:
            break
        t1 = time.perf_counter()
        low2, win = refine_window_bound(pb, win, left)
        st.lower_s += time.perf_counter() - t1
        st.refined.append((win, low2, time.perf_counter() - t1))
        n_rounds += 1
        if low2 is None:
            break
        gain = (low2 - max(lows)) / max(abs(obj), 1e-9)
        lows.append(low2)
        if gain < REFINE_STALL_FRAC * target:  # a doubling that moved nothing: the next rarely does
            break
    st.n_rounds = n_rounds
    low = min(max(lows), obj)
    gap = gap_frac(obj, low)
    status = "optimal" if gap <= target else "gap"
    info = SolveInfo(status=status, termination="blocks", objective_usd=obj, build_s=0.0,
                     solve_s=time.perf_counter() - t0, n_variables=0, n_constraints=0,
                     n_repaired_steps=st.n_repaired_steps, relaxed_objective_usd=obj,
                     method="blocks", lower_bound_usd=low, gap_frac=gap)
    return pack_result(pb.load_mw, pb.storages, plan, info)
