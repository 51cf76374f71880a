"""Public entry points and the driver that picks and chains the solution strategies.

``size_storage`` and ``solve_dispatch`` resolve their inputs into one
:class:`~facility.optimize.model.problem.Problem` and call :func:`solve`, which chains the
strategies, each a peer module over the shared LP layer
(:mod:`~facility.optimize.model.formulation`, :mod:`~facility.optimize.solvers.solve`,
:mod:`~facility.optimize.certificates.verify`, :mod:`~facility.optimize.model.result`):

1. :mod:`~facility.optimize.strategies.coarsen` — where it is exact, the problem moves to a coarser
   grid, the rest of the chain solves it there and the plan comes back to the fine grid
   (verified step by step; on failure the chain runs on the fine grid);
2. :mod:`~facility.optimize.strategies.periodic` — where the load repeats exactly over a long stretch;
3. :mod:`~facility.optimize.strategies.interior` — long horizons whose load does not repeat: an
   interior-point solve of a restriction of the LP, bracketed by a Lagrangian lower bound;
4. :mod:`~facility.optimize.strategies.full` — one LP over the horizon; when it stops at
   ``optimize.time_limit_s``, the best verified plan with its proven gap
   (:mod:`~facility.optimize.certificates.fallback`).

A strategy returns None when it does not apply, and the next one is tried.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from typing import Mapping

import numpy as np

from facility.config.technology import unit_configs
from facility.errors import GapWarning, InfeasibleError, ScenarioError, SolverTimeLimit
from facility.optimize.certificates import certify
from facility.optimize.strategies.coarsen import coarsen, expand_result
from facility.optimize.model.storage_data import S_PER_H
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.model.storage_data import resolve_units
from facility.optimize.strategies.box_bounds import BoxBounds
from facility.optimize.certificates.directions import applies as directions_apply, n_forced
from facility.optimize.driver import prune
from facility.optimize.strategies.full import solve_full
from facility.optimize.strategies.idle import solve_idle
from facility.optimize.strategies import interior
from facility.optimize.model.lever_columns import lever_cost_kusd, lever_site_mw
from facility.optimize.strategies.lever_search import leaf_key, search_boxes
from facility.optimize.model.levers import (
    LeverInputs,
    idle_levers,
    lever_pieces,
    piece_lower_bound_kusd,
)
from facility.optimize.strategies.periodic import solve_periodic
from facility.optimize.model.problem import Problem
from facility.optimize.model.result import (
    SizingResult,
    SolveInfo,
    gap_frac,
    pack_result,
    sizing_to_json,
)
from facility.optimize.solvers.solve import SLACK_PENALTY_KUSD, is_time_limit
from facility.optimize.certificates.realize import cost_usd
from facility.optimize.certificates.verify import verify_plan

__all__ = ["SolveInfo", "SizingResult", "size_storage", "solve_dispatch", "sizing_to_json",
           "solve", "solve_levers", "SLACK_PENALTY_KUSD"]

#: Strategies tried in order on one grid; the last one always answers.
GRID_STRATEGIES = (solve_periodic,)


def _check_inputs(p_load_mw, dt_s, storages, allow_none: bool = False) -> np.ndarray:
    load = np.asarray(p_load_mw, dtype=float).ravel()
    if load.size < 1 or not np.all(np.isfinite(load)):
        raise ScenarioError("p_load_mw must be a non-empty array of finite numbers [MW]")
    if not (np.isfinite(dt_s) and dt_s > 0):
        raise ScenarioError(f"dt_s = {dt_s!r} s must be > 0")
    if not storages and not allow_none:
        raise ScenarioError("the optimizer needs at least one enabled storage "
                            "([rack_storage], [ups] or [bess] with enabled = true)")
    return load


def _note_verification_only(spec) -> None:
    if spec.max_band_energy_frac is not None:
        warnings.warn("spec.max_band_energy_frac is checked by the verification run only: the "
                      "in-band share of the AC energy is a ratio of two quadratic forms of the PCC "
                      "power, not a convex limit (max_band_peak_mw and [[bands]] are LP rows)",
                      stacklevel=3)


def solve_on_grid(pb: Problem) -> SizingResult:
    """Solve a problem on its own grid: the first strategy of :data:`GRID_STRATEGIES` that
    applies (an exact reduction), else the interior-point bracket where it applies (long
    horizons whose load does not repeat, :mod:`~facility.optimize.strategies.interior`; for a hybrid
    section with its candidates that cannot win pruned first, :mod:`~facility.optimize.driver.prune`),
    else the full LP.

    A bracket wider than ``optimize.max_gap_frac`` is returned with a warning that says why
    (the time limit, or a plan the LP relaxation cannot prove: simultaneous charge and
    discharge in its optimum).
    """
    for strategy in GRID_STRATEGIES:
        res = strategy(pb)
        if res is not None:
            return res
    # a hybrid section: its candidates that cannot win pruned by a bound first (prune)
    res = prune.solve_hybrid(pb) if prune.applies(pb) else interior.solve_interior(pb)
    if res is None:
        return _bounded_full(pb)
    if res.info.status == "gap":
        res = _milp_bounded(pb, res)
    if res.info.status == "gap":
        _warn_bracket(pb, res)
    return res


def _milp_bounded(pb: Problem, res: SizingResult, forced: dict | None = None) -> SizingResult:
    """With ``optimize.milp_bound_s`` > 0, where the gap is the LP's resistor
    (``gap_reason = "complementarity"``, one storage, no GPU levers): branch and bound on the
    steps where the LP with the forced directions still charges and discharges at once
    (:func:`facility.optimize.certificates.certify.milp_lower_bound_usd`); its bound replaces a smaller one,
    and its plan, verified on the full horizon, the returned one where cheaper. The status
    becomes ``"optimal"`` when the gap then meets ``optimize.max_gap_frac``. ``forced``: the
    directions the window limits force, where the caller has them already (else computed
    here, :func:`facility.optimize.strategies.interior.direction_lower_bound_usd`)."""
    i = res.info
    budget = float(pb.optimize.milp_bound_s)
    if (budget <= 0 or i.gap_reason != "complementarity" or pb.optimize.allow_slack
            or not directions_apply(pb)):
        return res
    if pb.n_steps > certify.MAX_STEPS:
        return res  # not tried: the gap's warning (gap_reason_text) says so
    t0 = time.perf_counter()
    if forced is None:
        _, forced = interior.direction_lower_bound_usd(pb, i.objective_usd)
    mb = certify.milp_lower_bound_usd(pb, i.objective_usd, forced, budget)
    if mb.plan is not None and verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, mb.plan,
                                           pb.margin_frac) is None:
        cost = cost_usd(pb, mb.plan)
        if cost < i.objective_usd:
            res = pack_result(pb.load_mw, pb.storages, mb.plan, replace(i, objective_usd=cost),
                              dt_s=pb.dt_s)
            i = res.info
    i.solve_s += time.perf_counter() - t0
    i.n_binary_steps = mb.n_binary_steps
    if mb.lower_bound_usd > i.lower_bound_usd:
        i.lower_bound_usd = min(mb.lower_bound_usd, i.objective_usd)
    i.gap_frac = gap_frac(i.objective_usd, i.lower_bound_usd)
    if i.gap_frac <= pb.optimize.max_gap_frac:
        i.status, i.gap_reason = "optimal", ""
    return res


def _bounded_full(pb: Problem) -> SizingResult:
    """The full LP's plan; where its complementarity repair leaves it further than
    ``optimize.max_gap_frac`` above the LP optimum (its bound), the directions the window
    limits force (:func:`facility.optimize.strategies.interior.direction_lower_bound_usd`) are fixed and
    the full LP is solved again: its optimum is a bound of the realizable one, its repaired
    plan replaces the first where cheaper. A bracket still wider is reported (``status =
    "gap"``, ``gap_reason = "complementarity"``) with a warning. Each solve has
    ``optimize.time_limit_s`` of its own."""
    res = solve_full(pb)
    i = res.info
    target = float(pb.optimize.max_gap_frac)
    if (i.method != "full" or i.status != "optimal" or not np.isfinite(i.gap_frac)
            or i.gap_frac <= target or pb.optimize.allow_slack):
        return res
    low, forced = interior.direction_lower_bound_usd(pb, i.objective_usd)
    if forced:
        # the full LP itself with those directions (its long lags exact, not on blocks): its
        # optimum is a bound, its repaired plan a plan, often cheaper (the forced directions are
        # those of every cheaper plan, where a repair fixes the sign of the LP's net power)
        try:
            again = solve_full(pb, forced)
        except (InfeasibleError, SolverTimeLimit):
            again = None
        if again is not None and again.info.method == "full":
            low = max(low, again.info.relaxed_objective_usd)
            if again.info.objective_usd < i.objective_usd:
                again.info.solve_s += i.solve_s
                again.info.build_s += i.build_s
                res, i = again, again.info
    if low > i.lower_bound_usd:
        i.lower_bound_usd = min(low, i.objective_usd)
        i.gap_frac = gap_frac(i.objective_usd, i.lower_bound_usd)
        i.n_forced_steps = n_forced(forced)
    if i.gap_frac > target:
        i.status, i.gap_reason = "gap", "complementarity"
        res = _milp_bounded(pb, res, forced)
    if res.info.status == "gap":
        _warn_bracket(pb, res)
    return res


#: What a bracket wider than ``optimize.max_gap_frac`` means, by ``SolveInfo.gap_reason``.
GAP_REASONS = {
    "time": "optimize.time_limit_s = {limit:g} s was reached before the bracket met "
            "optimize.max_gap_frac = {target:g}",
    "complementarity": "the LP relaxation's optimum charges and discharges at once (a resistor "
                       "that burns energy instead of buying energy rating); the realizable plan "
                       "costs more than the LP's optimum, and the bound, even with the "
                       "directions the window limits force, stays below it by more than "
                       "optimize.max_gap_frac = {target:g}",
    "long_lag": "a long window limit (per minute) binds; its block rows bracket it by one block "
                "of lag, wider than optimize.max_gap_frac = {target:g}",
    "dispatch": "a dispatch minimizes the conversion losses alone, a few USD, and the bound from "
                "the interior point's duals is loose against so small an objective (wider than "
                "optimize.max_gap_frac = {target:g}); the plan is verified",
    "groups": "on this fine step the plan holds the PCC power over groups of steps and the bound "
              "averages over them; the two differ by more than optimize.max_gap_frac = {target:g}",
    "spectral": "on this fine step the plan holds the PCC power over groups of steps and the bound "
                "averages over them without the band rows (a bin of group means mixes with its "
                "aliases); the two differ by more than optimize.max_gap_frac = {target:g}",
}


def gap_reason_text(reason: str, optimize, n_steps: int | None = None) -> str:
    """The sentence of :data:`GAP_REASONS` for a ``SolveInfo.gap_reason`` (the time limit when
    empty or unknown), with the limits of ``optimize`` (an ``OptimizeConfig``). ``n_steps``:
    the steps of the grid solved, where known; above :data:`facility.optimize.certificates.certify.MAX_STEPS`
    the complementarity sentence says the branch and bound is not tried, instead of offering
    it."""
    text = GAP_REASONS.get(reason or "time", GAP_REASONS["time"]).format(
        limit=float(optimize.time_limit_s), target=float(optimize.max_gap_frac))
    if reason == "complementarity":
        budget = float(optimize.milp_bound_s)
        if n_steps is not None and n_steps > certify.MAX_STEPS:
            return text + (f" (the branch and bound of optimize.milp_bound_s is not tried above "
                           f"{certify.MAX_STEPS:,} steps, this grid has {n_steps:,}: its root LP alone "
                           f"would outlast any budget)")
        text += (f" (also after optimize.milp_bound_s = {budget:g} s of branch and bound)" if budget > 0
                 else " (with one storage and no GPU levers, --set optimize.milp_bound_s=60 tries "
                      "branch and bound on the steps where it burns, for a tighter bound: seconds to "
                      "minutes up to a few thousand steps)")
    return text


def _warn_bracket(pb: Problem, res: SizingResult) -> None:
    warnings.warn(f"{gap_reason_text(res.info.gap_reason, pb.optimize, pb.n_steps)}: returning the "
                  f"verified {res.info.method} plan of {res.info.objective_usd:,.0f} USD, proven within "
                  f"gap_frac = {res.info.gap_frac:.3g} of the optimum (lower bound "
                  f"{res.info.lower_bound_usd:,.0f} USD)", GapWarning, stacklevel=4)


def solve(pb: Problem) -> SizingResult:
    """Solve a problem: the idle plan where the load needs no storage
    (:mod:`~facility.optimize.strategies.idle`), else on the coarsest exact grid where one exists, else
    on its own grid."""
    _note_verification_only(pb.spec)
    idle = solve_idle(pb)
    if idle is not None:
        return idle
    c = coarsen(pb)
    if c is not None:
        coarse_pb, g = c
        res = expand_result(pb, solve_on_grid(coarse_pb), g)
        if res is not None:
            return res
    return solve_on_grid(pb)


def size_storage(p_load_mw: np.ndarray, dt_s: float, storages: Mapping, spec, optimize, *,
                 t_s: np.ndarray | None = None, levers: LeverInputs | None = None) -> SizingResult:
    """Optimal ratings and dispatch of the storages (and GPU levers) under the spec's limits.

    Parameters
    ----------
    p_load_mw : numpy.ndarray (T,)
        Site power after the GPU-side controls that are not decisions. [MW]
    dt_s : float
        Uniform time step. [s]
    storages : mapping of name -> StorageConfig
        ``rack_storage``, ``ups``, ``bess``; each extendable (ratings chosen in
        ``[min_*, max_*]``) or fixed. May be empty when GPU levers are given.
    spec : SpecConfig
        Limits on the PCC power; every window, dynamic-range and band peak limit that is set is
        a hard constraint.
    optimize : OptimizeConfig
        Economics and solver options.
    t_s : numpy.ndarray (T,), optional
        Time stamps; only checked for a uniform step equal to ``dt_s``. [s]
    levers : LeverInputs, optional
        The jobs' GPU levers that are decisions (:mod:`facility.optimize.model.levers`): one LP per
        combination of floor / cap pieces, the cheapest kept.

    Returns
    -------
    SizingResult

    Raises
    ------
    InfeasibleError
        No rating within the bounds meets the limits; the message says which limit by how much.
    """
    load = _check_inputs(p_load_mw, dt_s, storages, allow_none=levers is not None)
    if t_s is not None:
        t = np.asarray(t_s, dtype=float)
        if t.size != load.size or (t.size > 1 and not np.allclose(np.diff(t), dt_s, rtol=1e-6, atol=1e-9)):
            raise ScenarioError(f"t_s must have {load.size} samples spaced dt_s = {dt_s:g} s apart")
    horizon_h = load.size * dt_s / S_PER_H
    data = resolve_units(storages, optimize, horizon_h)   # hybrid sections: one unit per candidate
    pb = Problem(load, float(dt_s), data, spec, optimize)
    if levers is None:
        return solve(pb)
    return solve_levers(pb, levers)


def solve_levers(pb: Problem, levers: LeverInputs) -> SizingResult:
    """Solve a problem with GPU levers: every floor / cap piece combination
    (:func:`facility.optimize.model.levers.lever_pieces`), the cheapest plan kept.

    The load of each piece is ``pb.load_mw`` plus the site response of the piece's constant
    GPU power change; objectives compare because each includes its piece's constant cost.
    Pieces are solved in the order of a lower bound of their cost
    (:func:`facility.optimize.model.levers.piece_lower_bound_kusd`) and skipped once it is above the
    best plan (exact pruning). A piece that hits the solver's time limit is not infeasible and
    might be the cheapest: the search stops and :func:`_idle_levers` returns the best verified
    plan with its (weak) proven gap. Beyond :data:`~facility.optimize.model.levers.MAX_PIECES`
    combinations the others are bounded by :func:`~facility.optimize.strategies.lever_search.search_boxes`.
    The pieces and boxes share ``optimize.time_limit_s``: each solve gets what is left of it
    (:meth:`Problem.within`).
    """
    if not pb.optimize.annualize:
        raise ScenarioError("optimize.levers with GPU levers weigh storage capex against energy and "
                            "slowdown over the horizon: set optimize.annualize = true (capex annuity "
                            "per horizon), else the full capex competes with a few minutes of energy")
    t_start = time.perf_counter()
    pieces, n_total = lever_pieces(levers, pb.dt_s, pb.optimize.slowdown_usd_per_gpu_h)
    # cheapest bound first; a piece whose bound is above the best plan so far cannot win
    bounds = [1000.0 * piece_lower_bound_kusd(ls, pb.dt_s, pb.price_usd_per_mwh) for ls, _ in pieces]
    order = np.argsort(bounds, kind="stable")
    best, first_err, n_solved, n_carried, lows, solved = None, None, 0, 0, [], {}
    limit = float(pb.optimize.time_limit_s)

    def left(sub: Problem) -> Problem:
        return sub.within(limit - (time.perf_counter() - t_start))

    for i in order:
        ls, d = pieces[i]
        if best is not None and bounds[i] >= best.info.objective_usd:
            lows.append(bounds[i])
            continue
        n_solved += 1
        try:
            if time.perf_counter() - t_start >= limit:
                raise SolverTimeLimit(f"optimize.time_limit_s = {limit:g} s spent before piece "
                                      f"{ls.piece}", {"termination": "Time limit reached"})
            res = solve(left(pb.on_piece(ls, d)))
        except InfeasibleError as exc:
            if is_time_limit(str((exc.diagnosis or {}).get("termination", ""))):
                # not an infeasible piece (the cheapest might be this one): the levers left
                # idle, with a bound over every piece
                return _idle_levers(pb, levers, pieces, bounds, best, lows, exc)
            first_err = first_err or exc
            continue
        solved[leaf_key(ls)] = res
        lows.append(res.info.lower_bound_usd if np.isfinite(res.info.lower_bound_usd)
                    else res.info.objective_usd)
        if best is None or res.info.objective_usd < best.info.objective_usd:
            best = res
    if len(pieces) < n_total:
        # the pieces left out: bounded (and searched) by branch and bound over boxes of them
        box_bounds = BoxBounds()
        best, low, n_lps, complete = search_boxes(
            pb, levers, solved, best, lambda sub: solve(left(sub)),
            lambda sub, upper: box_bounds(left(sub), upper), t_start=t_start, carried=box_bounds)
        n_solved += n_lps
        n_carried = box_bounds.n_carried
        if not complete:
            warnings.warn(f"optimize.levers: {n_total} floor / cap piece combinations; the "
                          f"{len(pieces)} on an even grid of floor and cap values and {n_lps} LPs "
                          f"of a branch and bound over the others (and {n_carried} bounds from "
                          f"their duals) prove the plan within gap_frac = "
                          f"{gap_frac(best.info.objective_usd, low) if best else np.inf:.3g} of the "
                          f"cheapest (optimize.max_gap_frac = {pb.optimize.max_gap_frac:g}; "
                          f"optimize.time_limit_s = {pb.optimize.time_limit_s:g} s)", stacklevel=3)
        lows = [low]
    if best is None:
        raise first_err or InfeasibleError("optimize.levers: no floor / cap piece combination has "
                                           "a feasible plan (every relaxation is infeasible)")
    # the optimum is the least over the pieces: bounded by the least of their bounds, the
    # best plan's among them (a piece with a bracket may prove less than the best plan's)
    low = min(lows)
    best.info = replace(best.info, n_lever_pieces=n_solved, n_lever_carried=n_carried,
                        lower_bound_usd=low, gap_frac=gap_frac(best.info.objective_usd, low))
    return best


def _idle_levers(pb: Problem, levers: LeverInputs, pieces: list, bounds: list, best, lows: list,
                 stop: InfeasibleError) -> SizingResult:
    """What :func:`solve_levers` returns when a piece stops at the time limit: the cheaper of
    the best piece solved and the storage plan with the levers idle (floor at its least value,
    no cap, no burn; the floor's burn is a constant of the load, so the storages' own
    strategies solve it, the interior point on long horizons). Its proven gap is against the
    least of the solved pieces' bounds and :func:`~facility.optimize.model.levers.piece_lower_bound_kusd`
    of every other piece (their floor burn and slowdown, no capex: weak, stated as it is).
    Raises ``stop`` when neither gives a plan."""
    ls, d = idle_levers(levers, pb.dt_s, pb.optimize.slowdown_usd_per_gpu_h)
    const = pb.on_piece(ls, d).load_mw
    lever_plan = {jl.name: {"floor": jl.floor[0] if jl.floor else None, "cap": None,
                            "burn": np.zeros(pb.n_steps)} for jl in ls.jobs}
    full = const + lever_site_mw(ls, lever_plan, pb.dt_s)
    cand = best
    try:
        res = solve(pb.with_load(full))
    except InfeasibleError:
        res = None
    if res is not None:
        plan = {n: (res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n], res.p_charge_mw[n],
                    res.p_discharge_mw[n], res.soc_frac[n] * res.e_rated_mwh_opt[n])
                for n in res.p_rated_mw_opt}
        extra = 1000.0 * sum(lever_cost_kusd(ls, lever_plan, pb.dt_s, pb.price_usd_per_mwh).values())
        info = replace(res.info, objective_usd=res.info.objective_usd + extra)
        idle = pack_result(const, pb.storages, plan, info, levers=ls, lever_plan=lever_plan, dt_s=pb.dt_s)
        if cand is None or idle.info.objective_usd < cand.info.objective_usd:
            cand = idle
    if cand is None:
        raise stop
    low = min(lows + list(bounds) + [cand.info.objective_usd])
    warnings.warn(f"optimize.levers: a floor / cap piece stopped at optimize.time_limit_s = "
                  f"{pb.optimize.time_limit_s:g} s ({stop}); returning the verified plan of "
                  f"{cand.info.objective_usd:,.4g} USD ({'levers idle' if cand is not best else 'a solved piece'}), "
                  f"proven only within gap_frac = {gap_frac(cand.info.objective_usd, low):.3g} "
                  f"(the other pieces' bounds count no capex)", stacklevel=4)
    cand.info = replace(cand.info, status="gap", gap_reason="time", lower_bound_usd=low,
                        gap_frac=gap_frac(cand.info.objective_usd, low), n_lever_pieces=len(lows) + 1)
    return cand


def solve_dispatch(p_load_mw: np.ndarray, dt_s: float, storages: Mapping, spec, optimize, *,
                   initial_soc_frac: Mapping[str, float] | None = None, terminal: str | None = None,
                   p_pcc_history_mw: np.ndarray | None = None,
                   terminal_soc_frac: Mapping[str, tuple[float, float]] | None = None,
                   pcc_variation_cost_usd_per_mw: float = 0.0,
                   pcc_variation_lag_steps: int = 1) -> SizingResult:
    """Optimal dispatch of storages with fixed ratings (optimal controller, MPC windows).

    Parameters
    ----------
    p_load_mw, dt_s, storages, spec, optimize
        As :func:`size_storage`; every storage is treated as fixed (``p_rated_mw``,
        ``e_rated_mwh`` required), whatever its ``extendable``.
    initial_soc_frac : mapping of name -> float, optional
        SoC at t = 0 overriding each section's ``initial_soc_frac`` (receding horizon). [frac]
    terminal : str, optional
        Terminal SoC policy overriding every section's (``at_least_initial``,
        ``equal_initial``, ``free``).
    p_pcc_history_mw : numpy.ndarray, optional
        PCC power of the steps just before t = 0 (same ``dt_s``); the window limits then also
        compare the plan with it. [MW]
    terminal_soc_frac : mapping of name -> (lo, hi), optional
        SoC band the horizon must end in, besides the terminal policy (receding horizon: keep
        each storage away from its bounds for the next window). [frac]
    pcc_variation_cost_usd_per_mw : float
        Price on the PCC power's total variation, sum over t of abs(P[t] - P[t-1]) (the first
        step against the history's last sample): among plans of equal loss the flattest one.
        Counted in ``objective_usd``. [USD/MW]
    pcc_variation_lag_steps : int
        With L > 1 the variation is that of the mean over L steps, sum of
        abs(P[t] - P[t-L]) / L (against the history where t < L): a waveform repeating every
        L steps is not priced, a level change is as with L = 1. [steps]

    Notes
    -----
    With either of the last two set, the LP is solved as it stands (strategy ``full``: the
    coarsening and the periodic reduction are proven for the plain objective and terminal
    policy only).
    """
    load = _check_inputs(p_load_mw, dt_s, storages)
    if terminal is not None and terminal not in ("at_least_initial", "equal_initial", "free"):
        raise ScenarioError(f"terminal = {terminal!r}: use at_least_initial, equal_initial or free")
    horizon_h = load.size * dt_s / S_PER_H
    if not (np.isfinite(pcc_variation_cost_usd_per_mw) and pcc_variation_cost_usd_per_mw >= 0):
        raise ScenarioError(f"pcc_variation_cost_usd_per_mw = {pcc_variation_cost_usd_per_mw!r} "
                            f"USD/MW must be >= 0")
    if int(pcc_variation_lag_steps) < 1:
        raise ScenarioError(f"pcc_variation_lag_steps = {pcc_variation_lag_steps!r} must be >= 1")
    soc0 = dict(initial_soc_frac or {})
    band = dict(terminal_soc_frac or {})
    data = {}
    for sec, cs in storages.items():
        for n, c in unit_configs(sec, cs).items():   # a fixed hybrid section: one per unit
            fixed = c.model_copy(update={"extendable": False}) if c.extendable else c
            data[n] = resolve_storage(n, fixed, optimize, horizon_h, soc0=soc0.get(n), terminal=terminal,
                                      soc_end=band.get(n))
    hist = None if p_pcc_history_mw is None else np.asarray(p_pcc_history_mw, dtype=float).ravel()
    pb = Problem(load, float(dt_s), data, spec, optimize, hist,
                 pcc_variation_cost_usd_per_mw=float(pcc_variation_cost_usd_per_mw),
                 pcc_variation_lag_steps=int(pcc_variation_lag_steps))
    if band or pcc_variation_cost_usd_per_mw > 0:
        _note_verification_only(spec)
        return solve_full(pb)
    return solve(pb)
