"""What the optimizer returns when the solver stops at ``optimize.time_limit_s``.

HiGHS' dual simplex, stopped by its time limit, holds no primal-feasible point (its iterates
are dual feasible only), so the LP gives no plan. Instead of failing with nothing,
:func:`best_effort` returns

* an upper bound: a plan built outside the LP (:func:`follower_plan`), verified step by step
  against every constraint of the full LP (:func:`facility.optimize.certificates.verify.verify_plan`), its
  cost the objective;
* a lower bound (:func:`averaged_lower_bound_usd`): the optimum of a small LP on group
  averages, a relaxation of the full LP (proof there);
* ``method`` ``"follower"``, ``status`` ``"gap"`` and their ``gap_frac``, with a warning naming
  ``optimize.time_limit_s`` and the gap.

Where no plan passes the check, :class:`~facility.errors.SolverTimeLimit` is raised as before (exit 3).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import numpy as np

from facility.errors import SolverTimeLimit
from facility.optimize.model.storage_data import S_PER_H
from facility.optimize.model.formulation import build_model, plan_cost_kusd
from facility.optimize.model.result import SizingResult, SolveInfo, gap_frac, pack_result
from facility.optimize.certificates.verify import verify_plan
from facility.optimize.solvers.solve import solve_lp
from facility.optimize.model.windows import lag_bounds

__all__ = ["follower_plan", "averaged_lower_bound_usd", "trivial_lower_bound_usd",
           "best_effort", "stopped_strategy", "time_limit_advice", "full_lp_reasons"]

#: Coarse steps of the averaged relaxation (its LP solves in about a second here).
LOWER_BOUND_STEPS = 1200


def _moving_average(x: np.ndarray, w: int) -> np.ndarray:
    """Centred moving average over ``w`` samples, the series extended by its end values."""
    if w <= 1:
        return x.copy()
    left, right = w // 2, w - 1 - w // 2
    xp = np.concatenate([np.full(left, x[0]), x, np.full(right, x[-1])])
    c = np.concatenate([[0.0], np.cumsum(xp)])
    return (c[w:] - c[:-w]) / w


def _energy(s, e0: float, ch: np.ndarray, dis: np.ndarray, dt_s: float) -> np.ndarray:
    """Stored energy at the step boundaries (T+1) of the SoC recursion from ``e0``. [MWh]"""
    from scipy.signal import lfilter

    h = dt_s / S_PER_H
    a = 1.0 - s.sigma_per_h * h
    rec = lfilter([1.0], [1.0, -a], h * (s.eta_c * ch - dis / s.eta_d), zi=[a * e0])[0]
    return np.concatenate([[e0], rec])


def _size_for(s, p_mw: np.ndarray, dt_s: float, check_bounds: bool = True):
    """Smallest ratings that carry the storage power ``p_mw`` (consumer frame) from the
    initial SoC within the SoC bounds: ``(p_rated, e_rated, ch, dis, e)``, or None.

    The stored energy is affine in the energy rating Ê, e_t = α_t Ê + d_t (α_t = s_0 a^t:
    the initial energy s_0 Ê decaying by self-discharge, d_t: the recursion from 0), so each
    SoC bound is one linear inequality in Ê. ``check_bounds = False`` ignores the rating
    bounds (None then only where no Ê holds the SoC bounds)."""
    ch, dis = np.maximum(p_mw, 0.0), np.maximum(-p_mw, 0.0)
    d = _energy(s, 0.0, ch, dis, dt_s)
    alpha = _energy(s, s.soc0, np.zeros_like(ch), np.zeros_like(ch), dt_s)  # e for Ê = 1, p = 0
    lo = s.e_lo
    for coef, rhs in ((s.soc_max - alpha, d), (alpha - s.soc_min, -d)):
        # coef Ê >= rhs at every boundary
        pos = coef > 1e-12
        if np.any((~pos) & (rhs > 1e-9)):
            return None
        if pos.any():
            lo = max(lo, float(np.max(rhs[pos] / coef[pos])))
    p_r, lo = s.duration_ratings(max(s.p_lo, float(np.max(np.maximum(ch, dis), initial=0.0))), lo)
    if check_bounds and (p_r > min(s.p_hi, s.max_own_p_mw) + 1e-9 or lo > s.e_hi + 1e-9):
        return None
    return p_r, lo, ch, dis, alpha * lo + d


def _terminal_residual(s, base: np.ndarray, delta: float, dt_s: float) -> float:
    """e_T − s_0 Ê of the storage carrying ``base + delta`` at its smallest ratings (rating
    bounds ignored); -inf where the SoC bounds cannot hold. [MWh] Grows with δ: without
    self-discharge it is the recursion's end value d_T, which more charge raises."""
    got = _size_for(s, base + delta, dt_s, check_bounds=False)
    if got is None:
        return -np.inf
    _, e_r, _, _, e = got
    return float(e[-1] - s.soc0 * e_r)


def follower_plan(pb) -> dict | None:
    r"""A feasible plan built outside the LP: the PCC power follows a moving average of the
    load, one storage carries the difference.

    **Window limits.** For a centred moving average M over W samples of a series within
    [L_min, L_max], two samples t_1 < t_2 differ by at most (t_2 − t_1)(L_max − L_min) / W
    (the two windows share all but t_2 − t_1 samples). So with

    .. math::  W = \max_b \lceil k_b (L_{max} - L_{min}) / B_b \rceil

    over the lag bounds b (k_b steps, bound B_b, :mod:`facility.optimize.model.windows`, the margin
    applied) M meets every window limit; with a dynamic range D below the range of M it is
    shrunk towards its mean by the factor D / range(M), which only shortens every difference.
    A constant offset δ of the PCC power changes no window limit and no range: δ is found by
    bisection so that the stored energy ends at least where it started (``at_least_initial``)
    or equal to it (``equal_initial``); ``free`` takes δ = 0.

    **Storage.** The storage power p = M + δ − L goes to the cheapest single storage that can
    carry it (:func:`_size_for`: the smallest ratings within the bounds); the others stay idle
    at their minimum ratings. None when no storage can, with a PCC history, GPU levers or a
    PCC-variation price (receding-horizon problems: the LP is their only method). The plan is
    not checked here: :func:`best_effort` passes it to
    :func:`facility.optimize.certificates.verify.verify_plan` (converter ramp, network and spectral limits
    are checked there, not designed for).
    """
    if pb.p_pcc_history_mw is not None or pb.levers is not None or pb.pcc_variation_cost_usd_per_mw > 0:
        return None
    load = np.asarray(pb.load_mw, dtype=float)
    span = float(np.ptp(load))
    w = 1
    for lb in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac):
        if lb.bound_mw <= 0:
            return None
        w = max(w, int(np.ceil(lb.k * span / lb.bound_mw)) + 1)
    pcc = _moving_average(load, min(w, 4 * load.size))
    if pb.spec.max_dynamic_range_mw is not None:
        d = pb.spec.max_dynamic_range_mw * (1.0 - pb.margin_frac)
        r = float(np.ptp(pcc))
        if r > d:
            mid = 0.5 * (pcc.max() + pcc.min())
            pcc = mid + (pcc - mid) * (d / r) * (1 - 1e-9)
    base = pcc - load
    best, best_cost = None, np.inf
    for n, s in pb.storages.items():
        others = {}
        for o, so in pb.storages.items():
            if o == n:
                continue
            z = np.zeros(load.size)
            others[o] = (so.p_lo, so.e_lo, z, z, _energy(so, so.soc0 * so.e_lo, z, z, pb.dt_s))

        def plan_at(delta, n=n, s=s):
            got = _size_for(s, base + delta, pb.dt_s)
            return None if got is None else {n: got, **others}

        delta = 0.0
        if s.terminal != "free":
            # bisection on δ for the root of the terminal residual; the high end meets it
            top = float(np.max(np.abs(base))) + 1.0
            lo_d, hi_d = -top, top
            if _terminal_residual(s, base, hi_d, pb.dt_s) < 0:
                continue
            for _ in range(200):
                mid = 0.5 * (lo_d + hi_d)
                if _terminal_residual(s, base, mid, pb.dt_s) >= 0:
                    hi_d = mid
                else:
                    lo_d = mid
                if hi_d - lo_d < 1e-13 * top:
                    break
            delta = hi_d
        plan = plan_at(delta)
        if plan is None:
            continue
        cost = plan_cost_kusd(pb.storages, plan, pb.dt_s, pb.price_usd_per_mwh)
        if cost < best_cost:
            best, best_cost = plan, cost
    return best


def trivial_lower_bound_usd(pb) -> float:
    """Capex at the minimum ratings: every other term of the objective is >= 0 (losses at a
    price >= 0, degradation >= 0), so no plan costs less. [USD]"""
    return 1000.0 * sum(s.c_p * s.p_lo + s.c_e * s.e_lo for s in pb.storages.values())


def averaged_lower_bound_usd(pb, time_limit_s: float, n_target: int = LOWER_BOUND_STEPS) -> float | None:
    r"""A lower bound of the full LP's optimum from an LP on group averages. [USD]

    With g dividing T, the coarse LP has T / g steps of g·Δt: the load is the group mean
    :math:`\bar L_i`, every lag bound of k fine steps becomes one of ⌊k / g⌋ coarse steps with
    the same bound (dropped at 0), the network and spectral rows are left out, everything else
    (ratings, SoC bounds, initial and terminal SoC, converter ramps, dynamic range, costs) is as
    in the full LP.

    **Proof** (σ = 0 on every storage; else None). Take any feasible plan of the full LP and
    average every per-step column over each group. The cost is linear in the step columns
    with weight Δt, so the averaged plan costs the same at weight g·Δt; ratings are unchanged.
    The stored energy at group boundaries is unchanged (without self-discharge the recursion is
    a sum), so SoC bounds, the initial and the terminal row hold. Rows linear per step (power
    limit p^ch + p^dis ≤ P̂, the dynamic range envelope) hold for averages. For groups i < j
    with j − i ≤ ⌊k/g⌋, pair each fine step t of group i with t + (j − i) g, a lag ≤ k: every
    pair meets the bound, so do the averages; a converter ramp r over one step gives r·g·Δt
    between consecutive group averages the same way. So the averaged plan is feasible for the
    coarse LP at the same cost, and the coarse optimum is ≤ the full LP's optimum, which is ≤
    the optimum with complementarity. Rows left out only enlarge the coarse feasible set.

    Returns None when it does not apply (self-discharge, PCC history, GPU levers) or its LP
    does not solve within ``time_limit_s``.
    """
    T = pb.n_steps
    if (pb.p_pcc_history_mw is not None or pb.levers is not None
            or any(s.sigma_per_h > 0 for s in pb.storages.values())):
        return None
    want = max(1, int(np.ceil(T / n_target)))
    g = next((d for d in range(want, T + 1) if T % d == 0), T)
    load = pb.load_mw.reshape(-1, g).mean(axis=1) if g > 1 else pb.load_mw
    bounds = [replace(lb, k=lb.k // g) for lb in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac)
              if lb.k // g >= 1]
    data = {n: replace(s, max_feeder_p_mw=np.inf, max_site_p_mw=np.inf) for n, s in pb.storages.items()}
    m = build_model(load, pb.dt_s * g, data, pb.spec, pb.price_usd_per_mwh, margin_frac=pb.margin_frac,
                    bounds=bounds)
    sol, _ = solve_lp(m.lp, replace_time_limit(pb.optimize, time_limit_s))
    if sol.status != "ok":
        return None
    return 1000.0 * float(sol.objective)


def replace_time_limit(optimize, time_limit_s: float):
    """``optimize`` with another solver time limit (a pydantic copy)."""
    return optimize.model_copy(update={"time_limit_s": float(time_limit_s)})


#: Steps up to which HiGHS' simplex solves a full sizing LP in seconds to a minute (jittered
#: loads: 12,000 steps 140 s on a shared core, 36,000 no answer in 600 s; the time grows about
#: as the square of the steps): beyond it a longer time limit rarely helps. [steps]
SIMPLEX_QUICK_STEPS = 6000
#: The interior strategy's shortest horizon (:data:`facility.optimize.strategies.interior.MIN_STEPS`,
#: a test checks they agree). [steps]
INTERIOR_MIN_STEPS = 2000


def full_lp_reasons(pb) -> list[str]:
    """Why a problem goes to the full LP rather than the interior strategy (the conditions of
    :func:`facility.optimize.strategies.interior.applies`), each with the key that changes it."""
    out = []
    if pb.levers is not None:
        out.append("GPU levers are decisions (optimize.levers): each piece is its own LP")
    if pb.p_pcc_history_mw is not None or pb.pcc_variation_cost_usd_per_mw > 0:
        out.append("a receding-horizon dispatch (PCC history or variation price)")
    bad = [n for n, s in pb.storages.items() if not s.soc_min <= s.soc0 <= s.soc_max]
    if bad:
        out.append(f"the initial SoC of {', '.join(bad)} lies outside its band "
                   f"(initial_soc_frac within [min_soc_frac, max_soc_frac])")
    return out


def time_limit_advice(pb, strategy: str = "full") -> str:
    """What helps where ``strategy`` (``"full"``: HiGHS' simplex on the whole horizon,
    ``"interior"``: the interior-point bracket) stopped at ``optimize.time_limit_s``: a longer
    limit only where the LP is small enough to finish soon; else the keys that make it smaller
    or put it on the fast strategy."""
    T = pb.n_steps
    n_units = len(pb.storages)
    fewer = (f", or fewer candidate technologies ({n_units} storage units: bess.technologies; a "
             f"candidate that cannot win is pruned, one that may is solved with the others)"
             if any("." in n for n in pb.storages) else "")
    if strategy == "interior":
        return (f"the interior-point solves grow about linearly in the steps ({T:,} here) and "
                f"units: a larger time.dt_s or a shorter time.horizon_s helps{fewer}; raising "
                f"optimize.time_limit_s helps where a first solve nearly finished")
    why = full_lp_reasons(pb)
    if T <= SIMPLEX_QUICK_STEPS and not why:
        return "raise optimize.time_limit_s for a better plan"
    text = (f"the full LP (HiGHS' simplex, about quadratic in the steps: {T:,} here) rarely "
            f"finishes for a longer optimize.time_limit_s; a larger time.dt_s or a shorter "
            f"time.horizon_s helps{fewer}")
    if why:
        text += f"; it ran instead of the fast interior strategy because {'; '.join(why)}"
    return text


def best_effort(pb, stop: SolverTimeLimit, *, build_s: float = 0.0, solve_s: float = 0.0,
                reason: str | None = None, strategy: str = "full") -> SizingResult:
    """The best verified plan when the LP stopped at its time limit, with its proven gap.

    Parameters
    ----------
    pb : Problem
    stop : SolverTimeLimit
        What the LP solve raised; its ``lower_bound_usd`` (when known, e.g. the LP optimum
        before a complementarity repair that ran out of time) is a candidate lower bound.
    build_s, solve_s : float
        Time already spent. [s]
    reason : str, optional
        Why the LP gave no plan, for the warning (default: the time limit).
    strategy : str
        What stopped (``"full"`` or ``"interior"``): the warning's advice,
        :func:`time_limit_advice`.

    Returns
    -------
    SizingResult
        ``info.status = "gap"``, ``method = "follower"``, ``lower_bound_usd`` the largest of the
        proven bounds (:func:`trivial_lower_bound_usd`, :func:`averaged_lower_bound_usd`,
        ``stop.lower_bound_usd``), ``gap_frac`` from it; a warning states both.

    Raises
    ------
    SolverTimeLimit
        ``stop`` itself, when no plan passes the check (exit 3: no feasible plan found).
    """
    t0 = time.perf_counter()
    limit = float(pb.optimize.time_limit_s)
    plan = follower_plan(pb)
    bad = "no storage can carry it" if plan is None else verify_plan(
        pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.margin_frac)
    if bad is not None:
        raise SolverTimeLimit(f"{stop} No feasible plan either: the fallback plan (PCC on a moving "
                              f"average of the load) breaks {bad}.", stop.diagnosis,
                              stop.lower_bound_usd) from stop
    obj = 1000.0 * plan_cost_kusd(pb.storages, plan, pb.dt_s, pb.price_usd_per_mwh)
    lowers = [trivial_lower_bound_usd(pb)]
    if stop.lower_bound_usd is not None:
        lowers.append(float(stop.lower_bound_usd))
    avg = averaged_lower_bound_usd(pb, max(5.0, 0.25 * limit))
    if avg is not None:
        lowers.append(avg)
    lower = min(max(lowers), obj)
    gap = gap_frac(obj, lower)
    if reason is None:
        reason = f"the solver stopped at optimize.time_limit_s = {limit:g} s before proving an optimum"
    warnings.warn(f"{reason}; returning a verified fallback plan (PCC on a moving average of the "
                  f"load) of {obj:,.0f} USD, proven within gap_frac = {gap:.3g} of the optimum "
                  f"(lower bound {lower:,.0f} USD); {time_limit_advice(pb, strategy)}",
                  stacklevel=4)
    info = SolveInfo(status="gap", termination=str((stop.diagnosis or {}).get("termination", "time limit")),
                     objective_usd=obj, build_s=build_s, solve_s=solve_s + time.perf_counter() - t0,
                     n_variables=0, n_constraints=0, method="follower", lower_bound_usd=lower,
                     gap_frac=gap, relaxed_objective_usd=float("nan"))
    return pack_result(pb.load_mw, pb.storages, plan, info)


def stopped_strategy(pb, stop: SolverTimeLimit, *, build_s: float = 0.0,
                     solve_s: float = 0.0) -> SizingResult:
    """What a strategy whose bracketing LPs stopped at ``optimize.time_limit_s`` returns
    instead of handing over to the full LP (larger: it would only stop again, after its build):
    :func:`best_effort`'s verified plan with its proven gap; with GPU levers ``stop`` itself,
    raised (the lever search decides: a piece that ran out of time may be the cheapest)."""
    if pb.levers is not None:
        raise stop
    return best_effort(pb, stop, build_s=build_s, solve_s=solve_s, strategy="interior")
