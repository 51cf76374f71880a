"""What validates must run: the preconditions of every stage, checked before anything runs.

:mod:`facility.config.checks` holds the physics checks of the scenario as written; this module
adds the preconditions that the stages of a run (:func:`facility.run.orchestrator.run_scenario`) would
otherwise only find while running, after allocating their arrays:

=================== =========================================================================
stage               precondition (refused at validation, the message names key, value, unit)
=================== =========================================================================
load generator      resolved iteration shape (archetype / workload defaults filled in):
                    ``p_low_frac <= p_high_frac``; every phase resolved by ``dt_s``: period
                    >= 2 steps, compute phase ``compute_frac * period_s`` and communication
                    phase ``(1 - compute_frac) * period_s`` >= 1 step, a checkpoint and the
                    running time between checkpoints >= 1 step; ``n_rack_groups`` <= racks;
                    rack groups x steps <= :data:`MAX_GROUP_STEPS`; iterations drawn
                    <= :data:`MAX_ITERATION_CELLS`. A start/stop ramp shorter than a step is
                    a warning (it acts as a step change).
storage             ``initial_soc_frac`` >= ``min_soc_frac + reserve_frac`` (UPS)
controller          ``sample_s`` >= half a step; filter with several storages:
                    ``slow_cutoff_hz < cutoff_hz``; co-design ``codesign_release_margin_frac
                    >= codesign_soc_margin_frac``; MPC ``horizon_s >= replan_s`` and
                    ``replan_s`` >= half a step.
monitor             a spectral limit to watch (``spec.max_band_peak_mw`` or ``spec.bands``),
                    ``every_s`` >= half a step
power flow          every feeder's upper-bound peak within 2x of its MV/LV transformer
optimizer           LP size (steps x storages x window limits) <= :data:`MAX_LP_VARIABLES`
=================== =========================================================================

Each ``check_*`` returns a list of problems, like the checks of :mod:`facility.config.checks`,
so :func:`facility.config.checks.check_scenario` reports them all at once.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from facility.config.library import load_gpu
from facility.errors import ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = [
    "MAX_GROUP_STEPS",
    "MAX_ITERATION_CELLS",
    "MAX_LP_VARIABLES",
    "n_steps",
    "job_groups",
    "total_groups",
    "feeder_peaks_mw",
    "lp_size",
    "check_job_timing",
    "check_storage_run",
    "check_controller_run",
    "check_monitor",
    "check_feeders",
    "check_sizes",
]

log = logging.getLogger(__name__)

#: Largest rack groups x steps of the load matrix (one float64 matrix of it is 16 GiB).
MAX_GROUP_STEPS = 2_000_000_000
#: Largest rack groups x iteration segments the load generator draws.
MAX_ITERATION_CELLS = 500_000_000
#: Largest LP the optimizer builds (variables, before any exact reduction).
MAX_LP_VARIABLES = 50_000_000

_EPS = 1e-9


def n_steps(s: "Scenario") -> int:
    """Number of fine steps T of the run (as :func:`facility.workload.timeline.time_grid`)."""
    return max(1, int(math.ceil(s.time.horizon_s / s.time.dt_s - 1e-6)))


def _gpu(job, key: str):
    try:
        return load_gpu(job.gpu, key=f"{key}.gpu")
    except ScenarioError:
        return None            # reported by checks.check_jobs


def job_groups(job, gpu) -> tuple[int, int]:
    """(rack groups, racks) of a job, as :func:`facility.workload.groups.group_gpu_counts`."""
    from facility.workload.groups import MAX_DEFAULT_GROUPS

    per_rack = job.gpus_per_rack or gpu.gpus_per_rack
    racks = math.ceil(job.n_gpus / per_rack)
    g = min(MAX_DEFAULT_GROUPS, racks) if job.n_rack_groups is None else job.n_rack_groups
    return g, racks


def total_groups(s: "Scenario") -> int:
    """Rack groups G of the load matrix (jobs with an unknown GPU model count 1)."""
    total = 0
    for i, job in enumerate(s.jobs):
        gpu = _gpu(job, f"jobs.{i}")
        total += job_groups(job, gpu)[0] if gpu is not None else 1
    return total


def check_job_timing(s: "Scenario") -> list[str]:
    """Resolved iteration shape, phases against ``dt_s``, groups and iteration counts."""
    from facility.workload.archetypes import resolve_job_params

    dt = s.time.dt_s
    T = n_steps(s)
    out: list[str] = []
    cells = 0
    for i, job in enumerate(s.jobs):
        key = f"jobs.{i}"
        gpu = _gpu(job, key)
        if gpu is None:
            continue
        src = (f" (from archetype {job.archetype!r})" if job.archetype else " (the default)")
        try:
            p = resolve_job_params(job, gpu)
        except ScenarioError:
            out.append(f"{key}.p_low_frac = {_resolved_low(job):g} [frac of TDP]"
                       f"{src if job.p_low_frac is None else ''} exceeds {key}.p_high_frac = "
                       f"{job.p_high_frac:g}; allowed: p_low_frac ≤ p_high_frac")
            continue
        g, racks = job_groups(job, gpu)
        if g > racks:
            out.append(f"{key}.n_rack_groups = {g} exceeds the job's {racks} rack(s) ({job.n_gpus} "
                       f"GPUs / {job.gpus_per_rack or gpu.gpus_per_rack} GPUs per rack, "
                       f"{key}.n_gpus / {key}.gpus_per_rack); allowed: 1..{racks}")
        if job.workload != "trace":
            per = p.period_s
            psrc = "" if job.period_s is not None else src
            if per < 2 * dt - _EPS:
                out.append(f"{key}.period_s = {per:g} s{psrc} is shorter than 2 steps of time.dt_s = "
                           f"{dt:g} s: the grid cannot resolve the iteration; allowed: period_s ≥ "
                           f"{2 * dt:g} s (or time.dt_s ≤ {per / 2:g} s)")
            else:
                d = p.compute_frac
                for phase, dur in (("compute phase compute_frac x period_s", d * per),
                                   ("communication phase (1 - compute_frac) x period_s", (1 - d) * per)):
                    if dur < dt - _EPS:
                        out.append(f"{key}: the {phase} = {dur:g} s ({key}.compute_frac = {d:g}, "
                                   f"{key}.period_s = {per:g} s) is shorter than time.dt_s = {dt:g} s; "
                                   f"allowed: time.dt_s ≤ {dur:g} s, or a compute_frac in "
                                   f"[{dt / per:.3g}, {1 - dt / per:.3g}]")
            span = s.time.horizon_s + 2 * (p.phase_offset_s * 6 + p.straggler_delay_s) + 2 * per
            cells += g * 2 * int(min(span / max(per, 1e-300), 1e300) + 3)
        if 0 < job.ramp_s < dt - _EPS:
            log.warning("%s.ramp_s = %g s is shorter than time.dt_s = %g s: the start/stop ramps act "
                        "as step changes", key, job.ramp_s, dt)
        if job.checkpoint_every_s is not None and job.checkpoint_s > 0:
            if job.checkpoint_s < dt - _EPS:
                out.append(f"{key}.checkpoint_s = {job.checkpoint_s:g} s is shorter than time.dt_s = "
                           f"{dt:g} s: a checkpoint would cover 0 or 1 steps depending on its phase; "
                           f"allowed: checkpoint_s ≥ {dt:g} s (or 0 = no checkpoints)")
            elif job.checkpoint_every_s - job.checkpoint_s < dt - _EPS:
                out.append(f"{key}.checkpoint_every_s = {job.checkpoint_every_s:g} s leaves less than "
                           f"time.dt_s = {dt:g} s of training between checkpoints of {key}.checkpoint_s "
                           f"= {job.checkpoint_s:g} s; allowed: checkpoint_every_s ≥ "
                           f"{job.checkpoint_s + dt:g} s")
    G = total_groups(s)
    if G * T > MAX_GROUP_STEPS:
        out.append(f"the load matrix has {G:,} rack groups x {T:,} steps = {G * T:.3g} cells, above "
                   f"the limit of {MAX_GROUP_STEPS:.3g}; use fewer rack groups (jobs.*.n_rack_groups), "
                   f"a shorter time.horizon_s or a larger time.dt_s")
    if cells > MAX_ITERATION_CELLS:
        out.append(f"the jobs draw {cells:.3g} rack-group iteration segments, above the limit of "
                   f"{MAX_ITERATION_CELLS:.3g}; use longer jobs.*.period_s, fewer "
                   f"jobs.*.n_rack_groups or a shorter time.horizon_s")
    return out


def _resolved_low(job) -> float:
    from facility.workload.archetypes import ARCHETYPES, SHAPE_DEFAULTS

    if job.p_low_frac is not None:
        return job.p_low_frac
    return (ARCHETYPES.get(job.archetype, {}) if job.archetype else {}).get("p_low_frac",
                                                                            SHAPE_DEFAULTS["p_low_frac"])


def check_storage_run(s: "Scenario") -> list[str]:
    """Storage parameters as the simulation resolves them (UPS reserve added to min SoC)."""
    out = []
    for name, st in s.storages().items():
        reserve = float(getattr(st, "reserve_frac", 0.0))
        if reserve and st.min_soc_frac + reserve < st.max_soc_frac and \
                st.initial_soc_frac < st.min_soc_frac + reserve - 1e-12:
            out.append(f"{name}.initial_soc_frac = {st.initial_soc_frac:g} [frac] is below "
                       f"{name}.min_soc_frac + {name}.reserve_frac = {st.min_soc_frac + reserve:g}; "
                       f"allowed: {st.min_soc_frac + reserve:g} ≤ initial_soc_frac ≤ {st.max_soc_frac:g}")
    return out


def check_controller_run(s: "Scenario") -> list[str]:
    """Controller timing and filter/co-design/MPC parameters, as the control loop needs them."""
    c = s.controller
    dt = s.time.dt_s
    sto = s.storage_units()
    out = []
    kind = c.kind
    if kind == "none" and any(st.extendable for st in sto.values()):
        # what run and size verify a design under (facility.sizing.verification_controller)
        kind = "mpc"
    if kind == "none" or not sto:
        return out
    if c.sample_s is not None:
        if c.sample_s < 0.5 * dt:
            out.append(f"controller.sample_s = {c.sample_s:g} s is shorter than half of time.dt_s = "
                       f"{dt:g} s; allowed: sample_s ≥ {dt:g} s (or none = every step)")
        elif abs(round(c.sample_s / dt) * dt - c.sample_s) > 1e-6 * c.sample_s:
            log.warning("controller.sample_s = %g s is not a whole number of time.dt_s = %g s steps; "
                        "the controller samples every %d steps (%g s)", c.sample_s, dt,
                        round(c.sample_s / dt), round(c.sample_s / dt) * dt)
    if kind == "filter" and len(sto) > 1:
        fc = c.cutoff_hz if c.cutoff_hz is not None else 1.0 / (2 * math.pi * c.window_s)
        fcs = c.slow_cutoff_hz if c.slow_cutoff_hz is not None else fc / 10.0
        if fcs >= fc:
            out.append(f"controller.slow_cutoff_hz = {fcs:g} Hz must be below controller.cutoff_hz = "
                       f"{fc:g} Hz{'' if c.cutoff_hz is not None else ' (1 / (2 pi controller.window_s))'}")
    gpu_on = s.gpu_smoothing.enabled or s.firefly.enabled or s.power_cap.enabled
    if c.codesign and gpu_on:
        margin = c.codesign_soc_margin_frac
        rel = 2 * margin if c.codesign_release_margin_frac is None else c.codesign_release_margin_frac
        if rel < margin:
            out.append(f"controller.codesign_release_margin_frac = {rel:g} must be at least "
                       f"controller.codesign_soc_margin_frac = {margin:g} [frac] (hysteresis)")
    if kind == "mpc" and c.horizon_s is not None and c.horizon_s + 1e-9 < c.replan_s:
        out.append(f"controller.horizon_s = {c.horizon_s:g} s must be at least controller.replan_s = "
                   f"{c.replan_s:g} s")
    if kind == "mpc":
        # the MPC's grid refuses these at the run (facility.control.mpc_grid.choose_grid); with
        # controller.kind = 'none' an extendable design is verified under the MPC
        from facility.control.mpc_grid import given_step_problems

        why = "" if c.kind == "mpc" else (" (controller.kind = 'none' with an extendable storage: run and "
                                          "size verify the design under the MPC)")
        out.extend(p + why for p in given_step_problems(c, dt, s.spec))
    if kind == "mpc" and c.replan_s < 0.5 * dt:
        out.append(f"controller.replan_s = {c.replan_s:g} s is shorter than half of time.dt_s = {dt:g} s; "
                   f"allowed: replan_s ≥ {dt:g} s")
    return out


def check_monitor(s: "Scenario") -> list[str]:
    """The FFT-bin monitor needs a spectral limit to watch."""
    m, dt = s.monitor, s.time.dt_s
    if not m.enabled:
        return []
    out = []
    if s.spec.max_band_peak_mw is None and not s.spec.bands:
        out.append("monitor.enabled = true needs a spectral limit to watch: set spec.max_band_peak_mw "
                   "[MW] or add spec.bands")
    if m.every_s < 0.5 * dt:
        out.append(f"monitor.every_s = {m.every_s:g} s is shorter than half of time.dt_s = {dt:g} s; "
                   f"allowed: every_s ≥ {dt:g} s")
    return out


def feeder_peaks_mw(s: "Scenario") -> list[float]:
    """Upper bound of each feeder's peak site power: every GPU at the highest level the
    generator can draw (max of p_high_frac and the EDP peak), non-GPU IT and cooling added,
    ``base_load_mw`` on feeder 0, groups assigned as :func:`facility.workload.assign_feeders`. [MW]"""
    import numpy as np

    from facility.workload.archetypes import resolve_job_params
    from facility.workload.groups import assign_feeders, default_n_feeders, group_gpu_counts

    n_f = default_n_feeders(s)
    peak = np.zeros(n_f)
    counts, jobs, level = [], [], []
    for i, job in enumerate(s.jobs):
        gpu = _gpu(job, f"jobs.{i}")
        if gpu is None:
            return []
        g, racks = job_groups(job, gpu)
        if g > racks:
            return []
        try:
            p = resolve_job_params(job, gpu)
        except ScenarioError:
            return []
        noisy = p.noise_high_frac > 0 or p.noise_low_frac > 0 or p.drop_jitter_frac > 0 or \
            job.workload == "trace"
        top = max(p.p_high_frac, 1.0, p.max_level_frac if noisy else 0.0,
                  p.checkpoint_frac)       # firefly fill and the floor stay <= TDP
        c = group_gpu_counts(job.n_gpus, job.gpus_per_rack or gpu.gpus_per_rack, g, f"jobs.{i}")
        counts.append(c)
        jobs.append(np.full(c.size, i))
        level.append(np.full(c.size, gpu.tdp_w * top))
    feeder = assign_feeders(np.concatenate(jobs), s.grid.n_feeders)
    if feeder.size and feeder.max() >= n_f:
        return []
    np.add.at(peak, feeder, np.concatenate(counts) * np.concatenate(level) / 1e6)
    peak *= (1.0 + s.site.non_gpu_frac) * s.site.pue
    peak[0] += s.site.base_load_mw
    return [float(x) for x in peak]


def check_feeders(s: "Scenario") -> list[str]:
    """Every feeder's upper-bound peak within 2x of a given MV/LV transformer rating."""
    g = s.grid
    if not g.enabled or g.lv_trafo_sn_mva is None or g.lv_trafo_type is not None:
        return []
    out = []
    for f, peak in enumerate(feeder_peaks_mw(s)):
        if peak > 2.0 * g.lv_trafo_sn_mva:
            out.append(f"grid.lv_trafo_sn_mva = {g.lv_trafo_sn_mva:g} MVA cannot carry feeder {f}'s peak "
                       f"of up to {peak:.1f} MW (its rack groups at full power); allowed: "
                       f"lv_trafo_sn_mva ≥ {peak / 2.0:.1f} MVA (2x overload at most), or more "
                       f"grid.n_feeders")
            break
    return out


def lp_size(s: "Scenario") -> int:
    """Variables of the largest LP a run of ``s`` may build (0 when it builds none): per step
    and storage charge, discharge, energy and rating terms, plus two auxiliaries per step and
    window limit (the O(T) sliding-window rows of :mod:`facility.optimize.model.windows`)."""
    sto = s.storage_units()   # a hybrid section: one unit per candidate technology
    sizing = any(st.extendable for st in sto.values())
    if not sto or not (sizing or s.controller.kind in ("optimal", "mpc")):
        return 0
    sp = s.spec
    n_win = sum(v is not None for v in (sp.max_ramp_up_mw_per_s, sp.max_ramp_down_mw_per_s,
                                         sp.max_ramp_mw_per_min, sp.max_window_swing_mw,
                                         sp.max_dynamic_range_mw))
    T = n_steps(s)
    if s.controller.kind == "mpc" and not sizing:
        # (none = automatic: at most 600 s, on steps of at least horizon / 400)
        horizon = s.controller.horizon_s or 600.0
        mpc_dt = s.controller.mpc_dt_s or max(s.time.dt_s, 0.1, horizon / 400.0)
        T = max(1, int(round(horizon / mpc_dt)))
    return T * (3 * len(sto) + 2 * n_win + 1)


def check_sizes(s: "Scenario") -> list[str]:
    """The optimizer's LP bounded before it is built."""
    n = lp_size(s)
    if n > MAX_LP_VARIABLES:
        return [f"the optimizer's LP would have about {n:.3g} variables ({n_steps(s):,} steps of "
                f"time.dt_s = {s.time.dt_s:g} s x {len(s.storages())} storage(s) and the window limits), "
                f"above the limit of {MAX_LP_VARIABLES:.3g}; use a larger time.dt_s, a shorter "
                f"time.horizon_s, or fewer extendable storages"]
    return []
