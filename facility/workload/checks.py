"""The checks of a scenario that need the load generator: trace files opened as the replay
reads them, the generator's preconditions (iteration shape against ``dt_s``, rack groups,
the sizes it allocates) and the feeders' upper-bound peaks.

Each ``check_*`` returns a list of problems (strings naming key, unit and range), like those of
:mod:`facility.config.checks`; :func:`facility.scenario.resolve` runs them with the others.
They take the scenario's :class:`~facility.config.resolved.Library` (its GPU models; a job
whose model is unknown is skipped: :func:`facility.config.checks.check_jobs` reports it).

May import: :mod:`facility.config`, :mod:`facility.errors` and :mod:`facility.workload`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from facility.config import files
from facility.config.preconditions import n_steps
from facility.config.resolved import job_gpu
from facility.errors import ScenarioError
from facility.workload.archetypes import ARCHETYPES, SHAPE_DEFAULTS, resolve_job_params
from facility.workload.groups import assign_feeders, default_n_feeders, group_gpu_counts, rack_groups
from facility.workload.trace_checks import job_trace

if TYPE_CHECKING:
    from facility.config.resolved import Library
    from facility.config.schema import Scenario

__all__ = [
    "MAX_GROUP_STEPS",
    "MAX_ITERATION_CELLS",
    "check_trace_files",
    "job_traces",
    "trace_summaries",
    "job_groups",
    "total_groups",
    "check_job_timing",
    "feeder_peaks_mw",
    "check_feeders",
]

log = logging.getLogger(__name__)

#: Largest rack groups x steps of the load matrix (one float64 matrix of it is 16 GiB).
MAX_GROUP_STEPS = 2_000_000_000
#: Largest rack groups x iteration segments the load generator draws.
MAX_ITERATION_CELLS = 500_000_000

_EPS = 1e-9


def _readable_traces(s: "Scenario"):
    """``(key, job)`` of every trace job whose file is there to read (the others are reported
    by :func:`facility.config.checks.check_jobs`)."""
    for i, job in enumerate(s.jobs):
        if job.workload != "trace" or not job.trace_file:
            continue
        key = f"jobs.{i}"
        try:
            files.check_file(job.trace_file, key=f"{key}.trace_file", what="trace file",
                             max_bytes=files.MAX_TRACE_BYTES)
        except ScenarioError:
            continue
        yield key, job


def check_trace_files(s: "Scenario", lib: "Library") -> list[str]:
    """Open and check each trace job's file exactly as the replay reads it (format, units, GPU
    rows, scale vs TDP and idle power, sensor): the same messages as ``run``."""
    out = []
    for key, job in _readable_traces(s):
        if job.gpu not in lib.gpus:
            continue
        try:
            job_trace(job, key, lib.gpu(job.gpu))
        except ScenarioError as exc:
            out.append(str(exc))
    return out


def job_traces(s: "Scenario", skip: tuple[type[BaseException], ...] = (ScenarioError,)):
    """``(key, job, trace)`` of every trace job, its trace read as the replay reads it
    (:func:`~facility.workload.trace_checks.job_trace`, the GPU model of
    :func:`~facility.config.resolved.job_gpu`); a job whose model or trace fails with one of
    ``skip`` is left out (:func:`check_trace_files` and the config checks report it)."""
    for i, job in enumerate(s.jobs):
        if job.workload != "trace" or not job.trace_file:
            continue
        key = f"jobs.{i}"
        try:
            tr = job_trace(job, key, job_gpu(s, i))
        except skip:
            continue
        yield key, job, tr


def trace_summaries(s: "Scenario") -> list[str]:
    """One line per trace job: what its file holds (GPUs, polls, interval, sensor)."""
    return [f"{key}.trace_file: {tr.info.summary()}" for key, _, tr in job_traces(s)]


def job_groups(job, gpu) -> tuple[int, int]:
    """(rack groups, racks) of a job, as :func:`~facility.workload.groups.group_gpu_counts`."""
    return rack_groups(job.n_gpus, job.gpus_per_rack or gpu.gpus_per_rack, job.n_rack_groups)


def total_groups(s: "Scenario", lib: "Library") -> int:
    """Rack groups G of the load matrix (jobs with an unknown GPU model count 1)."""
    total = 0
    for job in s.jobs:
        gpu = lib.gpus.get(job.gpu)
        total += job_groups(job, gpu)[0] if gpu is not None else 1
    return total


def check_job_timing(s: "Scenario", lib: "Library") -> list[str]:
    """Resolved iteration shape, phases against ``dt_s``, groups and iteration counts (a
    precondition of the load generator; ``lib``: the scenario's library, its GPU models)."""
    dt = s.time.dt_s
    T = n_steps(s)
    out: list[str] = []
    cells = 0
    for i, job in enumerate(s.jobs):
        key = f"jobs.{i}"
        gpu = lib.gpus.get(job.gpu)
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
    G = total_groups(s, lib)
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
    if job.p_low_frac is not None:
        return job.p_low_frac
    return (ARCHETYPES.get(job.archetype, {}) if job.archetype else {}).get("p_low_frac",
                                                                            SHAPE_DEFAULTS["p_low_frac"])


def feeder_peaks_mw(s: "Scenario", lib: "Library") -> list[float]:
    """Upper bound of each feeder's peak site power: every GPU at the highest level the
    generator can draw (max of p_high_frac and the EDP peak), non-GPU IT and cooling added,
    ``base_load_mw`` on feeder 0, groups assigned as :func:`~facility.workload.groups.assign_feeders`
    (empty when a job's GPU model or shape is not valid: the checks report it). [MW]"""
    n_f = default_n_feeders(s)
    peak = np.zeros(n_f)
    counts, jobs, level = [], [], []
    for i, job in enumerate(s.jobs):
        gpu = lib.gpus.get(job.gpu)
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


def check_feeders(s: "Scenario", lib: "Library") -> list[str]:
    """Every feeder's upper-bound peak within 2x of a given MV/LV transformer rating."""
    g = s.grid
    if not g.enabled or g.lv_trafo_sn_mva is None or g.lv_trafo_type is not None:
        return []
    out = []
    for f, peak in enumerate(feeder_peaks_mw(s, lib)):
        if peak > 2.0 * g.lv_trafo_sn_mva:
            out.append(f"grid.lv_trafo_sn_mva = {g.lv_trafo_sn_mva:g} MVA cannot carry feeder {f}'s peak "
                       f"of up to {peak:.1f} MW (its rack groups at full power); allowed: "
                       f"lv_trafo_sn_mva ≥ {peak / 2.0:.1f} MVA (2x overload at most), or more "
                       f"grid.n_feeders")
            break
    return out
