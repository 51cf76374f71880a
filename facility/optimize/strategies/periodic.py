"""Periodic steady-state reduction of the sizing / dispatch LP, with a proven gap.

A training job repeats the same iteration for hours, so the load is exactly periodic over long
stretches: L[t] = L[t + p] for t in [a0, b0 - p). The full LP carries one column per step and
HiGHS' time grows about quadratically with the horizon; this module lets a few periods stand
for the r repeated periods in the middle of such a stretch and brackets the full LP's optimum
z* between two small LPs. The horizon splits into

    head (before the stretch) | q explicit periods | middle: r periods | q explicit periods | tail

and the middle into B = r / m blocks Y_1 .. Y_B of m = ⌈K/p⌉ + 1 periods, so that every window
of up to K steps lies within two consecutive blocks. K is the longest window of the limits that
a periodic PCC power does not meet already by another limit (:func:`block_window_steps`);
longer windows still bind the explicit parts, and dropping them in the core only relaxes.

**Upper bound (restriction)** on the axis head | q | core | q | tail: the core holds two
copies of one period with the charge and discharge tied equal, its operating cost weighted by
r / 2. Copy 1 stands for the first middle period, copy 2 for the last: without self-discharge
every period of the middle changes the stored energy by the same δ, so copy 2 starts at
e_a + (r - 1) δ and the SoC bounds, linear in the period index, hold in between when they hold
in both copies (with self-discharge the core is cyclic instead, δ = 0). Expand the plan to the horizon (that period tiled r times):
every pair of steps (t1, t2) that a window limit compares, 0 < t2 - t1 ≤ k, has a pair on the
restricted axis with the same two values and a lag no longer (the smallest positive lag between
two phases of a period is below p, and two copies hold it), so the expanded plan is feasible for
the full LP (it is also checked step by step) and costs z_UB ≥ z*. The restricted axis may
compare a few more pairs (across a short core), which only tightens it.

**Lower bound (relaxation)** on the axis head | q | Y_1 | x̄ | Y_B | q | tail. For any feasible
full plan X, let x̄ be the average of its B blocks. Constraints inside a block are linear and the
same for every block (the load repeats), so x̄ meets them; its operating cost is 1/B of the
middle's (costs are linear, so the core carries weight B and Y_1, Y_B weight 0). Each junction
of two consecutive blocks meets every window; the average of the B - 1 junctions is the
sequence W = [(B x̄ - Y_B) / (B - 1), (B x̄ - Y_1) / (B - 1)], so the window rows hold on W.
The stored energy of x̄ follows the same affine recursion and telescopes over the blocks:
B (ē_end - ē_start) = e(Y_B end) - e(Y_1 start), with Y_1 continuing the first explicit periods
and Y_B running into the last ones. X's own head, q periods, Y_1, Y_B and tail, with x̄, are
feasible for this LP at X's cost, so z_LB ≤ z*. The junction average differs from x̄'s own wrap
by (x̄ - Y) / (B - 1), so the bound tightens as the stretch gets longer.

The reduction is accepted when (z_UB - z_LB) / z_UB ≤ ``optimize.max_gap_frac`` (before the
complementarity repair, which is reported on top). ``SolveInfo.method``, ``lower_bound_usd``
and ``gap_frac`` report it.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from facility.errors import InfeasibleError, SolverTimeLimit
from facility.optimize.certificates.fallback import stopped_strategy
from facility.optimize.model.formulation import Model, build_model, plan_cost_kusd
from facility.optimize.model.lever_columns import lever_cost_kusd, lever_plan_from_columns
from facility.optimize.model.problem import Problem
from facility.optimize.strategies.periodic_spectral import lower_spectral, solve_lower_bound, upper_spectral
from facility.optimize.model.result import SizingResult, SolveInfo, gap_frac, pack_result, plan_from_columns
from facility.optimize.solvers.solve import solve_model
from facility.optimize.certificates.verify import verify_plan
from facility.optimize.model.windows import add_lag_bound_rows, lag_bounds

__all__ = ["PeriodicStretch", "Reduction", "find_periodic_stretch", "plan_reduction",
           "block_window_steps", "transient_periods", "build_upper", "build_lower", "expand",
           "solve_periodic"]

#: Smallest number of whole periods a stretch must hold to be worth reducing.
MIN_PERIODS = 8

#: Shortest horizon on which ``optimize.periodic = None`` (automatic) tries the reduction: below
#: it the full LP solves in about a second and two reduced LPs do not pay. [steps]
MIN_AUTO_STEPS = 2000


@dataclass(frozen=True)
class PeriodicStretch:
    """Steps [start, stop) over which the load repeats with ``period`` steps."""

    start: int
    stop: int
    period: int

    @property
    def n_periods(self) -> int:
        """Whole periods in the stretch."""
        return (self.stop - self.start) // self.period


@dataclass(frozen=True)
class Reduction:
    """Layout of the two reduced models.

    Attributes
    ----------
    stretch : PeriodicStretch
    q : int
        Explicit periods kept on each side of the middle.
    m : int
        Periods per block (and copies in the restriction's core).
    r : int
        Periods of the middle (a multiple of m, at least 2 m).
    """

    stretch: PeriodicStretch
    q: int
    m: int
    r: int

    @property
    def a(self) -> int:
        """First step of the middle (the same on the full and both reduced axes)."""
        return self.stretch.start + self.q * self.stretch.period

    @property
    def block(self) -> int:
        """Steps per block."""
        return self.m * self.stretch.period

    @property
    def n_blocks(self) -> int:
        """Blocks B of the middle."""
        return self.r // self.m

    @property
    def mid_stop(self) -> int:
        """End (exclusive) of the middle on the full axis."""
        return self.a + self.r * self.stretch.period

    def upper_index(self, n_steps: int) -> np.ndarray:
        """Full-axis step of each step of the restriction's axis (core = two periods)."""
        return np.concatenate([np.arange(self.a + 2 * self.stretch.period),
                               np.arange(self.mid_stop, n_steps)])

    def lower_index(self, n_steps: int) -> np.ndarray:
        """Full-axis step of each step of the relaxation's axis (Y_1, x̄, Y_B)."""
        a, k = self.a, self.block
        return np.concatenate([np.arange(a + k), a + np.arange(k),
                               np.arange(self.mid_stop - k, n_steps)])

    def weights_upper(self, n_virtual: int) -> np.ndarray:
        """Operating-cost weight per step of the restriction (r / 2 on the core)."""
        w = np.ones(n_virtual)
        w[self.a:self.a + 2 * self.stretch.period] = self.r / 2.0
        return w

    def weights_lower(self, n_virtual: int) -> np.ndarray:
        """Operating-cost weight per step of the relaxation (0 on Y_1 and Y_B, B on x̄)."""
        w = np.ones(n_virtual)
        a, k = self.a, self.block
        w[a:a + 3 * k] = 0.0
        w[a + k:a + 2 * k] = self.n_blocks
        return w


def find_periodic_stretch(load: np.ndarray, *, max_period: int | None = None,
                          atol_mw: float | None = None) -> PeriodicStretch | None:
    """Longest stretch over which the load repeats exactly, and its period.

    Candidate periods are the highest peaks of the load's autocorrelation (FFT) plus 1 (a
    constant load); each is checked sample by sample (``|L[t] - L[t+p]| <= atol_mw``) and the
    one with the longest run wins (ties: the shorter period).

    Parameters
    ----------
    load : numpy.ndarray (T,)
        Load seen by the optimizer. [MW]
    max_period : int, optional
        Longest period tried (default T // MIN_PERIODS). [steps]
    atol_mw : float, optional
        Equality tolerance (default 1e-9 x the load's largest magnitude). [MW]

    Returns
    -------
    PeriodicStretch or None
        None when no stretch holds ``MIN_PERIODS`` whole periods.
    """
    from scipy.signal import correlate, find_peaks

    x = np.asarray(load, dtype=float).ravel()
    T = x.size
    if T < 2 * MIN_PERIODS:
        return None
    max_period = int(max_period or T // MIN_PERIODS)
    tol = atol_mw if atol_mw is not None else 1e-9 * max(float(np.max(np.abs(x))), 1.0)
    xc = x - x.mean()
    cands = {1}
    if np.any(np.abs(xc) > tol):
        ac = correlate(xc, xc, mode="full", method="fft")[T - 1:T + max_period]
        pk, _ = find_peaks(ac)
        pk = pk[(pk >= 2) & (pk <= max_period)]
        cands |= {int(v) for v in pk[np.argsort(ac[pk])[::-1][:6]]}
    best = None
    for p in sorted(cands):
        eq = np.abs(x[p:] - x[:-p]) <= tol
        if not eq.any():
            continue
        # longest run of True in eq
        d = np.diff(np.concatenate([[0], eq.astype(np.int8), [0]]))
        starts, stops = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        i = int(np.argmax(stops - starts))
        st = PeriodicStretch(int(starts[i]), int(stops[i]) + p, p)
        if st.n_periods < MIN_PERIODS:
            continue
        if best is None or (st.stop - st.start) > (best.stop - best.start):
            best = st
    return best




def block_window_steps(bounds, period: int) -> int:
    """Longest window a block of the relaxation must hold, in steps.

    For a p-periodic PCC power, a lag bound (k, B) with k ≥ p - 1 compares every pair of phases,
    so it bounds max - min of the whole sequence by B; every other bound with a larger B is then
    met. Those are left out here (0 when no bound is left).
    """
    cover = [b.bound_mw for b in bounds if b.k >= period - 1]
    tight = min(cover, default=np.inf)
    return max((b.k for b in bounds if b.bound_mw < tight or b.k >= period - 1 and b.bound_mw == tight),
               default=0)


def transient_periods(load: np.ndarray, stretch: PeriodicStretch, bounds) -> int:
    """Periods a PCC power needs to move between the stretch's mean and the load next to it.

    The slowest rate any window limit allows, B / k [MW/step], over the larger of the jumps in
    mean load at the two ends of the stretch; 0 where the stretch touches the horizon's edge.
    """
    p = stretch.period
    rate = min((b.bound_mw / b.k for b in bounds), default=np.inf)
    if not np.isfinite(rate) or rate <= 0:
        return 0
    mean = float(np.mean(load[stretch.start:stretch.start + p]))
    jump = 0.0
    if stretch.start > 0:
        jump = abs(mean - float(np.mean(load[max(stretch.start - p, 0):stretch.start])))
    if stretch.stop < load.size:
        jump = max(jump, abs(mean - float(np.mean(load[stretch.stop:stretch.stop + p]))))
    return int(np.ceil(jump / rate / p))


def plan_reduction(stretch: PeriodicStretch, k_block: int, n_steps: int, q: int | None = None,
                   max_share: float = 0.5) -> Reduction | None:
    """Layout of the reduced models for a stretch, or None when it would not pay.

    Parameters
    ----------
    stretch : PeriodicStretch
    k_block : int
        Longest window a block must hold (:func:`block_window_steps`). [steps]
    n_steps : int
        Steps of the full horizon.
    q : int, optional
        Explicit periods on each side of the middle (default: m, at least 2).
    max_share : float
        The relaxation's axis must be at most this share of the horizon. [frac]
    """
    p = stretch.period
    m = -(-k_block // p) + 1
    q = max(m, 2) if q is None else max(int(q), m, 2)
    r = (stretch.n_periods - 2 * q) // m * m  # leftover periods stay explicit (in the tail)
    if r < 2 * m:
        return None
    red = Reduction(stretch, q, m, r)
    if n_steps - (r - 3 * m) * p > max_share * n_steps:
        return None
    return red


def expand(red: Reduction, values: np.ndarray, drift: float = 0.0) -> np.ndarray:
    """Expand an array of the restriction to the full horizon (core period tiled r times).

    Works for per-step arrays (length n) and for the stored energy at step boundaries
    (length n + 1), to which period j of the middle adds ``j * drift``. [same unit as values]
    """
    v = np.asarray(values, dtype=float)
    a, p, r = red.a, red.stretch.period, red.r
    mid = (v[a:a + p][None, :] + drift * np.arange(r)[:, None]).ravel()
    return np.concatenate([v[:a], mid, v[a + 2 * p:]])




def build_upper(load, dt_s, data, spec, optimize, red: Reduction, levers=None) -> Model:
    """The restriction: core of two tied copies of one period (first and last of the middle).

    Rows added to :func:`facility.optimize.model.formulation.build_model` on the restricted axis
    (a: first core step, p: period, z: stored energy at the end of copy 1, a break column):
    :math:`p^{ch}_{a + p + i} = p^{ch}_{a + i}`, the same for p^dis (i = 0..p-1), and
    :math:`e_{a + p} = z + (r - 2)(z - e_a)` without self-discharge (a drift δ = z - e_a per
    period), :math:`z = e_a` and :math:`e_{a + p} = e_a` with it (cyclic).
    """
    idx = red.upper_index(load.size)
    lv = load[idx]
    p, a = red.stretch.period, red.a
    m = build_model(lv, dt_s, data, spec, optimize.energy_price_usd_per_mwh,
                    margin_frac=optimize.limit_margin_frac, op_weight=red.weights_upper(lv.size),
                    soc_breaks=(a + p,), levers=None if levers is None else levers.take(idx))
    i = np.arange(p)
    for name, c in m.lever_cols.items():  # burned power tied like the storage power
        if "burn" in c:
            m.lp.add_rows("periodic_core", [(c["burn"][a + p + i], 1.0), (c["burn"][a + i], -1.0)],
                          0.0, 0.0, t=a + p + i, soft=False)
    for name, c in m.cols.items():
        for key in ("ch", "dis"):
            m.lp.add_rows("periodic_core", [(c[key][a + p + i], 1.0), (c[key][a + i], -1.0)],
                          0.0, 0.0, t=a + p + i, soft=False)
        z, e_a, e_b = c["e_break"], c["e"][a:a + 1], c["e"][a + p:a + p + 1]
        if data[name].sigma_per_h > 0:
            m.lp.add_rows("periodic_core", [(z, 1.0), (e_a, -1.0)], 0.0, 0.0, t=a + p, soft=False,
                          unit="MWh")
            m.lp.add_rows("periodic_core", [(e_b, 1.0), (e_a, -1.0)], 0.0, 0.0, t=a + p, soft=False,
                          unit="MWh")
        else:
            m.lp.add_rows("periodic_core", [(e_b, 1.0), (z, -(red.r - 1.0)), (e_a, red.r - 2.0)],
                          0.0, 0.0, t=a + p, soft=False, unit="MWh")
    return m


def build_lower(load, dt_s, data, spec, optimize, red: Reduction, levers=None) -> Model:
    """The relaxation on head | q | Y_1 | x̄ | Y_B | q | tail (see the module docstring).

    Windows apply inside [0, x̄), inside x̄ and inside [Y_B, end), and on the junction average
    W = [(B x̄ - Y_B), (B x̄ - Y_1)] / (B - 1); the stored energy restarts at x̄ and at Y_B, with
    :math:`B (\\bar e_{end} - \\bar e_{start}) = e(Y_B\\ end) - e(Y_1\\ start)`.
    """
    idx = red.lower_index(load.size)
    lv = load[idx]
    a, k, B = red.a, red.block, float(red.n_blocks)
    x0, y0 = a + k, a + 2 * k  # first steps of x̄ and of Y_B
    m = build_model(lv, dt_s, data, spec, optimize.energy_price_usd_per_mwh,
                    margin_frac=optimize.limit_margin_frac, op_weight=red.weights_lower(lv.size),
                    window_segments=[(0, x0), (x0, y0), (y0, lv.size)], soc_breaks=(x0, y0),
                    levers=None if levers is None else levers.take(idx))
    # junction average W: PCC expression of x̄ and Y_B (first half), x̄ and Y_1 (second half)
    xs, y1, yb = np.arange(x0, y0), np.arange(a, x0), np.arange(y0, y0 + k)
    terms = []
    for col, v in m.pcc_terms:
        v = np.broadcast_to(v, col.shape)
        terms += [(np.concatenate([col[xs], col[xs]]), np.concatenate([v[xs], v[xs]]) * B / (B - 1.0)),
                  (np.concatenate([col[yb], col[y1]]), -np.concatenate([v[yb], v[y1]]) / (B - 1.0))]
    const = np.concatenate([lv[xs], lv[xs]])
    for lb in lag_bounds(spec, dt_s, optimize.limit_margin_frac):
        add_lag_bound_rows(m.lp, lb, terms, const, 0)
    for c in m.cols.values():
        z_x = c["e_break"][1]  # end of x̄ (stored energy after step y0 - 1)
        m.lp.add_rows("periodic_core", [(np.array([z_x]), B), (c["e"][x0:x0 + 1], -B),
                                        (c["e"][y0 + k:y0 + k + 1], -1.0), (c["e"][a:a + 1], 1.0)],
                      0.0, 0.0, t=a, soft=False, unit="MWh")
    return m


def solve_periodic(pb: Problem) -> SizingResult | None:
    """Solve through the periodic reduction; None when another strategy has to solve instead.

    The explicit margin q starts at one block plus :func:`transient_periods`.
    ``optimize.periodic = None`` (automatic) tries that margin once and returns None
    unless the proven gap is within ``optimize.max_gap_frac``; ``true`` doubles the margin
    until it is, and otherwise returns the best bracket found with a warning stating its
    proven gap. Returns None as well when the load has no long periodic stretch, the reduction
    would not shorten the horizon to half, the restriction is infeasible, there is a PCC
    history or slack mode is on. When the restriction stops at ``optimize.time_limit_s`` the
    full LP is not tried (it is larger): the best verified plan with its proven gap is returned
    (:func:`facility.optimize.certificates.fallback.best_effort`), or, with GPU levers, the stop is raised.
    """
    optimize = pb.optimize
    if pb.p_pcc_history_mw is not None or optimize.allow_slack or optimize.periodic is False:
        return None
    if pb.levers is not None and pb.levers.lagged:
        return None  # a cooling state per step: neither copy nor average is exact
    load, dt_s, data, spec = pb.load_mw, pb.dt_s, pb.storages, pb.spec
    if optimize.periodic is None and load.size < MIN_AUTO_STEPS:
        return None
    st = find_periodic_stretch(load)
    bounds = lag_bounds(spec, dt_s, optimize.limit_margin_frac)
    red = None
    if st is not None:
        k_block = block_window_steps(bounds, st.period)
        q0 = -(-k_block // st.period) + 1 + transient_periods(load, st, bounds)
        red = plan_reduction(st, k_block, load.size, q=q0)
    if red is None:
        if optimize.periodic:
            warnings.warn("optimize.periodic = true, but the load repeats over no stretch long "
                          "enough to halve the horizon; another method solves it", stacklevel=4)
        return None
    levers = pb.levers
    if levers is not None and not _repeats(pb.step_data(), st):
        return None  # the levers' data do not repeat with the load
    build_s = solve_s = 0.0
    best = None
    while red is not None:
        t0 = time.perf_counter()
        mu = build_upper(load, dt_s, data, spec, optimize, red, levers)
        up_sp = upper_spectral(pb, red, expand_plan)
        try:
            xu, iu = solve_model(mu, lambda red=red: build_upper(load, dt_s, data, spec, optimize, red, levers),
                                 optimize, dt_s, time.perf_counter() - t0, spectral=up_sp)
        except SolverTimeLimit as stop:
            return stopped_strategy(pb, stop, build_s=build_s, solve_s=time.perf_counter() - t0)
        except InfeasibleError:
            return None  # the restriction fails: another strategy decides (and diagnoses)
        t0 = time.perf_counter()
        ml = build_lower(load, dt_s, data, spec, optimize, red, levers)
        cand = []
        if up_sp is not None and up_sp.rows.cuts:
            # the upper's rows active at its optimum, those the relaxation can carry
            cand = lower_spectral(pb, red).carried_rows(up_sp, ml, up_sp.pcc_full(mu, xu))
        build_s += iu.build_s + time.perf_counter() - t0
        sol, lower, s_s = solve_lower_bound(ml, cand, optimize, upper_usd=iu.relaxed_objective_usd,
                                            upper_solve_s=iu.solve_s)
        solve_s += iu.solve_s + s_s
        if sol.status != "ok":
            return None
        gap = gap_frac(iu.relaxed_objective_usd, lower)
        if best is None or gap < best[0]:
            best = (gap, red, mu, xu, iu, lower)
        if gap <= optimize.max_gap_frac or not optimize.periodic:
            break
        red = plan_reduction(st, k_block, load.size, q=2 * red.q)
    gap, red, mu, xu, iu, lower = best
    if gap > optimize.max_gap_frac:
        if not optimize.periodic:
            return None
        warnings.warn(f"the periodic reduction proves its plan within {gap:.3g} of the optimum, "
                      f"above optimize.max_gap_frac = {optimize.max_gap_frac:g} (the horizon is "
                      f"too short for a tighter bracket; periodic = false solves the full LP)",
                      stacklevel=4)
    plan, lever_plan = expand_plan(mu, xu, red)
    bad = verify_plan(load, dt_s, data, spec, plan, optimize.limit_margin_frac, levers=levers,
                      lever_plan=lever_plan)
    if bad is not None:
        warnings.warn(f"the periodic reduction's plan breaks {bad} on the full horizon; another "
                      f"method solves it", stacklevel=4)
        return None
    obj = 1000.0 * plan_cost_kusd(data, plan, dt_s, optimize.energy_price_usd_per_mwh)
    if levers is not None:
        obj += 1000.0 * sum(lever_cost_kusd(levers, lever_plan, dt_s,
                                            optimize.energy_price_usd_per_mwh).values())
    info = SolveInfo(status="optimal", termination=iu.termination, objective_usd=obj,
                     build_s=build_s, solve_s=solve_s, n_variables=iu.n_variables,
                     n_constraints=iu.n_constraints, n_repaired_steps=iu.n_repaired_steps,
                     relaxed_objective_usd=iu.relaxed_objective_usd,
                     repair_solve_s=iu.repair_solve_s, method="periodic",
                     # a bound above the plan's cost is solver tolerance: clip it
                     lower_bound_usd=min(lower, obj), gap_frac=gap_frac(obj, lower),
                     period_steps=red.stretch.period, n_spectral_bins=iu.n_spectral_bins,
                     n_spectral_rounds=iu.n_spectral_rounds)
    return pack_result(load, data, plan, info, levers=levers, lever_plan=lever_plan, dt_s=dt_s)


def _repeats(d: np.ndarray, st: PeriodicStretch) -> bool:
    """Whether every row of ``d`` (K, T) repeats with the stretch's period over it."""
    a, b, p = st.start, st.stop, st.period
    x = d[:, a:b]
    tol = 1e-9 * max(float(np.max(np.abs(d))), 1.0)
    return bool(np.all(np.abs(x[:, p:] - x[:, :-p]) <= tol))


def expand_plan(mu: Model, xu: np.ndarray, red: Reduction) -> tuple[dict, dict]:
    """Storage plan and lever plan of the restriction's solution, on the full horizon."""
    plan = {}
    for n, (p_r, e_r, ch, dis, e) in plan_from_columns(mu, xu).items():
        drift = float(xu[mu.cols[n]["e_break"][0]] - e[red.a])
        plan[n] = (p_r, e_r, expand(red, ch), expand(red, dis), expand(red, e, drift))
    lever_plan = {j: {**d, "burn": None if d["burn"] is None else expand(red, d["burn"])}
                  for j, d in lever_plan_from_columns(mu, xu).items()}
    return plan, lever_plan
