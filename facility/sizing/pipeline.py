"""Size and verify: the design sized through the network, verified under the controller the
site will run, re-sized until that controller keeps it compliant.

:func:`size_scenario` is the orchestrator of ``facility size``, beside
:mod:`facility.run.orchestrator` (``facility run``, which calls it for an extendable storage). It
reads as its named steps; the verification runs are co-simulations of fixed designs
(:func:`facility.cosim.simulate_design`):

1. :func:`check_levers` and :func:`with_verifier` (:func:`verification_controller`: the
   scenario's ``controller.kind``; ``mpc`` where it names none);
2. :func:`sizing_inputs`: the load, the GPU levers' inputs (:mod:`facility.sizing.mix`) and the
   network the caps come from;
3. :func:`with_ride_through_floor`: the UPS battery the spec's worst sag needs, a floor of
   its ratings (:mod:`facility.sizing.ups`);
4. :func:`foresight_design`: the perfect-foresight LP on the PCC power the network makes of the
   load and the plan (its losses inside the LP by sequential LP,
   :func:`facility.sizing.network.size_through_network`), the least storage any controller
   could need. With ``optimal`` it is verified by replaying the LP's dispatch (a
   perfect-foresight study, said so in the report); only where a converged loss-aware plan
   still breaks a limit the LP holds (what the model leaves out) the LP is solved again with a
   margin (:func:`needed_margin_frac`), at most ``optimize.max_verify_runs`` rounds, reported
   as ``margin_loop`` in ``sizing.json``;
5. :func:`delivered_design`: with a deployable controller the run is closed-loop, from the
   foresight design raised to the step floor (:mod:`facility.sizing.step`); where it breaks a
   limit the design is grown by a bracketed search
   (:func:`facility.sizing.resize.resize_for_controller`) until it holds; the delivered
   design's annual cost (:func:`facility.sizing.mix.annual_cost`);
6. :func:`facility.sizing.record.sizing_record`: ``sizing.json``, assembled in one place;
7. :func:`write_and_check`: the outputs written, and the refusal of a design that is not compliant.

``size`` never returns a design whose verification is not compliant: it raises
:class:`~facility.errors.InfeasibleError` (exit 3) naming the limit and what was tried.

Imports: :mod:`facility.cosim` (the verification runs), the other modules of
:mod:`facility.sizing`, :mod:`facility.scenario` (the entry's resolve), the model packages
(config, workload, gpu, electrical, grid_impact) and :mod:`facility.report` (the outputs);
never :mod:`facility.run`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from facility import metrics as fm
from facility.config.schema import Scenario
from facility.cosim.design import (feeder_peaks, gpu_controls_active, network_caps, simulate_design,
                                   with_network_caps)
from facility.cosim.results import Results
from facility.electrical.network import build_network
from facility.errors import InfeasibleError, ScenarioError
from facility.gpu import apply_gpu_controls
from facility.grid_impact.lp import lp_limit_rows, lp_spec, margin_row
from facility.report import write_outputs
from facility.report.design import growth_text
from facility.report.outdir import check_out_dir
from facility.scenario import resolve
from facility.sizing import mix
from facility.sizing.network import size_through_network
from facility.sizing.record import resize_block, sizing_record
from facility.sizing.resize import realized_sizing, resize_for_controller
from facility.sizing.step import step_floor
from facility.sizing.ups import ups_ride_through_floor, with_ups_floor
from facility.workload import default_n_feeders, generate_load, site_power

__all__ = ["size_scenario", "check_levers", "with_verifier", "sizing_inputs", "with_ride_through_floor",
           "foresight_design", "delivered_design", "write_and_check", "SizingInputs", "ForesightDesign",
           "DeliveredDesign", "needed_margin_frac", "verification_controller", "LP_LIMITS", "VERIFY_HEADROOM_FRAC",
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


def verification_controller(scenario: Scenario) -> str:
    """The controller ``facility size`` verifies a design under: the scenario's
    ``controller.kind``, or ``mpc`` (what a site can run: it plans on measured history and the
    declared schedule, never the future load) where that is ``none`` (no storage action)."""
    kind = scenario.controller.kind
    return "mpc" if kind == "none" else kind


def _lp_limits(scenario: Scenario) -> list[str]:
    return ([k for k in LP_LIMITS if getattr(scenario.spec, k) is not None]
            + [f"band_{b.name}" for b in scenario.spec.bands])


def _limit_metric(spec, pcc: dict, key: str) -> tuple[float, float]:
    """(limit, metric) of one LP limit in a ``pcc`` metrics block (bands: ``band_<name>``)."""
    if key.startswith("band_") and key not in fm.LIMIT_METRICS:
        b = next(b for b in spec.bands if f"band_{b.name}" == key)
        return b.max_peak_mw, pcc["band_peaks_mw"][b.name]
    return getattr(spec, key), pcc[fm.LIMIT_METRICS[key]]


def _lossless_pcc_mw(res: Results) -> np.ndarray:
    """Site load + storage: the PCC power a lossless LP would see. [MW]"""
    ts = res.timeseries
    return ts["p_load_mw"].to_numpy() + sum((ts[f"p_{n}_mw"].to_numpy() for n in res.scenario.storage_units()),
                                            np.zeros(len(ts)))


def needed_margin_frac(res: Results, margin_frac: float, limits: list[str],
                       p_lp_mw: np.ndarray | None = None) -> tuple[float, dict]:
    """The ``limit_margin_frac`` the next sizing needs so the verification meets ``limits``.

    For each failing limit with value L, verified metric v and the metric l of the PCC power the
    LP planned (``p_lp_mw``: the loss-aware LP's, mapped to the PCC; default the lossless site
    load + storage), what the LP did not see adds d = v - l to the metric; it mostly follows the
    site load, which the margin does not change, so the next LP must aim at (1 - m') L with
    (1 - m') L + d <= (1 - h) L:

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
    p_plan = _lossless_pcc_mw(res) if p_lp_mw is None else p_lp_mw
    lossless = fm.power_metrics(p_plan, res.scenario.time.dt_s, spec)
    need, failing = margin_frac + MIN_MARGIN_STEP_FRAC, {}
    for k in limits:
        if comp.get(k, True):
            continue
        if k.startswith("grid_impact_"):
            lim, v, lo = margin_row(res, k, p_plan)
        else:
            lim, v = _limit_metric(spec, res.metrics["pcc"], k)
            lo = _limit_metric(spec, lossless, k)[1]
        failing[k] = (lim, v, lo)
        need = max(need, (v - lo) / lim + VERIFY_HEADROOM_FRAC)
    return float(need), failing


@dataclass
class SizingInputs:
    """What the sizing LP of a scenario works on (:func:`sizing_inputs`).

    Attributes
    ----------
    profile : LoadProfile
    ctl_site : SitePower
        Site power after the GPU controls that are not decisions (per feeder and summed). [MW]
    levers : LeverInputs or None
    p_load_mw : numpy.ndarray (T,)
        Its sum. [MW]
    net : FacilityNetwork
        The network the caps come from (an extendable BESS at ``max_p_rated_mw``).
    scenario_caps : Scenario
        The scenario with the network's caps in ``[optimize]``.
    net_for : callable or None
        The network a design is verified on (:func:`_design_network`).
    """

    profile: object
    ctl_site: object
    levers: object
    p_load_mw: np.ndarray
    net: object
    scenario_caps: Scenario
    net_for: object


def sizing_inputs(scenario: Scenario) -> SizingInputs:
    """The load, levers and network of a scenario's sizing (``size`` and the benchmarks)."""
    profile = generate_load(scenario)
    n_f = default_n_feeders(scenario)
    raw = site_power(profile, profile.p_gpu_w, scenario.site, n_f)
    # the base the levers act on: the GPU controls that are not decisions
    base = mix.base_scenario(scenario) if mix.gpu_levers(scenario) else scenario
    p_base_w = profile.p_gpu_w
    if gpu_controls_active(base):
        p_base_w = apply_gpu_controls(profile, base).p_gpu_w
    ctl_site = site_power(profile, p_base_w, scenario.site, n_f) if p_base_w is not profile.p_gpu_w else raw
    peaks = feeder_peaks(raw, ctl_site)
    net = build_network(scenario, peaks)
    return SizingInputs(profile=profile, ctl_site=ctl_site, levers=mix.lever_inputs(scenario, profile, p_base_w),
                        p_load_mw=ctl_site.p_site_mw, net=net,
                        scenario_caps=with_network_caps(scenario, network_caps(scenario, net)),
                        net_for=_design_network(scenario, peaks))


@dataclass
class ForesightDesign:
    """The foresight design through the network (:func:`foresight_design`).

    Attributes
    ----------
    sol : SizingResult
        The LP's design (a hybrid unit it left out at 0, :func:`facility.sizing.mix.without_unbought_units`).
    network : NetworkSizing
        The loss-aware LP's rounds of the last solve.
    margins : list of float
        ``optimize.limit_margin_frac`` of each size-and-verify round. [frac]
    margin : float
        The margin of the last round. [frac]
    cost : dict
        Its annual cost (:func:`facility.sizing.mix.annual_cost`).
    results : Results or None
        The last perfect-foresight verification run (None under a deployable controller).
    gpu_plan : GpuPlan or None
        The GPU plan that run realized.
    failing : dict
        ``{limit: (limit, verified, lossless)}`` the last run still breaks (:func:`needed_margin_frac`).
    need : float or None
        The margin the next round would need. [frac]
    """

    sol: object
    network: object
    margins: list
    margin: float
    cost: dict
    results: Results | None = None
    gpu_plan: object = None
    failing: dict = field(default_factory=dict)
    need: float | None = None


@dataclass
class DeliveredDesign:
    """The design ``size`` delivers (:func:`delivered_design`).

    Attributes
    ----------
    sol : SizingResult
        Its ratings and the dispatch its verification ran.
    results : Results
        Its verification run.
    cost : dict
        Its annual cost (:func:`facility.sizing.mix.annual_cost`).
    gpu_plan : GpuPlan or None
        The GPU plan the run realized.
    step_floor : dict or None
        The unannounced-step floor (:func:`facility.sizing.step.step_floor`).
    resize : ControllerResizing or None
        The controller's search (None under ``optimal``).
    """

    sol: object
    results: Results
    cost: dict
    gpu_plan: object = None
    step_floor: dict | None = None
    resize: object = None


def size_scenario(scenario: Scenario, *, out_dir: str | Path | None = None, progress: bool = False,
                  plots: bool = True, require_compliant: bool = True):
    """Size through the network, verify under the site's controller, re-size until it holds.

    The steps (module docstring):

    1. :func:`facility.scenario.resolve` (once, here) and :func:`check_levers`;
    2. :func:`with_verifier`: the controller the design is verified under
       (:func:`verification_controller`) written into the scenario;
    3. :func:`sizing_inputs`: the load, the GPU levers' inputs and the network;
    4. :func:`with_ride_through_floor`: the UPS battery the spec's worst sag needs, a floor of
       its ratings (:mod:`facility.sizing.ups`);
    5. :func:`foresight_design`: the perfect-foresight LP through the network
       (:func:`facility.sizing.network.size_through_network`); under ``optimal`` verified by
       replaying its dispatch, and re-solved with the margin the excess calls for
       (:func:`needed_margin_frac`, ``margin_loop``) at most ``optimize.max_verify_runs`` rounds;
    6. :func:`delivered_design`: under a deployable controller (``mpc`` by default, ``filter``,
       ``moving_average``) the foresight design raised to the step floor
       (:mod:`facility.sizing.step`) and grown until the closed loop holds
       (:func:`facility.sizing.resize.resize_for_controller`); its annual cost
       (:func:`facility.sizing.mix.annual_cost`);
    7. :func:`facility.sizing.record.sizing_record`: ``sizing.json``, carried on the results
       and written with them (:func:`write_and_check`, which raises where the design is not
       compliant and ``require_compliant``).

    ``require_compliant`` false (``facility run`` on a scenario with extendable storage, where
    compliance is a result): the same search, and the last design returned whatever its
    verification says.

    Returns
    -------
    (SizingResult, Results)
        The delivered design (ratings; the dispatch the verifying controller ran) and its
        verification run.

    Raises
    ------
    InfeasibleError
        No design within the bounds meets the limits, or the verification under the site's
        controller is not compliant after the search (the message names the limits and what
        was tried). The last design and its run are written to ``out_dir`` first.
    """
    scenario = resolve(scenario)
    if out_dir is not None:  # refuse a target that may not be replaced before sizing
        check_out_dir(out_dir, force=True, kinds=("run", "size"))
    check_levers(scenario)
    scenario = with_verifier(scenario)
    si = sizing_inputs(scenario)
    scenario, si, ups_floor = with_ride_through_floor(scenario, si)
    foresight = foresight_design(scenario, si, progress=progress)
    delivered = delivered_design(scenario, foresight, progress=progress)
    res = delivered.results
    res.sizing = sizing_record(scenario.controller.kind, foresight, delivered, ups_floor)
    write_and_check(res, foresight, delivered, scenario.controller.kind, out_dir=out_dir, plots=plots,
                    require_compliant=require_compliant)
    return delivered.sol, res


def check_levers(scenario: Scenario) -> None:
    """Refuse an extendable storage that ``optimize.levers`` leaves out (ScenarioError)."""
    if "storage" not in scenario.optimize.levers:
        ext = [n for n, c in scenario.storages().items() if c.extendable]
        if ext:
            raise ScenarioError(f"optimize.levers = {scenario.optimize.levers} leaves storage out, but "
                                f"{', '.join(ext)} has extendable = true; add 'storage' or fix the ratings")


def with_verifier(scenario: Scenario) -> Scenario:
    """The scenario with :func:`verification_controller` as its ``controller.kind``."""
    verifier = verification_controller(scenario)
    if verifier == scenario.controller.kind:
        return scenario
    return scenario.model_copy(update={"controller": scenario.controller.model_copy(update={"kind": verifier})})


def with_ride_through_floor(scenario: Scenario, si: SizingInputs) -> tuple[Scenario, SizingInputs, dict | None]:
    """The scenario and the LP's inputs with the UPS ride-through floor on the UPS battery's
    ratings (:func:`facility.sizing.ups.ups_ride_through_floor`), and that floor (None where
    none applies: both returned unchanged)."""
    floor = ups_ride_through_floor(scenario, [si.ctl_site], float(np.sum(si.net.ups_sn_mva)))
    if floor is None:
        return scenario, si, None
    scenario = with_ups_floor(scenario, floor)
    return scenario, replace(si, scenario_caps=si.scenario_caps.model_copy(update={"ups": scenario.ups})), floor


def foresight_design(scenario: Scenario, si: SizingInputs, *, progress: bool = False) -> ForesightDesign:
    """The perfect-foresight design through the network; under ``optimal`` verified by replaying
    its plan, and re-sized with a margin while the verification breaks a limit the LP holds
    (at most ``optimize.max_verify_runs`` rounds, :func:`needed_margin_frac`)."""
    verifier = scenario.controller.kind
    limits = _lp_limits(scenario) + lp_limit_rows(scenario)  # [grid_impact] responses: per-bin caps
    margin = float(scenario.optimize.limit_margin_frac)
    storages = scenario.storages()
    history: list[float] = []
    n_runs = scenario.optimize.max_verify_runs if verifier == "optimal" else 1
    failing: dict = {}
    res = gpu_plan = need = None
    for run in range(1, n_runs + 1):
        history.append(margin)
        opt = si.scenario_caps.optimize.model_copy(update={"limit_margin_frac": margin})
        try:
            ns = size_through_network(scenario, si.net, si.ctl_site.p_feeder_mw, si.p_load_mw, storages, opt,
                                      t_s=si.profile.t_s, levers=si.levers, net_for=si.net_for,
                                      spec=lp_spec(scenario))
        except InfeasibleError as exc:
            if run == 1:
                raise
            raise InfeasibleError(
                f"size-and-verify round {run}: with optimize.limit_margin_frac = {margin:.3g} (what the "
                f"verification of round {run - 1} called for) no design within the bounds "
                f"meets the limits: {exc}", getattr(exc, "diagnosis", None)) from exc
        sol = mix.without_unbought_units(ns.sol)   # a hybrid unit the LP left out: 0, not 1e-12 MW
        if verifier != "optimal":
            break
        sized, plan, gpu_plan = mix.realize(scenario, sol)
        res = simulate_design(sized, progress=progress, plan=plan, gpu_plan=gpu_plan)
        need, failing = needed_margin_frac(res, margin, limits, p_lp_mw=ns.p_lp_mw)
        if not failing:
            break
        log.info("size-and-verify round %d (limit_margin_frac %.3g) breaks %s; next margin %.3g",
                 run, margin, ", ".join(failing), need)
        if run == n_runs or need >= MAX_MARGIN_FRAC:
            break
        margin = need
    return ForesightDesign(sol=sol, network=ns, margins=history, margin=margin, cost=mix.annual_cost(scenario, sol),
                           results=res, gpu_plan=gpu_plan, failing=failing, need=need)


def delivered_design(scenario: Scenario, foresight: ForesightDesign, *, progress: bool = False) -> DeliveredDesign:
    """The design delivered and its verification run: under ``optimal`` the foresight design as
    verified; under a deployable controller the foresight design raised to the step floor and
    grown until the controller keeps it compliant (:func:`facility.sizing.resize.resize_for_controller`)."""
    if scenario.controller.kind == "optimal":
        return DeliveredDesign(sol=foresight.sol, results=foresight.results, cost=foresight.cost,
                               gpu_plan=foresight.gpu_plan)
    floor = step_floor(scenario)     # the storage the largest unannounced step needs
    resize = resize_for_controller(scenario, foresight.sol, progress=progress, floor=floor)
    sol = realized_sizing(scenario, foresight.sol, resize)
    return DeliveredDesign(sol=sol, results=resize.results, cost=mix.annual_cost(scenario, sol),
                           gpu_plan=resize.gpu_plan, step_floor=floor, resize=resize)


def write_and_check(res: Results, foresight: ForesightDesign, delivered: DeliveredDesign, verifier: str, *,
                    out_dir: str | Path | None = None, plots: bool = True, require_compliant: bool = True) -> None:
    """Write the verification run and its ``sizing.json`` to ``out_dir``; then, where it is not
    compliant and ``require_compliant``, raise :class:`~facility.errors.InfeasibleError` naming
    the limits and what was tried."""
    if out_dir is not None:
        write_outputs(res, Path(out_dir), plots=plots)
    comp = res.metrics["compliance"]
    if comp["compliant"] or not require_compliant:
        return
    history, resize = foresight.margins, delivered.resize
    raise InfeasibleError(_not_compliant_message(res, verifier, history, foresight.failing, foresight.need, resize,
                                                 out_dir),
                          {"failing": [k for k, v in fm.limit_rows(comp).items() if not v],
                           "limit_margin_history": history, "verified_by": verifier,
                           **({"resize": resize_block(resize)} if resize is not None else {})})


def _design_network(scenario: Scenario, feeder_peak_mw: np.ndarray):
    """``net_for(p_bess_mw)``: the network a design is verified on, where it depends on the design (an
    extendable BESS whose transformer is rated from its power, ``grid.bess_trafo_sn_mva``
    unset: 1.25 x the sized P̂ rather than the ``max_p_rated_mw`` the sizing's caps come from);
    None where it does not. Built once per distinct rating."""
    bess = scenario.bess
    if not (bess.enabled and bess.extendable and scenario.grid.bess_trafo_sn_mva is None and scenario.grid.enabled):
        return None
    cache: dict = {}

    def net_for(p_bess_mw: float):
        p = round(float(p_bess_mw), 9)
        if p not in cache:
            cfg = bess.model_copy(update={"extendable": False, "p_rated_mw": p, "e_rated_mwh": 0.0})
            cache.clear()
            cache[p] = build_network(scenario.model_copy(update={"bess": cfg}), feeder_peak_mw)
        return cache[p]

    return net_for


def _not_compliant_message(res, verifier, history, failing, need, resize, out_dir) -> str:
    """Why ``size`` exits 3: which limits the verification breaks and what was tried (``need``:
    the margin :func:`needed_margin_frac` gives the next round)."""
    spec = res.scenario.spec
    rows = [k for k, v in fm.limit_rows(res.metrics["compliance"]).items() if not v]
    what = []
    for k in rows:
        try:
            lim, v = _limit_metric(spec, res.metrics["pcc"], k)
            what.append(f"{k} {v:.4g} vs {lim:g}")
        except (KeyError, StopIteration, AttributeError):
            what.append(k)
    where = f"; the last design is in {out_dir}" if out_dir is not None else ""
    if verifier != "optimal":
        tried = "; ".join(growth_text(t["p_scale"], t["e_scale"]) or "the foresight design" for t in resize.tried)
        return (f"the verification run under controller.kind = {verifier!r} breaks {'; '.join(what)} for every "
                f"design tried (the foresight design's ratings scaled: {tried}; bounded by the storages' "
                f"max_p_rated_mw / max_e_rated_mwh and optimize.max_resize_runs = "
                f"{res.scenario.optimize.max_resize_runs}): raise those bounds, give the controller more "
                f"margin (controller.mpc_limit_margin_frac) or size for perfect foresight with "
                f"controller.kind = 'optimal'{where}")
    if failing:
        detail = "; ".join(f"{k} {v:.4g} vs {lim:g} (LP plan {lo:.4g})" for k, (lim, v, lo) in failing.items())
        why = (f"the next round would need optimize.limit_margin_frac = {need:.3g}: rerun with "
               f"--set optimize.limit_margin_frac={need:.3g} or --set optimize.max_verify_runs={len(history) + 1}"
               if need < MAX_MARGIN_FRAC else
               f"the excess would need optimize.limit_margin_frac = {need:.3g} (at least {MAX_MARGIN_FRAC:g} "
               f"is not tried)")
        return (f"after {len(history)} size-and-verify round(s) (optimize.limit_margin_frac "
                f"{' -> '.join(f'{m:.3g}' for m in history)}) the verification run of the sized design still "
                f"breaks {detail}; {why}{where}")
    return (f"the verification run of the sized design breaks {'; '.join(what)}, which the sizing LP does not "
            f"hold (not a linear limit of the LP){where}")
