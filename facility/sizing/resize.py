"""Re-size a foresight design until the controller the site will run keeps it compliant.

The perfect-foresight LP gives the least storage any controller could need. A deployable
controller (the MPC plans on measured history and the declared schedule, never the future
load; the filter and moving-average controllers follow the measured load) needs more: the
reserve its forecast errors eat, and the margin it plans with.
:func:`resize_for_controller` verifies a design under the scenario's controller and, where
that breaks a limit, grows the extendable storages' ratings by a bracketed search:

1. the first design: the foresight design raised to the step floor (the storage the largest
   unannounced crash or restart needs whatever the controller,
   :func:`facility.sizing.step.step_floor`); compliant: done;
2. what ran out grows by :data:`GROW` (:func:`grown`: P̂ of a storage the controller found
   at its power limit, Ê of one it found at a SoC bound, the one grown least so far where it
   found both (one resource at a time, never both together), the rating grown least so far
   where none saturated), within the ``max_*`` bounds and :data:`MAX_SCALE`, until a run is
   compliant (the bracket: the last failing design and that one) or nothing that ran out can
   grow (exit 3 naming the limits and the designs tried);
3. trim, one rating at a time (:func:`search_design`): the rating of the compliant design
   whose lower end (its largest value among the failing designs below it) would save most
   moves to the geometric midpoint, while its bracket is wider than :data:`RESIZE_TOL_FRAC`,
   the saving is more than :data:`RESIZE_COST_TOL_FRAC` of the design's annual cost (a
   bracket on the energy of a power-priced battery buys nothing) and runs are left
   (``optimize.max_resize_runs`` verification runs in all). P and E trade this way: a power
   grown before the energy caught up comes back down.

The design returned is the cheapest compliant one found (annual cost of its ratings and of
the dispatch its verification ran, :func:`facility.sizing.mix.annual_cost`). The search assumes more
storage does not make the controller worse (monotone along the path); every design it returns
has been verified by a full co-simulation with that controller, so the answer never rests on
the assumption. Growing only what ran out keeps a controller that lacks power from buying
energy it does not use (and the other way round). Which resource ran out comes from the run's
guard breaches or its ``control.n_saturated_steps_by_limit`` (:func:`_saturated`).

Imports: :mod:`facility.cosim` (the verification runs), :mod:`facility.sizing.mix` and
:mod:`facility.sizing.step` (the floor), :mod:`facility.config.technology`, :mod:`facility.metrics`
and :mod:`facility.report.design` (the growth's text in the log); never
:mod:`facility.sizing.pipeline` nor :mod:`facility.run`. The ``resize`` block of ``sizing.json``
is :func:`facility.sizing.record.resize_block`.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace

import numpy as np

from facility.config.technology import section_of, unit_configs
from facility.cosim.design import simulate_design
from facility.metrics import limit_rows
from facility.report.design import growth_text
from facility.sizing import mix
from facility.sizing.mix import UNIT_ZERO_FRAC
from facility.sizing.step import floored_design, within_duration

__all__ = ["ControllerResizing", "resize_for_controller", "search_design", "grown", "scales", "ratings_cost",
           "RESIZE_COST_TOL_FRAC", "GROW", "RESIZE_TOL_FRAC", "MAX_SCALE",
           "MIN_DURATION_S"]

log = logging.getLogger(__name__)

#: Growth factor of the bracketing phase. [-]
GROW = 1.5
#: The bisection stops when the bracket is this narrow (relative). [frac]
RESIZE_TOL_FRAC = 0.05
#: ... or when the ratings' annual cost (capex annuity and fixed O&M) of the two designs
#: differs by less than this share of the compliant one's annual cost: a bracket on a
#: rating that costs little is not worth a verification run. [frac]
RESIZE_COST_TOL_FRAC = 0.02
#: Largest growth tried where no ``max_*`` bound stops it first. [-]
MAX_SCALE = 16.0
#: A sized storage with power but no energy (or energy but no power) cannot be controlled:
#: the search starts it from this duration at its power (or this power for its energy). [s]
MIN_DURATION_S = 10.0


@dataclass
class ControllerResizing:
    """The design the controller keeps compliant, and the search behind it.

    Attributes
    ----------
    results : Results
        The verification run of the design returned (the smallest compliant α, or the last run
        when none was compliant).
    scale : float
        The largest growth of a rating of that design over the foresight design's. [-]
    ratings : dict
        ``{storage: (p_rated_mw, e_rated_mwh)}`` of that design. [MW], [MWh]
    tried : list of dict
        Each verification run: ``scale``, ``compliant``, ``failing`` (the limits it broke).
    compliant : bool
        Whether ``results`` is compliant.
    gpu_plan : GpuPlan or None
        The static GPU levers every run realized (:func:`facility.sizing.mix.realize`, closed loop).
    """

    results: object
    scale: float
    ratings: dict
    tried: list = field(default_factory=list)
    compliant: bool = False
    gpu_plan: object = None
    base: dict = field(default_factory=dict)


def _base_ratings(scenario, sol) -> dict:
    """Foresight ratings of the extendable storage units (a hybrid section's by unit), with a
    floor where one of the two is 0 (within the unit's duration bounds)."""
    out = {}
    for n, cfg in scenario.storage_units().items():
        if not cfg.extendable:
            continue
        p, e = float(sol.p_rated_mw_opt[n]), float(sol.e_rated_mwh_opt[n])
        if section_of(n) != n and p <= UNIT_ZERO_FRAC * max(1.0, sum(
                float(v) for u, v in sol.p_rated_mw_opt.items() if section_of(u) == section_of(n))):
            p = e = 0.0            # a hybrid unit the LP left out (solver round-off)
        d_s = MIN_DURATION_S
        if cfg.min_duration_h is not None:     # within the unit's technology bounds
            d_s = max(d_s, 3600.0 * cfg.min_duration_h)
        if cfg.max_duration_h is not None:
            d_s = min(d_s, 3600.0 * cfg.max_duration_h)
        if p > 0 and e <= 0:
            e = p * d_s / 3600.0
        elif e > 0 and p <= 0:
            p = e * 3600.0 / d_s
        out[n] = (p, e)
    return out


def _saturated(res) -> dict:
    """``{storage: (power_steps, soc_steps)}``: what each storage ran out of.

    Where the fast guard reports breaches (``control.guard.breach_steps_by_storage``: the
    steps the PCC broke a limit because a storage saturated, by resource), those, since they
    name what broke the limit: ``power`` (and ``network``, the headroom its power met) as
    power, ``min_soc`` / ``max_soc`` as SoC. Else the steps the controller found each storage
    at its power limit and at a SoC bound (``control.n_saturated_steps_by_limit``, which
    :func:`facility.control.run.run_control` counts for every controller; none without a
    storage in the run)."""
    ctl = res.metrics.get("control") or {}
    guard = (ctl.get("guard") or {}).get("breach_steps_by_storage") or {}
    from_guard = {n: (int(d.get("power", 0)) + int(d.get("network", 0)),
                      int(d.get("min_soc", 0)) + int(d.get("max_soc", 0)))
                  for n, d in guard.items() if n != "none" and isinstance(d, dict)}
    if any(a + b for a, b in from_guard.values()):
        return from_guard
    by = ctl.get("n_saturated_steps_by_limit") or {}
    return {n: (int(d.get("power", 0)), int(d.get("soc", 0))) for n, d in by.items()}


def grown(point: dict, sat: dict, bounds: dict, base: dict | None = None,
          durations: dict | None = None) -> dict:
    """The next design of the bracketing phase: what ran out grows by :data:`GROW`.

    A storage that hit its power limit (and no SoC bound) grows its P̂, one that hit a SoC
    bound (and not its power limit) its Ê, one that hit both the one grown least so far (P̂
    when level; never both at once, so the next run tells which one was short). Where no storage
    saturated (the controller broke a limit with room left: its plan found no room within
    the power headroom, SoC reserves and end bands it keeps), the rating grown least so far
    over the foresight design grows (both when level), which brings an earlier one-sided
    growth back to a uniform one: on the ERCOT checkpoint case of issue 39 the MPC saturated
    power (P̂ × 1.5 → 2.25) and then broke the window limit with nothing saturated until
    Ê caught up (compliant at P̂, Ê × 2.55), and a band limit (which the MPC does not plan)
    needs both. Where what ran out is at its bounds, every rating that can grows. Ratings
    stop at their ``max_*`` bound.

    Parameters
    ----------
    point : dict
        ``{storage: (p_rated_mw, e_rated_mwh)}`` of the failed run. [MW], [MWh]
    sat : dict
        ``{storage: (power_steps, soc_steps)}`` of that run (:func:`_saturated`).
    bounds : dict
        ``{storage: (max_p_rated_mw, max_e_rated_mwh)}`` (inf where unbounded). [MW], [MWh]
    base : dict, optional
        The foresight design (same form as ``point``); default ``point``.
    durations : dict, optional
        ``{storage: (min_duration_h, max_duration_h)}`` (None where unbounded): a grown design
        stays within them (:func:`within_duration`; a power-only growth of a battery with a
        1-h minimum grows its energy with it).
    """
    def step(rule) -> dict:
        out = {}
        for n, (p, e) in point.items():
            gp, ge = rule(n)
            p1, e1 = (min(p * GROW, bounds[n][0]) if gp else p, min(e * GROW, bounds[n][1]) if ge else e)
            out[n] = within_duration(p1, e1, (durations or {}).get(n, (None, None)), bounds[n])
        return out

    ps, es, _ = scales(point, base or point)

    def lagging(n: str) -> tuple[bool, bool]:
        # the rating(s) grown least so far over the foresight design (both when level)
        return ps[n] <= es[n] * (1 + 1e-9), es[n] <= ps[n] * (1 + 1e-9)

    any_sat = any(sp > 0 or se > 0 for n, (sp, se) in sat.items() if n in point)

    def saturated(n: str) -> tuple[bool, bool]:
        # what ran out; where both did, the one grown least so far (never both at once)
        gp, ge = (sat.get(n, (0, 0))[0] > 0, sat.get(n, (0, 0))[1] > 0)
        if gp and ge:
            lp, le = lagging(n)
            return (True, False) if lp else (False, True)
        return gp, ge

    first = saturated if any_sat else lagging
    for rule in (first, lambda n: (True, True)):    # then everything that can still grow
        out = step(rule)
        if out != point:
            return out
    return point


def scales(point: dict, base: dict) -> tuple[dict, dict, float]:
    """P̂ and Ê of ``point`` over the foresight design's, per storage, and the largest. [-]"""
    ps = {n: (p / base[n][0] if base[n][0] > 0 else 1.0) for n, (p, e) in point.items()}
    es = {n: (e / base[n][1] if base[n][1] > 0 else 1.0) for n, (p, e) in point.items()}
    return ps, es, max([1.0, *ps.values(), *es.values()])


def resize_for_controller(scenario, sol, *, progress: bool = False,
                          max_runs: int | None = None, floor: dict | None = None) -> ControllerResizing:
    """Grow the foresight design until the scenario's controller keeps the site compliant.

    Parameters
    ----------
    scenario : Scenario
        With ``controller.kind`` the controller that verifies (not ``optimal``).
    sol : SizingResult
        The foresight design (:func:`facility.sizing.network.size_through_network`).
    max_runs : int, optional
        Verification runs at most (default ``optimize.max_resize_runs``; 1 = the first
        design only).
    floor : dict, optional
        The step floor (:func:`facility.sizing.step.step_floor`): the search starts from the
        foresight design raised to it (:func:`facility.sizing.step.floored_design`).

    Returns
    -------
    ControllerResizing
        ``compliant`` false when no design up to the ``max_*`` bounds (or :data:`MAX_SCALE`
        × the foresight ratings) was compliant, or the runs ran out before one was.
    """
    sized0, _, gpu_plan = mix.realize(scenario, sol, closed_loop=True)
    base = _base_ratings(scenario, sol)
    cfgs = scenario.storage_units()
    caps = {n: (cfgs[n].max_p_rated_mw if cfgs[n].max_p_rated_mw is not None else math.inf,
                cfgs[n].max_e_rated_mwh if cfgs[n].max_e_rated_mwh is not None else math.inf) for n in base}
    durations = {n: (cfgs[n].min_duration_h, cfgs[n].max_duration_h) for n in base}
    start = floored_design(base, floor, caps, durations)
    bounds = {n: (min(caps[n][0], max(p, base[n][0]) * MAX_SCALE), min(caps[n][1], max(e, base[n][1]) * MAX_SCALE))
              for n, (p, e) in start.items()}
    n_runs = int(scenario.optimize.max_resize_runs if max_runs is None else max_runs)
    tried: list[dict] = []
    runs: list[tuple[dict, object]] = []     # (design, its verification run)

    def verify(point: dict) -> tuple[bool, dict, float | None]:
        # search_design's verify: compliant, what ran out, the annual cost where compliant
        upd = {}
        for n, (p, e) in point.items():
            sec = section_of(n)
            if sec in upd:
                continue
            if sec != n:       # a hybrid section: all its units at once
                units = {u: r for u, r in point.items() if section_of(u) == sec}
                upd[sec] = mix.hybrid_fixed(sec, sized0.storages()[sec], units)
            else:
                upd[n] = sized0.storages()[n].model_copy(update={"p_rated_mw": p, "e_rated_mwh": e})
        res = simulate_design(sized0.model_copy(update=upd), progress=progress, gpu_plan=gpu_plan)
        comp = res.metrics["compliance"]
        failing = [k for k, v in limit_rows(comp).items() if not v]
        sat = _saturated(res)
        ps, es, a = scales(point, base)
        tried.append({"scale": a, "p_scale": ps, "e_scale": es, "compliant": bool(comp["compliant"]),
                      "failing": failing, "saturated": {n: {"power": v[0], "soc": v[1]} for n, v in sat.items()}})
        runs.append((point, res))
        cost = _design_cost(scenario, sol, point, res) if comp["compliant"] else None
        log.info("verification under controller %r at %s: %s", scenario.controller.kind,
                 growth_text(ps, es) or "the foresight design",
                 "compliant" if comp["compliant"] else "breaks " + ", ".join(failing))
        return bool(comp["compliant"]), sat, cost

    def fit(point: dict) -> dict:
        return {n: within_duration(p, e, durations[n], bounds[n]) for n, (p, e) in point.items()}

    best, found, _ = search_design(start, verify, lambda pt, sat: grown(pt, sat, bounds, base, durations),
                                   lambda pt: ratings_cost(scenario, pt), n_runs, fit=fit)
    res = next(r for pt, r in reversed(runs) if pt is best)
    return ControllerResizing(results=res, scale=scales(best, base)[2], ratings=best, tried=tried,
                              compliant=found, gpu_plan=gpu_plan, base=base)


def search_design(start: dict, verify, grow, cost_of, n_runs: int, fit=None) -> tuple[dict, bool, list]:
    """The resize search on designs ``{unit: (p_rated_mw, e_rated_mwh)}`` (pure: the runs are
    ``verify``'s).

    1. **Bracket**: verify ``start``; while it fails, ``grow`` it by what ran out and verify
       again, until a design is compliant (``hi``) or nothing can grow.
    2. **Trim**, coordinate by coordinate: each rating of ``hi`` has a lower end, the largest
       value of that rating among the failing designs that is below ``hi``'s (the value
       where it last ran short). Of the ratings whose bracket is wider than
       :data:`RESIZE_TOL_FRAC` and whose lower end would save more than
       :data:`RESIZE_COST_TOL_FRAC` of ``hi``'s annual cost (``cost_of``: the ratings' cost),
       the one that would save most moves to the geometric midpoint (the others stay at
       ``hi``'s): compliant, it is the new ``hi``; failing, the new lower end. The P and E of
       a storage trade this way: a power grown by 1.5 x before the energy caught up comes
       back down once the energy is there.
    3. The cheapest compliant design verified (``verify``'s cost) is returned.

    Parameters
    ----------
    start : dict
        First design. [MW], [MWh]
    verify : callable
        ``verify(point) -> (compliant, saturated, annual_cost_usd_per_year or None)``;
        ``saturated`` as :func:`grown` takes it.
    grow : callable
        ``grow(point, saturated) -> point`` (:func:`grown`).
    cost_of : callable
        ``cost_of(point) -> float``: the ratings' annual cost. [USD/yr]
    n_runs : int
        Verifications at most.
    fit : callable, optional
        ``fit(point) -> point``: a trimmed design moved into its duration bounds.

    Returns
    -------
    (best, compliant, history)
        The design returned (the cheapest compliant one, else the last verified), whether it
        is compliant, and every ``(point, compliant, cost)`` verified.
    """
    history: list[tuple[dict, bool, float | None]] = []

    def run(pt: dict) -> tuple[bool, dict]:
        ok, sat, cost = verify(pt)
        history.append((pt, bool(ok), cost))
        return bool(ok), sat

    point, hi = dict(start), None
    while len(history) < n_runs:
        ok, sat = run(point)
        if ok:
            hi = point
            break
        nxt = grow(point, sat)
        if nxt == point:            # every rating that ran out is at its bound
            break
        point = nxt
    if hi is not None:
        lows: dict = {}
        for n in hi:
            for i in (0, 1):
                vals = [pt[n][i] for pt, ok, _ in history if not ok and pt[n][i] < hi[n][i] * (1 - 1e-9)]
                if vals:
                    lows[(n, i)] = max(vals)

        def with_value(pt: dict, c: tuple, v: float) -> dict:
            n, i = c
            out = dict(pt)
            out[n] = (v, pt[n][1]) if i == 0 else (pt[n][0], v)
            return out

        while len(history) < n_runs:
            hi_cost = next(cost for pt, ok, cost in reversed(history) if pt is hi)
            ref = cost_of(hi) if hi_cost is None else hi_cost
            pick, best_gap = None, 0.0
            for c, lo_v in lows.items():
                hv = hi[c[0]][c[1]]
                if lo_v >= hv or (lo_v > 0 and hv / lo_v <= 1.0 + RESIZE_TOL_FRAC):
                    continue
                gap = cost_of(hi) - cost_of(with_value(hi, c, lo_v))
                if gap > RESIZE_COST_TOL_FRAC * ref and gap > best_gap:
                    pick, best_gap = c, gap
            if pick is None:
                break
            lo_v, hv = lows[pick], hi[pick[0]][pick[1]]
            mid = with_value(hi, pick, math.sqrt(lo_v * hv) if lo_v > 0 else 0.5 * hv)
            if fit is not None:
                mid = fit(mid)
            if mid[pick[0]][pick[1]] >= hv * (1 - 1e-9):   # the duration bounds hold it up
                lows.pop(pick)
                continue
            if run(mid)[0]:
                hi = mid
            else:
                lows[pick] = mid[pick[0]][pick[1]]
    ok_pts = [(pt, cost) for pt, ok, cost in history if ok]
    if ok_pts:
        best = min(ok_pts, key=lambda x: math.inf if x[1] is None else x[1])[0]
        return best, True, history
    return history[-1][0], False, history


def ratings_cost(scenario, point: dict) -> float:
    """Annual cost of a design's ratings alone: capex annuity and fixed O&M per kW and per kWh
    (:func:`facility.sizing.mix.ratings_costs`, as :func:`facility.sizing.mix.annual_cost`
    counts them, without the dispatch's terms). [USD/yr]"""
    cfgs = {u: uc for n, c in scenario.storages().items() for u, uc in unit_configs(n, c).items()}
    out = 0.0
    for n, (p, e) in point.items():
        _, annuity, om = mix.ratings_costs(cfgs[n], scenario.optimize, p, e)
        out += annuity + om
    return float(out)


def _design_cost(scenario, sol, point: dict, res) -> float:
    """Annual cost of a verified design: its ratings and the dispatch its run made. [USD/yr]"""
    rs = ControllerResizing(results=res, scale=1.0, ratings=point)
    return float(mix.annual_cost(scenario, realized_sizing(scenario, sol, rs))["cost"]["total_usd_per_year"])


def realized_sizing(scenario, sol, rs: ControllerResizing):
    """A :class:`~facility.optimize.SizingResult` of the delivered design: the grown ratings and
    the dispatch the controller ran in the verification (for its annual cost)."""
    ts = rs.results.timeseries
    upd_p, upd_e = dict(sol.p_rated_mw_opt), dict(sol.e_rated_mwh_opt)
    p_sto, ch, dis = {}, {}, {}
    for n in sol.p_rated_mw_opt:
        if n in rs.ratings:
            upd_p[n], upd_e[n] = rs.ratings[n]
        p = np.asarray(ts[f"p_{n}_mw"], dtype=float) if f"p_{n}_mw" in ts else np.zeros(len(ts))
        p_sto[n], ch[n], dis[n] = p, np.maximum(p, 0.0), np.maximum(-p, 0.0)
    levers = {j: {**d, "burn_mw": None} for j, d in sol.levers.items()}
    return replace(sol, p_rated_mw_opt=upd_p, e_rated_mwh_opt=upd_e, p_storage_mw=p_sto, p_charge_mw=ch,
                   p_discharge_mw=dis, p_pcc_mw=np.asarray(ts["p_pcc_mw"], dtype=float), levers=levers)
