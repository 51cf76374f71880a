"""``sizing.json``, assembled in one place: :func:`sizing_record` builds the whole record of a
``facility size`` run from the pipeline's steps (:mod:`facility.sizing.pipeline`), and the
blocks it is made of are written here (:func:`losses_block`, :func:`resize_block`,
:func:`verification_block`).

The keys, in the order they are written:

* per storage (and its units) the delivered ``p_rated_mw_opt`` / ``e_rated_mwh_opt``, the
  dispatch's figures and ``levers`` (:func:`facility.optimize.sizing_to_json` of the foresight
  design; a rating the controller re-size grew is overwritten);
* ``losses``: the loss-aware LP's rounds (:func:`losses_block`);
* ``verify_runs``, ``limit_margin_frac``, ``limit_margin_history``, ``margin_loop``: the
  margin loop of a perfect-foresight verification;
* ``foresight``: the LP's ratings and annual cost;
* ``step_floor`` (where a job fails unannounced under a deployable controller) and ``resize``
  (the controller's search, :func:`resize_block`);
* ``ups.ride_through``: the floor the spec's worst sag sets on an extendable UPS battery;
* the delivered design's cost blocks (:func:`facility.sizing.mix.annual_cost`: ``cost``,
  ``mix``), ``objective_usd_per_year`` (the headline), ``cost_of_no_foresight_usd_per_year``,
  ``verified_by``, ``perfect_foresight``, ``verified`` and ``verification``
  (:func:`verification_block`).

This module may import :mod:`facility.metrics`, :func:`facility.optimize.sizing_to_json` and
:mod:`facility.report.design` (the growth's text); it reads the sizing's objects by their
attributes; of the sizing it imports :func:`facility.sizing.resize.scales` only, never
:mod:`facility.sizing.pipeline` (which calls it) nor :mod:`facility.run`.
"""

from __future__ import annotations

from facility import metrics as fm
from facility.optimize import sizing_to_json
from facility.report.design import growth_text
from facility.sizing.resize import scales

__all__ = ["sizing_record", "losses_block", "resize_block", "verification_block"]


def sizing_record(verifier: str, foresight, delivered, ups_floor: dict | None) -> dict:
    """The whole ``sizing.json`` of a ``facility size`` run.

    Parameters
    ----------
    verifier : str
        The controller the design was verified under
        (:func:`facility.sizing.pipeline.verification_controller`).
    foresight : ForesightDesign
        The foresight design through the network and its margin loop
        (:func:`facility.sizing.pipeline.foresight_design`).
    delivered : DeliveredDesign
        The design delivered, its verification run and cost
        (:func:`facility.sizing.pipeline.delivered_design`).
    ups_floor : dict or None
        The UPS ride-through floor (:func:`facility.sizing.ups.ups_ride_through_floor`).

    Returns
    -------
    dict
        The record, keys in the order of the module docstring.
    """
    sol, history = foresight.sol, foresight.margins
    rec = sizing_to_json(sol)
    rec["losses"] = losses_block(foresight.network)
    rec.update(verify_runs=len(history), limit_margin_frac=float(foresight.margin),
               limit_margin_history=[float(m) for m in history], margin_loop=len(history) > 1)
    rec["foresight"] = {n: {"p_rated_mw_opt": float(sol.p_rated_mw_opt[n]),
                            "e_rated_mwh_opt": float(sol.e_rated_mwh_opt[n])} for n in sol.p_rated_mw_opt}
    rec["foresight"]["objective_usd_per_year"] = foresight.cost["cost"]["total_usd_per_year"]
    if delivered.step_floor is not None:
        rec["step_floor"] = delivered.step_floor
    resize = delivered.resize
    if resize is not None:
        rec["resize"] = resize_block(resize)
        for n, (p, e) in resize.ratings.items():
            rec[n] = {**rec.get(n, {}), "p_rated_mw_opt": float(p), "e_rated_mwh_opt": float(e)}
    if ups_floor is not None and "ups" in rec:
        rec["ups"]["ride_through"] = ups_floor
    cost = delivered.cost
    rec.update(cost)
    rec["objective_usd_per_year"] = cost["cost"]["total_usd_per_year"]
    rec["cost_of_no_foresight_usd_per_year"] = (cost["cost"]["total_usd_per_year"]
                                                - foresight.cost["cost"]["total_usd_per_year"])
    rec["verified_by"] = verifier
    rec["perfect_foresight"] = verifier == "optimal"
    comp = delivered.results.metrics["compliance"]
    rec["verified"] = bool(comp["compliant"])
    rec["verification"] = verification_block(delivered.results, verifier, resize, delivered.gpu_plan)
    return rec


def losses_block(ns) -> dict:
    """The ``losses`` block: the rounds of the loss-aware LP
    (:class:`facility.sizing.network.NetworkSizing`)."""
    return {"method": "sequential_lp", "gain_mw_per_mw": float(ns.gain),
            "relative_gains": {n: float(r) for n, r in ns.ratios.items()}, "rounds": int(ns.rounds),
            "residuals_mw": [float(r) for r in ns.residuals_mw], "tol_mw": float(ns.tol_mw),
            "converged": bool(ns.converged), "warm_started_solves": int(ns.warm_solves),
            "simplex_iterations": [int(i) for i in ns.simplex_iterations]}


def resize_block(rs) -> dict:
    """The ``resize`` block: the controller's search
    (:class:`facility.sizing.resize.ControllerResizing`)."""
    ps, es, _ = scales(rs.ratings, rs.base) if rs.base else ({}, {}, 1.0)
    return {"scale": float(rs.scale), "p_scale": ps, "e_scale": es, "runs": len(rs.tried),
            "compliant": bool(rs.compliant),
            "tried": [{"scale": float(t["scale"]), "p_scale": t.get("p_scale", {}),
                       "e_scale": t.get("e_scale", {}), "compliant": bool(t["compliant"]),
                       "failing": list(t["failing"]), "saturated": t.get("saturated", {})}
                      for t in rs.tried]}


def verification_block(res, verifier: str, resize=None, gpu_plan=None) -> dict:
    """The ``verification`` block: the run's compliance rows, what it could not decide and how
    it realizes the design."""
    comp = res.metrics["compliance"]
    return {"compliant": bool(comp["compliant"]),
            "rows": {k: bool(v) for k, v in fm.limit_rows(comp).items()},
            "undecided": sorted(res.metrics.get("undecided", {})),
            "realized_by": _realized_by(res.scenario, verifier, resize, gpu_plan)}


def _realized_by(sized, verifier: str, resize=None, gpu_plan=None) -> list[str]:
    """How the verification run realizes the design."""
    out = [f"{n} at its sized ratings" for n in sized.storage_units()]
    if verifier == "optimal":
        out.append("perfect-foresight dispatch (controller.kind = 'optimal' replays the LP's plan)")
    else:
        out.append(f"controller.kind = {verifier!r} (closed loop, no knowledge of the future load)")
        if resize is not None and resize.scale > 1.0:
            js = resize_block(resize)
            out.append(f"extendable ratings grown from the foresight design's: {growth_text(js['p_scale'], js['e_scale'])}")
    if gpu_plan is not None:
        out += [f"{j}: GPU floor {v:.4g} x TDP" for j, v in gpu_plan.floor_frac.items()]
        out += [f"{j}: GPU power cap {v:.4g} x TDP" for j, v in gpu_plan.cap_frac.items()]
        out += [f"{j}: planned burn (dummy load)" for j in gpu_plan.burn_mw]
    return out
