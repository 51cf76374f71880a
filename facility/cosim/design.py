"""The co-simulation of a fixed design: :func:`simulate_design` runs a scenario whose storage
ratings are known and returns :class:`Results`.

Chain (see docs/architecture.md): load generator → GPU controls → site aggregation → storage
controllers (with the GPU co-design) → time-series power flow → metrics and compliance.
The ``raw`` case is the same site with every mitigation switched off (no GPU controls, no
storage action) through the same network, so losses compare.

Its room: below both orchestrators. :func:`facility.run.orchestrator.run_scenario` (``facility run``)
sizes an extendable storage first, then runs the design here;
:func:`facility.sizing.size_scenario` and
:func:`facility.sizing.resize.resize_for_controller` run their verification designs here, and
the sizing takes its inputs with :func:`feeder_peaks`, :func:`gpu_controls_active`,
:func:`network_caps` and :func:`with_network_caps`. This module may import the model packages
(config, workload, gpu, storage, control, electrical, optimize, grid_impact),
:mod:`facility.metrics`, :mod:`facility.cosim.results`, :mod:`facility.scenario` (the entry's
resolve: library entries are read from ``scenario.library``) and :mod:`facility.report`; never
:mod:`facility.run.orchestrator` nor a sizing module (tests/test_layers.py fails on any import circle).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from facility import metrics as fm
from facility.config.plausibility import plausibility_warnings
from facility.config.schema import Scenario
from facility.config.technology import section_of
from facility.control import run_control
from facility.control.codesign import gpu_ramp_mw_per_s
from facility.control.regret import regret_vs_optimal
from facility.control.schedule import site_schedule
from facility.cosim.blocks import (add_crashes, grid_event_block, grid_impact_block, grid_impact_margins,
                                   numeric_tree, storage_block, timeseries_frame, training_block)
from facility.cosim.results import Results
from facility.electrical.grid_events import apply_grid_events
from facility.electrical.limits import electrical_compliance, storage_caps, violation_events
from facility.electrical.network import build_network
from facility.electrical.pcc import pcc_power_mw, referred_load_mw
from facility.electrical.powerflow import electrical_metrics, run_power_flow
from facility.errors import NotSupportedError
from facility.gpu import apply_gpu_controls
from facility.optimize import solve_dispatch
from facility.report import write_outputs
from facility.report.outdir import check_out_dir
from facility.scenario import resolve
from facility.storage import StorageParams
from facility.storage.soc import replay_delivered
from facility.workload import default_n_feeders, generate_load, site_power

__all__ = ["simulate_design", "generate_trace", "gpu_controls_active", "network_caps", "with_network_caps",
           "feeder_peaks"]

log = logging.getLogger(__name__)


class _Timer:
    def __init__(self, timings: dict, name: str):
        self.timings, self.name = timings, name

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.timings[self.name] = self.timings.get(self.name, 0.0) + time.perf_counter() - self.t0


def gpu_controls_active(scenario: Scenario) -> bool:
    """Whether any GPU-side mitigation (smoothing, firefly, power cap) is switched on."""
    return bool(scenario.gpu_smoothing.enabled or scenario.firefly.enabled or scenario.power_cap.enabled)


_LOGGED: set[str] = set()


def _plausibility(scenario: Scenario) -> list[str]:
    """:func:`~facility.config.plausibility.plausibility_warnings`, logged once per process."""
    found = plausibility_warnings(scenario)
    for text in found:
        if text not in _LOGGED:     # sweeps and size rounds run the same scenario often
            _LOGGED.add(text)
            log.warning("%s", text)
    return found


def _storage_first(scenario: Scenario) -> Scenario:
    """The scenario with GPU smoothing and firefly off (a static power cap stays).

    Under the co-design (controller.codesign) storage carries the swings on its own, and the
    GPU controls (floor, programmed ramps, stop delay, firefly) engage only while a storage is
    near a SoC bound, e.g. through job start/stop or a long checkpoint (the paper's §IV-D).
    """
    gs = scenario.gpu_smoothing.model_copy(update={"enabled": False})
    ff = scenario.firefly.model_copy(update={"enabled": False})
    return scenario.model_copy(update={"gpu_smoothing": gs, "firefly": ff})


def _load_after_gpu_controls(scenario: Scenario, profile, n_feeders: int, raw=None) -> np.ndarray:
    """Site power after the scenario's GPU-side controls (the raw site power when none is on). [MW]"""
    if not gpu_controls_active(scenario):
        return (raw if raw is not None else site_power(profile, profile.p_gpu_w, scenario.site, n_feeders)).p_site_mw
    return site_power(profile, apply_gpu_controls(profile, scenario).p_gpu_w, scenario.site, n_feeders).p_site_mw


def feeder_peaks(*sites) -> np.ndarray:
    """Peak site power of each feeder over the given site powers (the network's default ratings). [MW]"""
    return np.max([site.p_feeder_mw.max(axis=0) for site in sites if site is not None], axis=0)


def network_caps(scenario: Scenario, net) -> dict:
    """What the storage dispatch may use of the network (:func:`facility.electrical.limits.storage_caps`)."""
    return storage_caps(scenario.grid, scenario.optimize, net)


def with_network_caps(scenario: Scenario, caps: Mapping[str, float | None]) -> Scenario:
    """The scenario with ``caps`` as its ``[optimize]`` network limits (what the optimizer and
    the MPC then respect)."""
    return scenario.model_copy(update={"optimize": scenario.optimize.model_copy(update=dict(caps))})


def generate_trace(scenario: Scenario) -> pd.DataFrame:
    """Load generator only (``facility trace``): GPU power with GPU controls, and raw site power.

    Returns
    -------
    pandas.DataFrame
        ``t_s`` [s], ``p_gpu_mw``, ``p_it_mw``, ``p_cooling_mw``, ``p_site_mw`` (raw),
        ``p_load_mw`` (site power after GPU controls) and ``p_<job>_gpu_mw`` per job. [MW]
    """
    profile = generate_load(scenario)
    n_feeders = default_n_feeders(scenario)
    raw = site_power(profile, profile.p_gpu_w, scenario.site, n_feeders)
    data = {"t_s": profile.t_s, "p_gpu_mw": raw.p_gpu_mw, "p_it_mw": raw.p_it_mw,
            "p_cooling_mw": raw.p_cooling_mw, "p_site_mw": raw.p_site_mw}
    data["p_load_mw"] = _load_after_gpu_controls(scenario, profile, n_feeders, raw)
    per_group = profile.group_power_mw()
    for job_index, job in enumerate(scenario.jobs):
        rows = (profile.groups["job_index"] == job_index).to_numpy()
        data[f"p_{job.name}_gpu_mw"] = per_group[rows].sum(axis=0)
    return pd.DataFrame(data)


def _metered_load(net, site_normal, site_full, storages: dict, kind: str):
    """The load a closed-loop controller flattens, as it meters it where its storage connects.

    Storage behind the UPSs (rack storage, UPS battery) meters the UPS output, the site power:
    the PCC power is a monotone function of site power + storage there, so flattening that sum
    flattens the PCC. A BESS on the MV bus sees the load after the UPS and feeder-transformer
    losses, which swing with the load: with a BESS the controllers that follow the measured load
    (``moving_average``, ``filter``, ``mpc``) see the PCC power without storage in units of
    storage power (:func:`facility.electrical.pcc.referred_load_mw`); a controller blind to
    those losses leaves their swing at the PCC. ``optimal`` replays a plan, and without a
    network (``grid.enabled = false``) the PCC power is the site power: both see the site
    power itself.

    Returns
    -------
    (numpy.ndarray (T,), numpy.ndarray (T,) or None)
        The plain and the GPU-engaged load (None without co-design). [MW]
    """
    p_bess = sum(float(s.p_rated_mw) for n, s in storages.items() if section_of(n) == "bess")
    if kind == "optimal" or not net.enabled or p_bess <= 0:
        return site_normal.p_site_mw, (site_full.p_site_mw if site_full is not None else None)
    seen, g = referred_load_mw(net, site_normal.p_feeder_mw, "bess", p_bess)
    eng = pcc_power_mw(net, site_full.p_feeder_mw, None) / g if site_full is not None else None
    return seen, eng


def _storage_params(scenario: Scenario, ratings: Mapping[str, Mapping[str, float]] | None):
    """One :class:`~facility.storage.StorageParams` per storage unit (a hybrid section's units
    ``<section>.<technology>`` each with its own ratings, efficiencies and SoC)."""
    out = {}
    for name, cfg in scenario.storage_units().items():
        r = (ratings or {}).get(name, {})
        out[name] = StorageParams.from_config(name, cfg, p_rated_mw=r.get("p_rated_mw"),
                                              e_rated_mwh=r.get("e_rated_mwh"))
    return out


def _fixed_sections(storages_cfg: Mapping, params: Mapping, library) -> dict:
    """The storage sections with the ratings of ``params`` (per unit) fixed: what
    :func:`facility.optimize.solve_dispatch` plans for (a hybrid section keeps its units;
    ``library``: the scenario's resolved :class:`~facility.config.resolved.Library`, whose
    technologies name the units)."""
    out = {}
    for n, c in storages_cfg.items():
        if c.technologies:
            names = [library.technology(t).name for t in c.technologies]
            units = {u: params[f"{n}.{u}"] for u in names}
            out[n] = c.model_copy(update={
                "extendable": False, "unit_p_rated_mw": {k: u.p_rated_mw for k, u in units.items()},
                "unit_e_rated_mwh": {k: u.e_rated_mwh for k, u in units.items()},
                "p_rated_mw": sum(u.p_rated_mw for u in units.values()),
                "e_rated_mwh": sum(u.e_rated_mwh for u in units.values())})
        else:
            out[n] = c.model_copy(update={"extendable": False, "p_rated_mw": params[n].p_rated_mw,
                                          "e_rated_mwh": params[n].e_rated_mwh})
    return out


def simulate_design(scenario: Scenario, *, out_dir: str | Path | None = None, progress: bool = False,
                    ratings: Mapping[str, Mapping[str, float]] | None = None,
                    plan: Mapping[str, np.ndarray] | None = None, sizing: dict | None = None,
                    plots: bool = True, gpu_plan=None) -> Results:
    """Run the full co-simulation of a design whose storage ratings are fixed.

    Nothing is sized here: every storage runs at the ratings of ``ratings`` or of its section
    (an extendable storage with neither raises :class:`~facility.errors.ScenarioError`).
    :func:`facility.run.orchestrator.run_scenario` is the entry point that sizes an extendable storage
    first.

    Parameters
    ----------
    scenario : Scenario
        Validated scenario.
    out_dir : str or pathlib.Path, optional
        When given, write metrics.json, timeseries.parquet, report.html + PNGs,
        scenario.resolved.toml and manifest.json there (atomically). It must be new, empty or
        an earlier facility result (replaced); anything else raises ScenarioError before the
        simulation (:mod:`facility.report.outdir`).
    progress : bool
        Show a progress bar over the stages.
    ratings : mapping, optional
        ``{storage: {"p_rated_mw": ..., "e_rated_mwh": ...}}`` overriding the scenario's
        ratings (a sized design); a hybrid section's units by unit name
        (``bess.supercap``).
    plan : mapping, optional
        Perfect-foresight storage dispatch ``{storage unit: p_mw (T,)}`` for
        ``controller.kind = "optimal"``; computed with :func:`facility.optimize.solve_dispatch`
        when missing.
    sizing : dict, optional
        sizing.json content to carry into the results and report.
    plots : bool
        Write PNG plots with the report.
    gpu_plan : facility.gpu.planned.GpuPlan, optional
        Per-job floor, cap and planned burn of a mix design (:func:`facility.sizing.mix.realize`),
        applied by the GPU controls.

    Returns
    -------
    Results
    """
    scenario = resolve(scenario)    # once, here: a scenario built in code gets its library
    if out_dir is not None:  # refuse a target that may not be replaced before simulating
        check_out_dir(out_dir, force=True, kinds=("run", "size"))
    timings: dict[str, float] = {}
    events: list[dict] = []
    t_start = time.perf_counter()
    stages = ["load", "gpu", "control", "power flow", "metrics"] + (["outputs"] if out_dir else [])
    bar = tqdm(total=len(stages), desc=scenario.name, disable=not progress, unit="stage", leave=False)

    def stage(name: str):
        bar.set_postfix_str(name)
        return _Timer(timings, name)

    dt = scenario.time.dt_s
    with stage("load"):
        profile = generate_load(scenario)
        n_feeders = default_n_feeders(scenario)
        raw_site = site_power(profile, profile.p_gpu_w, scenario.site, n_feeders)
        # what the load cannot show (e.g. a 1-s-averaged trace): events.json and report.html list them
        events.extend({"t_s": 0.0, "kind": "warning", "detail": w} for w in profile.meta.get("warnings", []))
        events.extend(profile.meta.get("events", []))      # job crashes and restarts
        # numbers that cannot be what the user meant (validate prints the same)
        events.extend({"t_s": 0.0, "kind": "warning", "detail": w} for w in _plausibility(scenario))
    bar.update()

    storages_cfg = scenario.storages()
    controller = scenario.controller
    use_storage = bool(storages_cfg) and controller.kind != "none"
    codesign = use_storage and controller.codesign and gpu_controls_active(scenario)

    with stage("gpu"):
        gpu_full = gpu_normal = None
        if gpu_controls_active(scenario) or gpu_plan is not None:
            gpu_full = apply_gpu_controls(profile, scenario, plan=gpu_plan)
            events.extend(gpu_full.events)
            if codesign:
                gpu_normal = apply_gpu_controls(profile, _storage_first(scenario), plan=gpu_plan)
            else:
                gpu_normal = gpu_full
        site_normal = (site_power(profile, gpu_normal.p_gpu_w, scenario.site, n_feeders)
                       if gpu_normal is not None else raw_site)
        site_full = (site_power(profile, gpu_full.p_gpu_w, scenario.site, n_feeders)
                     if gpu_full is not None and gpu_full is not gpu_normal else site_normal)
    bar.update()

    with stage("control"):
        net = build_network(scenario, feeder_peaks(raw_site, site_normal, site_full))
        caps = network_caps(scenario, net)
        sc_ctl = with_network_caps(scenario, caps)
        storages = _storage_params(scenario, ratings) if storages_cfg else {}
        if use_storage:
            if controller.kind == "optimal" and plan is None:
                fixed = _fixed_sections(storages_cfg, storages, scenario.library)
                sol = solve_dispatch(site_normal.p_site_mw, dt, fixed, scenario.spec, sc_ctl.optimize)
                plan = sol.p_storage_mw
            # what the site knows: its declared schedule (MPC forecast), its GPUs' ramps
            sched = (site_schedule(_storage_first(scenario) if codesign else scenario)
                     if controller.kind == "mpc" else None)
            seen, seen_eng = _metered_load(net, site_normal, site_full if codesign else None, storages,
                                           controller.kind)
            ctl = run_control(seen, dt, sc_ctl, storages,
                              p_site_gpu_engaged_mw=seen_eng,
                              plan=plan, network_limits=caps, schedule=sched,
                              gpu_ramp_mw_per_s=gpu_ramp_mw_per_s(scenario) if codesign else None)
            events.extend(ctl.events)
            p_storage = ctl.p_storage_mw
            soc = ctl.soc_frac
            engaged = np.asarray(ctl.gpu_engaged, dtype=bool)
            saturation = ctl.saturation
            # the controller decides what is drawn (co-design blend, monitor throttle/shed);
            # its feeder powers scale with it whatever frame it saw the load in
            p_feeder = ctl.feeder_power_mw(site_normal.p_feeder_mw,
                                           site_full.p_feeder_mw if codesign else None)
            p_load = p_feeder.sum(axis=1) if seen is not site_normal.p_site_mw else np.asarray(ctl.p_load_mw,
                                                                                                dtype=float)
        else:
            p_storage, saturation = {}, {}
            soc = {n: np.full(profile.n_steps, s.initial_soc_frac) for n, s in storages.items()}
            engaged = np.full(profile.n_steps, gpu_full is not None)
            p_feeder, p_load = site_normal.p_feeder_mw, site_normal.p_site_mw
    bar.update()

    ge = None
    if scenario.grid_events:  # voltage sags: UPS transfer, cooling response (facility.electrical.sags)
        with stage("grid events"):
            cool_frac = np.divide(site_normal.p_cooling_mw, site_normal.p_site_mw,
                                  out=np.zeros(profile.n_steps), where=site_normal.p_site_mw > 0)
            if any(n.startswith("ups.") for n in storages):
                raise NotSupportedError("ups.technologies with [[grid_events]]: the UPS transfer model runs one "
                                        "UPS battery; set ups.technology to one technology")
            ge = apply_grid_events(scenario, profile.t_s, p_feeder, cool_frac, net.ups_sn_mva, p_storage, soc,
                                   storages.get("ups"), caps=caps, storages=storages)
            events.extend(ge.events)
            if ge.changed:     # rack storage dark in the sag, discharge that would export
                for n in ge.changed:
                    tr = replay_delivered(ge.p_storage_mw[n], storages[n], dt)
                    ge.p_storage_mw[n] = ge.p_storage_pf_mw[n] = tr.p_mw
                    ge.soc_frac[n] = tr.soc_frac
            # the raw site goes through the same events (the IT load the sag takes is lost with
            # every mitigation off too): the energy account compares like with like
            raw_cool = np.divide(raw_site.p_cooling_mw, raw_site.p_site_mw, out=np.zeros(profile.n_steps),
                                 where=raw_site.p_site_mw > 0)
            ge_raw = apply_grid_events(scenario, profile.t_s, raw_site.p_feeder_mw, raw_cool, net.ups_sn_mva,
                                       {}, {}, storages.get("ups"), caps=caps)

    with stage("power flow"):
        pf = run_power_flow(net, p_feeder, p_storage or None)
        pf_ref = pf
        if ge is not None:  # the same run through the events; pf_ref = without them
            pf = run_power_flow(net, ge.p_feeder_mw, ge.p_storage_pf_mw or None)
            p_storage, soc, p_load = ge.p_storage_mw, ge.soc_frac, ge.p_load_mw
        pf_raw = (run_power_flow(net, raw_site.p_feeder_mw, None) if ge is None
                  else run_power_flow(net, ge_raw.p_feeder_mw, ge_raw.p_storage_pf_mw or None))
    bar.update()

    with stage("metrics"):
        spec = scenario.spec
        raw_m = fm.power_metrics(pf_raw.p_pcc_mw, dt, spec)
        pcc_m = fm.power_metrics(pf.p_pcc_mw, dt, spec)
        raw_mwh = fm.energy_mwh(pf_raw.p_pcc_mw, dt)
        pcc_mwh = fm.energy_mwh(pf.p_pcc_mw, dt)
        storage_m = storage_block(storages, p_storage, soc, dt, saturation)
        energy = fm.energy_metrics(raw_mwh, pcc_mwh, {
            n: (storage_m[n]["delta_e_mwh"], st.eff_charge_frac, st.eff_discharge_frac)
            for n, st in storages.items()})
        energy["site_raw_mwh"] = fm.energy_mwh(raw_site.p_site_mw, dt)
        energy["site_load_mwh"] = fm.energy_mwh(p_load, dt)
        metrics: dict[str, Any] = {"raw": raw_m, "pcc": pcc_m, "energy": energy, "storage": storage_m}
        metrics["electrical"] = electrical_metrics(pf, dt)
        if net.enabled:
            metrics["electrical"].update(net.limits.as_metrics())
        metrics["electrical_compliance"] = electrical_compliance(pf, scenario.grid, dt, net.has_bess)
        events.extend(violation_events(profile.t_s, pf, scenario.grid, dt))
        events.sort(key=lambda e: e.get("t_s", 0.0))
        metrics["training"] = training_block(scenario, gpu_full, gpu_normal, engaged, codesign)
        add_crashes(metrics["training"], profile)
        # limits the load data cannot decide (a 1-s-averaged or coarsely polled trace)
        undecided = sorted(profile.meta.get("undecided", {}))
        metrics["compliance"] = fm.compliance(pcc_m, spec, undecided)
        metrics["compliance_raw"] = fm.compliance(raw_m, spec, undecided)
        metrics["undecided"] = {k: True for k in undecided}
        if scenario.grid_impact.enabled:
            grid_impact_block(metrics, scenario, pf.p_pcc_mw, pf_raw.p_pcc_mw, dt)
        metrics["gpu"] = {"engaged_frac": float(np.mean(engaged)) if engaged.size else 0.0}
        if gpu_full is not None and getattr(gpu_full, "wear", None):
            metrics["gpu"]["wear"] = numeric_tree(gpu_full.wear)
        metrics["events"] = {"count": len(events)}
        if use_storage:
            # the controller's own counters (re-plans and their wall time, fallbacks, ...)
            metrics["control"] = numeric_tree(ctl.info)
        ts = timeseries_frame(profile.t_s, raw_site, p_load, pf, pf_raw, p_storage, soc, engaged)
        if ge is not None:
            grid_event_block(metrics, ts, scenario, ge, pf, pf_ref, net, storages)
        # last: the blocks above rebuild compliance from its rows
        metrics["compliance"]["margins"] = fm.limit_margins(
            metrics, spec,
            grid_impact_margins(metrics, scenario.grid_impact) if scenario.grid_impact.enabled else None)
    bar.update()

    timings["total"] = time.perf_counter() - t_start
    res = Results(scenario=scenario, timeseries=ts, metrics=metrics, events=events,
                  timings_s=timings, sizing=sizing)
    if use_storage and controller.report_regret and controller.kind != "optimal":
        with stage("regret"):
            metrics["regret"] = regret_vs_optimal(res, run_scenario=simulate_design)
    if out_dir is not None:
        with stage("outputs"):
            write_outputs(res, Path(out_dir), plots=plots)
        bar.update()
    bar.close()
    return res
