"""Size and verify: the optimizer's design run through the co-simulation until it holds.

:func:`size_scenario` sizes the storages (and, with ``optimize.levers``, the GPU levers) on the
site power the optimizer sees (lossless, after the GPU controls that are not decisions, within
the network's headroom), then runs the sized design through :func:`facility.simulate.run_scenario`
and, while that verification run breaks a limit the LP holds, re-sizes with the margin the
network and UPS losses call for (:func:`needed_margin_frac`). The orchestrator of ``facility
size``, beside :mod:`facility.simulate` (``facility run``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from facility import metrics as fm
from facility.config.schema import Scenario
from facility.errors import ScenarioError
from facility.results import Results
from facility.simulate import (feeder_peaks, gpu_controls_active, network_caps, run_scenario,
                               with_network_caps)

__all__ = ["size_scenario", "needed_margin_frac", "LP_LIMITS", "VERIFY_HEADROOM_FRAC",
           "MIN_MARGIN_STEP_FRAC", "MAX_MARGIN_FRAC"]

log = logging.getLogger(__name__)


#: Spec limits the sizing LP holds as constraints (the margin loop of :func:`size_scenario`
#: re-sizes for these and for every ``[[bands]]`` limit, ``band_<name>``; the band energy share
#: is checked by the verification run only).
LP_LIMITS = ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s", "max_ramp_mw_per_min",
             "max_window_swing_mw", "max_dynamic_range_mw", "max_band_peak_mw")
#: Relative headroom a re-sizing aims below each failing limit. [frac]
VERIFY_HEADROOM_FRAC = 0.01
#: Smallest increase of the margin between two rounds. [frac]
MIN_MARGIN_STEP_FRAC = 0.01
#: Margins at or above this are not tried (the LP would size for almost no swing). [frac]
MAX_MARGIN_FRAC = 0.9


def _lp_limits(scenario: Scenario) -> list[str]:
    return ([k for k in LP_LIMITS if getattr(scenario.spec, k) is not None]
            + [f"band_{b.name}" for b in scenario.spec.bands])


def _limit_metric(spec, pcc: dict, key: str) -> tuple[float, float]:
    """(limit, metric) of one LP limit in a ``pcc`` metrics block (bands: ``band_<name>``)."""
    if key.startswith("band_") and key not in fm._LIMITS:
        b = next(b for b in spec.bands if f"band_{b.name}" == key)
        return b.max_peak_mw, pcc["band_peaks_mw"][b.name]
    return getattr(spec, key), pcc[fm._LIMITS[key]]


def _lossless_pcc_mw(res: Results) -> np.ndarray:
    """Site load + storage: the PCC power as the lossless LP sees it. [MW]"""
    ts = res.timeseries
    return ts["p_load_mw"].to_numpy() + sum((ts[f"p_{n}_mw"].to_numpy() for n in res.scenario.storages()),
                                            np.zeros(len(ts)))


def needed_margin_frac(res: Results, margin_frac: float, limits: list[str]) -> tuple[float, dict]:
    """The ``limit_margin_frac`` the next sizing needs so the verification meets ``limits``.

    For each failing limit with value L, verified metric v (with losses) and lossless metric l
    (site load + storage, what the LP holds at or below (1 - m) L), the network and UPS losses
    add d = v - l to the metric; they mostly follow the site load, which the margin does not
    change, so the next LP must aim at (1 - m') L with (1 - m') L + d <= (1 - h) L:

    .. math::  m' = \\max\\left(m + \\Delta m,\\ \\max_{\\text{failing}} \\frac{v - l}{L} + h\\right)

    (h = :data:`VERIFY_HEADROOM_FRAC`, Δm = :data:`MIN_MARGIN_STEP_FRAC`, so every round
    tightens).

    Returns
    -------
    (float, dict)
        The margin [frac] and ``{limit: (limit, verified, lossless)}`` of the failing limits.
    """
    spec = res.scenario.spec
    comp = res.metrics["compliance"]
    lossless = fm.power_metrics(_lossless_pcc_mw(res), res.scenario.time.dt_s, spec)
    need, failing = margin_frac + MIN_MARGIN_STEP_FRAC, {}
    for k in limits:
        if comp.get(k, True):
            continue
        if k.startswith("grid_impact_"):
            from facility.grid_impact.lp import margin_row

            lim, v, lo = margin_row(res, k, _lossless_pcc_mw(res))
        else:
            lim, v = _limit_metric(spec, res.metrics["pcc"], k)
            lo = _limit_metric(spec, lossless, k)[1]
        failing[k] = (lim, v, lo)
        need = max(need, (v - lo) / lim + VERIFY_HEADROOM_FRAC)
    return float(need), failing


def size_scenario(scenario: Scenario, *, out_dir: str | Path | None = None, progress: bool = False,
                  plots: bool = True):
    """Optimal sizing + dispatch (and GPU levers), verified by a simulation of the sized design,
    re-sized until the verification meets the limits the LP sized for.

    The optimizer sees the site power after the GPU-side controls that are not decisions on a
    lossless network, within the network's headroom (:func:`network_caps`); with GPU levers in
    ``optimize.levers`` it decides them per job (:mod:`facility.mix`,
    :mod:`facility.optimize.levers`). The verification run uses the sized ratings, with
    ``controller.kind = "optimal"`` the optimizer's own dispatch as the plan, and the GPU plan
    through the GPU controls. While the verification run breaks a limit the LP holds
    (:data:`LP_LIMITS` and the band peak limits) — the network and UPS losses it adds are what
    the LP does not see — the LP is solved again with the ``optimize.limit_margin_frac`` those
    losses call for (:func:`needed_margin_frac`), at most ``optimize.max_verify_runs`` rounds.
    With another ``controller.kind`` than ``optimal`` the verification runs that controller,
    not the LP's dispatch: one round, ``verified`` false if it breaks a limit (the controller's
    doing, not the sizing's). ``sizing.json`` reports ``verify_runs``, ``limit_margin_frac``
    (the one of the design returned), ``limit_margin_history``, ``verified``, the cost per year
    and the mix (:func:`facility.mix.annual_cost`) and ``verification`` (whether the realized
    site meets each limit, and how the design was realized).

    Returns
    -------
    (SizingResult, Results)

    Raises
    ------
    InfeasibleError
        No design within the bounds meets the limits, or the verification still breaks a limit
        the LP holds after ``max_verify_runs`` rounds (the message gives the margin the next
        round would use). The result of the last round is written to ``out_dir`` first.
    """
    from facility import mix
    from facility.electrical import build_network
    from facility.errors import InfeasibleError
    from facility.optimize import size_storage, sizing_to_json
    from facility.workload import default_n_feeders, generate_load, site_power

    if out_dir is not None:  # refuse a target that may not be replaced before sizing
        from facility.report.outdir import check_out_dir

        check_out_dir(out_dir, force=True, kinds=("run", "size"))
    storages = scenario.storages()
    if "storage" not in scenario.optimize.levers:
        ext = [n for n, c in storages.items() if c.extendable]
        if ext:
            raise ScenarioError(f"optimize.levers = {scenario.optimize.levers} leaves storage out, but "
                                f"{', '.join(ext)} has extendable = true; add 'storage' or fix the ratings")
    profile = generate_load(scenario)
    n_f = default_n_feeders(scenario)
    raw = site_power(profile, profile.p_gpu_w, scenario.site, n_f)
    # the base the levers act on: the GPU controls that are not decisions
    base = mix.base_scenario(scenario) if mix.gpu_levers(scenario) else scenario
    p_base_w = profile.p_gpu_w
    if gpu_controls_active(base):
        from facility.gpu import apply_gpu_controls

        p_base_w = apply_gpu_controls(profile, base).p_gpu_w
    ctl_site = site_power(profile, p_base_w, scenario.site, n_f) if p_base_w is not profile.p_gpu_w else raw
    inputs = mix.lever_inputs(scenario, profile, p_base_w)
    p_load = ctl_site.p_site_mw
    net = build_network(scenario, feeder_peaks(raw, ctl_site))
    sc = with_network_caps(scenario, network_caps(scenario, net))
    from facility.grid_impact.lp import lp_limit_rows, lp_spec

    limits = _lp_limits(scenario) + lp_limit_rows(scenario)  # [grid_impact] responses: per-bin caps
    margin = float(scenario.optimize.limit_margin_frac)
    if scenario.controller.kind == "mpc":
        # the MPC plans with a margin of its own: the design must leave it that room
        from facility.control.plan import mpc_margin_frac

        margin = max(margin, mpc_margin_frac(scenario))
    history: list[float] = []
    n_runs = scenario.optimize.max_verify_runs
    controller_failing: dict = {}
    for run in range(1, n_runs + 1):
        history.append(margin)
        opt = sc.optimize.model_copy(update={"limit_margin_frac": margin})
        try:
            sol = size_storage(p_load, scenario.time.dt_s, storages, lp_spec(scenario), opt,
                               t_s=profile.t_s, levers=inputs)
        except InfeasibleError as exc:
            if run == 1:
                raise
            raise InfeasibleError(
                f"size-and-verify round {run}: with optimize.limit_margin_frac = {margin:.3g} (what the "
                f"network and UPS losses of round {run - 1} call for) no design within the bounds "
                f"meets the limits: {exc}", getattr(exc, "diagnosis", None)) from exc
        sized, plan, gpu_plan = mix.realize(scenario, sol)
        if sized.controller.kind == "mpc":
            # ... and plans with the margin it was sized for (controller.mpc_limit_margin_frac
            # unset: optimize.limit_margin_frac)
            sized = sized.model_copy(update={"optimize": sized.optimize.model_copy(
                update={"limit_margin_frac": margin})})
        res = run_scenario(sized, progress=progress, plan=plan, gpu_plan=gpu_plan)
        if plan is None and storages:
            # the verification runs the scenario's own controller, not the LP's dispatch: what
            # it breaks is the controller's doing, which a margin on the LP does not fix
            need, failing = needed_margin_frac(res, margin, limits)
            controller_failing, failing = failing, {}
            break
        need, failing = needed_margin_frac(res, margin, limits)
        if not failing:
            break
        log.info("size-and-verify round %d (limit_margin_frac %.3g) breaks %s; next margin %.3g",
                 run, margin, ", ".join(failing), need)
        if run == n_runs or need >= MAX_MARGIN_FRAC:
            break
        margin = need
    sizing = sizing_to_json(sol)
    sizing.update(verify_runs=len(history), limit_margin_frac=float(margin),
                  limit_margin_history=[float(m) for m in history],
                  verified=not failing and not controller_failing)
    sizing.update(mix.annual_cost(scenario, sol))
    comp = res.metrics["compliance"]
    sizing["verification"] = {"compliant": bool(comp["compliant"]),
                              "rows": {k: bool(v) for k, v in comp.items() if k != "compliant"},
                              "realized_by": _realized_by(sized, gpu_plan)}
    res.sizing = sizing
    if out_dir is not None:
        from facility.report import write_outputs

        write_outputs(res, Path(out_dir), plots=plots)
    if failing:
        what = "; ".join(f"{k} {v:.4g} vs {lim:g} (lossless plan {lo:.4g})" for k, (lim, v, lo) in failing.items())
        why = (f"the next round would need optimize.limit_margin_frac = {need:.3g}: rerun with "
               f"--set optimize.limit_margin_frac={need:.3g} or --set optimize.max_verify_runs={n_runs + 1}"
               if need < MAX_MARGIN_FRAC else
               f"the losses would need optimize.limit_margin_frac = {need:.3g} (at least "
               f"{MAX_MARGIN_FRAC:g} is not tried): the network's losses alone break the limits")
        raise InfeasibleError(
            f"after {len(history)} size-and-verify round(s) (optimize.limit_margin_frac "
            f"{' -> '.join(f'{m:.3g}' for m in history)}) the verification run of the sized design still "
            f"breaks {what}; {why}" + (f"; the last design is in {out_dir}" if out_dir is not None else ""),
            {"failing": {k: list(v) for k, v in failing.items()}, "limit_margin_history": history,
             "next_limit_margin_frac": need})
    return sol, res


def _realized_by(sized: Scenario, gpu_plan) -> list[str]:
    """How the verification run realizes the design (for sizing.json)."""
    out = [f"{n} at its sized ratings" for n in sized.storages()]
    if sized.controller.kind == "optimal":
        out.append("optimal controller on the planned dispatch")
    if gpu_plan is not None:
        out += [f"{j}: GPU floor {v:.4g} x TDP" for j, v in gpu_plan.floor_frac.items()]
        out += [f"{j}: GPU power cap {v:.4g} x TDP" for j, v in gpu_plan.cap_frac.items()]
        out += [f"{j}: planned burn (dummy load)" for j in gpu_plan.burn_mw]
    return out
