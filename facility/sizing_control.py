"""Re-size a foresight design until the controller the site will run keeps it compliant.

The perfect-foresight LP gives the least storage any controller could need. A deployable
controller (the MPC plans on measured history and the declared schedule, never the future
load; the filter and moving-average controllers follow the measured load) needs more: the
reserve its forecast errors eat, and the margin it plans with.
:func:`resize_for_controller` verifies the foresight design under the scenario's controller
and, where that breaks a limit, grows every extendable storage's ratings by one factor α ≥ 1
(P̂ and Ê together, within their ``max_*`` bounds) by a bracketed search:

1. α = 1 (the foresight design); compliant: done;
2. α ← min(:data:`GROW` · α, α_max) until a run is compliant (the bracket [α_lo, α_hi]) or
   α_max fails (exit 3 naming the limits and the factors tried);
3. bisection (geometric mean) while α_hi / α_lo > 1 + :data:`RESIZE_TOL_FRAC` and runs are
   left (``optimize.max_resize_runs`` verification runs in all).

The design returned is the smallest compliant α found. The search assumes more storage does
not make the controller worse (monotone); every point it returns has been verified by a full
co-simulation with that controller, so the answer never rests on the assumption.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["ControllerResizing", "resize_for_controller", "GROW", "RESIZE_TOL_FRAC", "MAX_SCALE",
           "MIN_DURATION_S"]

log = logging.getLogger(__name__)

#: Growth factor of the bracketing phase. [-]
GROW = 1.5
#: The bisection stops when the bracket is this narrow (relative). [frac]
RESIZE_TOL_FRAC = 0.05
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
        α of that design. [-]
    ratings : dict
        ``{storage: (p_rated_mw, e_rated_mwh)}`` of that design. [MW], [MWh]
    tried : list of dict
        Each verification run: ``scale``, ``compliant``, ``failing`` (the limits it broke).
    compliant : bool
        Whether ``results`` is compliant.
    gpu_plan : GpuPlan or None
        The static GPU levers every run realized (:func:`facility.mix.realize`, closed loop).
    """

    results: object
    scale: float
    ratings: dict
    tried: list = field(default_factory=list)
    compliant: bool = False
    gpu_plan: object = None

    def as_json(self) -> dict:
        """The ``resize`` block of ``sizing.json``."""
        return {"scale": float(self.scale), "runs": len(self.tried), "compliant": bool(self.compliant),
                "tried": [{"scale": float(t["scale"]), "compliant": bool(t["compliant"]),
                           "failing": list(t["failing"])} for t in self.tried]}


def _base_ratings(scenario, sol) -> dict:
    """Foresight ratings of the extendable storage units (a hybrid section's by unit), with a
    floor where one of the two is 0 (within the unit's duration bounds)."""
    from facility.config.technology import section_of
    from facility.mix import UNIT_ZERO_FRAC

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


def _max_scale(scenario, base: dict) -> float:
    a = MAX_SCALE
    units = scenario.storage_units()
    for n, (p, e) in base.items():
        cfg = units[n]
        if cfg.max_p_rated_mw is not None and p > 0:
            a = min(a, cfg.max_p_rated_mw / p)
        if cfg.max_e_rated_mwh is not None and e > 0:
            a = min(a, cfg.max_e_rated_mwh / e)
    return max(a, 1.0)


def resize_for_controller(scenario, sol, *, progress: bool = False,
                          max_runs: int | None = None) -> ControllerResizing:
    """Grow the foresight design until the scenario's controller keeps the site compliant.

    Parameters
    ----------
    scenario : Scenario
        With ``controller.kind`` the controller that verifies (not ``optimal``).
    sol : SizingResult
        The foresight design (:func:`facility.sizing_network.size_through_network`).
    max_runs : int, optional
        Verification runs at most (default ``optimize.max_resize_runs``; 1 = the foresight
        design only).

    Returns
    -------
    ControllerResizing
        ``compliant`` false when no α up to α_max (the ``max_*`` bounds, or
        :data:`MAX_SCALE`) was compliant, or the runs ran out before one was.
    """
    from facility import mix
    from facility.config.technology import section_of
    from facility.metrics import limit_rows
    from facility.simulate import run_scenario

    sized0, _, gpu_plan = mix.realize(scenario, sol, closed_loop=True)
    base = _base_ratings(scenario, sol)
    a_max = _max_scale(scenario, base)
    n_runs = int(scenario.optimize.max_resize_runs if max_runs is None else max_runs)
    tried: list[dict] = []
    runs: dict[float, object] = {}

    def ratings_at(a: float) -> dict:
        return {n: (p * a, e * a) for n, (p, e) in base.items()}

    def verify(a: float) -> bool:
        upd = {}
        for n, (p, e) in ratings_at(a).items():
            sec = section_of(n)
            if sec != n:       # a hybrid section's unit
                units = {u: r for u, r in ratings_at(a).items() if section_of(u) == sec}
                upd[sec] = mix.hybrid_fixed(sec, sized0.storages()[sec], units)
            else:
                upd[n] = sized0.storages()[n].model_copy(update={"p_rated_mw": p, "e_rated_mwh": e})
        res = run_scenario(sized0.model_copy(update=upd), progress=progress, gpu_plan=gpu_plan)
        comp = res.metrics["compliance"]
        failing = [k for k, v in limit_rows(comp).items() if not v]
        tried.append({"scale": a, "compliant": bool(comp["compliant"]), "failing": failing})
        runs[a] = res
        log.info("verification under controller %r at %.3g x the foresight ratings: %s", scenario.controller.kind,
                 a, "compliant" if comp["compliant"] else "breaks " + ", ".join(failing))
        return bool(comp["compliant"])

    lo, hi = None, None
    a = 1.0
    while len(tried) < n_runs:
        if verify(a):
            hi = a
            break
        lo = a
        if a >= a_max or not base:
            break
        a = min(a * GROW, a_max)
    if hi is not None and lo is not None:
        while len(tried) < n_runs and hi / lo > 1.0 + RESIZE_TOL_FRAC:
            mid = math.sqrt(lo * hi)
            if verify(mid):
                hi = mid
            else:
                lo = mid
    best = hi if hi is not None else tried[-1]["scale"]
    return ControllerResizing(results=runs[best], scale=best, ratings=ratings_at(best), tried=tried,
                              compliant=hi is not None, gpu_plan=gpu_plan)


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
