"""Second validation layer: cross-field physics checks on a schema-valid :class:`Scenario`.

Each ``check_*`` function returns a list of problems (strings naming key, unit and range);
:func:`check_scenario` runs them all and raises one :class:`ScenarioError` listing every problem.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import numpy as np

from facility.config import files
from facility.config.checks_grid import (check_grid, check_grid_events, check_grid_impact,
                                         grid_impact_warnings)
from facility.config.checks_storage import check_duration, check_storage, duration_violation
from facility.config.library import load_gpu
from facility.errors import NotSupportedError, ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = [
    "NOT_SUPPORTED",
    "MAX_STEPS",
    "check_scenario",
    "check_time",
    "check_jobs",
    "check_trace_file",
    "scenario_warnings",
    "trace_summaries",
    "check_storage",
    "check_spec",
    "check_grid_events",
    "check_gpu_controls",
    "check_controller",
    "check_grid",
    "check_grid_impact",
    "grid_impact_warnings",
    "check_duration",
    "duration_violation",
]

log = logging.getLogger(__name__)

#: Sections (and their enabling predicate) whose behaviour is not implemented yet. A scenario
#: that switches one on fails validation with "not supported yet: <section>".
NOT_SUPPORTED: dict[str, Callable[["Scenario"], bool]] = {}

#: Largest number of fine time steps a single run accepts.
MAX_STEPS = 20_000_000


def check_time(s: "Scenario") -> list[str]:
    """Horizon and step: at least two steps, bounded step count, integer number of steps."""
    t = s.time
    out = []
    n = t.horizon_s / t.dt_s
    if n < 2:
        out.append(f"time.dt_s = {t.dt_s:g} s must be at most half of time.horizon_s = {t.horizon_s:g} s")
    if n > MAX_STEPS:
        out.append(
            f"time.horizon_s / time.dt_s = {n:.3g} steps exceeds the limit of {MAX_STEPS:,} steps "
            f"(raise dt_s [s] or shorten horizon_s [s])"
        )
    return out


def check_jobs(s: "Scenario") -> list[str]:
    """GPU names, start/stop order, checkpoint timing, power levels and trace files."""
    out = []
    for i, job in enumerate(s.jobs):
        key = f"jobs.{i}"
        try:
            gpu = load_gpu(job.gpu, key=f"{key}.gpu")
        except ScenarioError as exc:
            out.append(str(exc))
            continue
        if job.stop_s is not None and job.stop_s <= job.start_s:
            out.append(f"{key}.stop_s = {job.stop_s:g} s must be greater than {key}.start_s = {job.start_s:g} s")
        if job.checkpoint_every_s is not None:
            if job.checkpoint_s <= 0:
                out.append(f"{key}.checkpoint_s must be > 0 s when {key}.checkpoint_every_s is set")
            elif job.checkpoint_s >= job.checkpoint_every_s:
                out.append(
                    f"{key}.checkpoint_s = {job.checkpoint_s:g} s must be shorter than "
                    f"{key}.checkpoint_every_s = {job.checkpoint_every_s:g} s"
                )
        if job.p_low_frac is not None and job.p_low_frac > job.p_high_frac:
            out.append(
                f"{key}.p_low_frac = {job.p_low_frac:g} [frac of TDP] must not exceed "
                f"{key}.p_high_frac = {job.p_high_frac:g}"
            )
        if job.p_high_frac > gpu.min_edp_frac + 1e-12 and job.p_high_frac > 1.0:
            out.append(
                f"{key}.p_high_frac = {job.p_high_frac:g} [frac of TDP] exceeds the EDP peak of "
                f"{job.gpu} ({gpu.min_edp_frac:g} x TDP); allowed: ≤ {max(1.0, gpu.min_edp_frac):g}"
            )
        if job.failures is not None:
            out.extend(check_failures(job, key))
        if job.workload == "trace":
            if not job.trace_file:
                out.append(f"{key}.trace_file is required when {key}.workload = 'trace'")
            else:
                try:
                    files.check_file(job.trace_file, key=f"{key}.trace_file", what="trace file",
                                     max_bytes=files.MAX_TRACE_BYTES,
                                     size_hint=f"; cut {key}.trace_file to the part the job replays, or "
                                          f"drop columns it does not need (parsing holds ~10 bytes of "
                                          f"memory per byte of trace)")
                except ScenarioError as exc:
                    out.append(str(exc))
                else:
                    out.extend(check_trace_file(job, key))
        elif job.trace_file:
            out.append(f"{key}.trace_file is only used with workload = 'trace' (workload = {job.workload!r})")
    return out


def check_failures(job, key: str) -> list[str]:
    """[jobs.failures]: a rate or declared crash times (not both), crashes while the job runs."""
    f, k = job.failures, f"{key}.failures"
    out = []
    times = list(f.crash_times_s)
    if f.rate_per_gpu_h is None and not times:
        out.append(f"{k}: set rate_per_gpu_h [1/GPU-h] or crash_times_s [s]")
    if f.rate_per_gpu_h is not None and times:
        out.append(f"{k}: rate_per_gpu_h and crash_times_s exclude each other; give one")
    if f.restart_after_s < f.crash_drop_s:
        out.append(f"{k}.restart_after_s = {f.restart_after_s:g} s must be at least "
                   f"{k}.crash_drop_s = {f.crash_drop_s:g} s (the job restarts from idle)")
    for i, t in enumerate(times):
        if not np.isfinite(t) or abs(t) > 1e9:
            out.append(f"{k}.crash_times_s[{i}] = {t:g} s; allowed: finite, within ±1e9 s")
            return out
        if t <= job.start_s:
            out.append(f"{k}.crash_times_s[{i}] = {t:g} s must be after {key}.start_s = "
                       f"{job.start_s:g} s (a job crashes while it runs)")
        if job.stop_s is not None and t >= job.stop_s:
            out.append(f"{k}.crash_times_s[{i}] = {t:g} s must be before {key}.stop_s = "
                       f"{job.stop_s:g} s")
        if i and t <= times[i - 1] + f.restart_after_s:
            out.append(f"{k}.crash_times_s[{i}] = {t:g} s must come after the restart of the "
                       f"previous crash ({times[i - 1]:g} s + restart_after_s = "
                       f"{times[i - 1] + f.restart_after_s:g} s); allowed: ascending, spaced by "
                       "more than restart_after_s")
    return out


def check_trace_file(job, key: str) -> list[str]:
    """Open and check a trace job's file exactly as the replay reads it (format, units, GPU rows,
    scale vs TDP and idle power, sensor): the same messages as ``run``."""
    from facility.workload.trace_checks import job_trace  # numpy/pandas/scipy only

    try:
        job_trace(job, key, load_gpu(job.gpu, key=f"{key}.gpu"))
    except ScenarioError as exc:
        return [str(exc)]
    return []


def scenario_warnings(s: "Scenario") -> list[str]:
    """What the scenario's inputs cannot show (no error): a trace averaged by its sensor under
    limits above ~0.5 Hz, sampling slower than the band limits, poll gaps, a trace shorter than
    the job; and numbers that cannot be what the user meant
    (:mod:`facility.config.plausibility`); storage units whose costs are in different dollar
    years (compared as given, :func:`facility.config.technology.cost_year_note`). Each names its
    key. ``run`` logs the plausibility warnings and lists them in events and report.html (the
    report's Design table shows the cost years).
    """
    from facility.workload.trace_checks import inspect_job_trace

    out = []
    for i, job in enumerate(s.jobs):
        if job.workload == "trace" and job.trace_file:
            try:
                _, found = inspect_job_trace(job, f"jobs.{i}", s)
            except ScenarioError:
                continue   # reported by check_jobs
            out.extend(found)
    from facility.config.plausibility import plausibility_warnings
    from facility.config.technology import cost_year_note

    years = cost_year_note({u: getattr(c, "cost_year", None) for u, c in s.storage_units().items()})
    if years:
        out.append(f"storage: {years}")
    return out + plausibility_warnings(s) + grid_impact_warnings(s)


def trace_summaries(s: "Scenario") -> list[str]:
    """One line per trace job: what its file holds (GPUs, polls, interval, sensor)."""
    from facility.workload.trace_checks import job_trace

    out = []
    for i, job in enumerate(s.jobs):
        if job.workload == "trace" and job.trace_file:
            try:
                gpu = load_gpu(job.gpu, key=f"jobs.{i}.gpu")
                out.append(f"jobs.{i}.trace_file: {job_trace(job, f'jobs.{i}', gpu).info.summary()}")
            except ScenarioError:
                continue
    return out


def check_spec(s: "Scenario") -> list[str]:
    """Band edges ordered; windows resolved by dt_s; Nyquist above the band when it is limited."""
    sp = s.spec
    dt = s.time.dt_s
    out = []
    if sp.band_min_hz >= sp.band_max_hz:
        out.append(f"spec.band_min_hz = {sp.band_min_hz:g} Hz must be below spec.band_max_hz = {sp.band_max_hz:g} Hz")
    nyquist = 0.5 / dt
    band_limited = sp.max_band_energy_frac is not None or sp.max_band_peak_mw is not None
    by = " and ".join(f"spec.{k}" for k in ("max_band_energy_frac", "max_band_peak_mw")
                      if getattr(sp, k) is not None)
    if band_limited and sp.band_max_hz > nyquist + 1e-9:
        out.append(
            f"time.dt_s = {dt:g} s cannot resolve spec.band_max_hz = {sp.band_max_hz:g} Hz "
            f"(Nyquist {nyquist:g} Hz) of the band limit {by}; allowed: dt_s ≤ {0.5 / sp.band_max_hz:g} s"
        )
    if band_limited and sp.band_min_hz < 1.0 / s.time.horizon_s - 1e-12:
        out.append(
            f"spec.band_min_hz = {sp.band_min_hz:g} Hz of the band limit {by} is below the frequency "
            f"resolution 1/horizon_s = {1.0 / s.time.horizon_s:g} Hz; allowed: time.horizon_s ≥ "
            f"{1.0 / sp.band_min_hz:g} s"
        )
    seen = set()
    for i, b in enumerate(sp.bands):
        if b.min_hz >= b.max_hz:
            out.append(f"spec.bands.{i}.min_hz = {b.min_hz:g} Hz must be below max_hz = {b.max_hz:g} Hz")
        if b.max_hz > nyquist + 1e-9:
            out.append(
                f"time.dt_s = {dt:g} s cannot resolve spec.bands.{i}.max_hz = {b.max_hz:g} Hz "
                f"(Nyquist {nyquist:g} Hz); allowed: dt_s ≤ {0.5 / b.max_hz:g} s"
            )
        if b.name in seen:
            out.append(f"spec.bands.{i}.name = {b.name!r} is repeated")
        seen.add(b.name)
    if (sp.max_ramp_up_mw_per_s or sp.max_ramp_down_mw_per_s) and sp.ramp_window_s < dt - 1e-12:
        out.append(f"spec.ramp_window_s = {sp.ramp_window_s:g} s must be at least time.dt_s = {dt:g} s")
    if sp.max_window_swing_mw is not None and sp.window_s < dt - 1e-12:
        out.append(f"spec.window_s = {sp.window_s:g} s must be at least time.dt_s = {dt:g} s")
    if sp.base:
        out = [f"{p} (limits of spec.base = {sp.base!r})" for p in out]
    return out


def _job_gpus(s: "Scenario"):
    """``(index, job, GpuModel)`` of every job whose GPU model exists (unknown ones are
    reported by :func:`check_jobs`)."""
    for i, job in enumerate(s.jobs):
        try:
            yield i, job, load_gpu(job.gpu)
        except ScenarioError:
            continue


def check_gpu_controls(s: "Scenario") -> list[str]:
    """GPU smoothing floor inside each GPU's programmable range; firefly target above trigger."""
    out = []
    gs = s.gpu_smoothing
    if gs.enabled:
        for i, job, gpu in _job_gpus(s):
            if not gpu.supports_power_smoothing:
                log.warning(
                    "jobs.%d.gpu = %r has no hardware power smoothing: gpu_smoothing is not applied to job %r",
                    i, job.gpu, job.name,
                )
                continue
            if gs.floor_frac > 0 and not gpu.min_floor_frac <= gs.floor_frac <= gpu.max_floor_frac:
                out.append(
                    f"gpu_smoothing.floor_frac = {gs.floor_frac:g} [frac of TDP] is outside the "
                    f"programmable range of {job.gpu} (jobs.{i}); allowed: 0 (no floor, ramps "
                    f"only) or {gpu.min_floor_frac:g} ≤ floor_frac ≤ {gpu.max_floor_frac:g}"
                )
        if gs.secondary_floor_frac is not None and gs.secondary_floor_frac > gs.floor_frac:
            out.append(
                f"gpu_smoothing.secondary_floor_frac = {gs.secondary_floor_frac:g} must not exceed "
                f"gpu_smoothing.floor_frac = {gs.floor_frac:g} [frac of TDP]"
            )
        if gs.secondary_floor_frac is not None and gs.activation_window_s == 0:
            out.append(
                f"gpu_smoothing.secondary_floor_frac = {gs.secondary_floor_frac:g} [frac of TDP] "
                "needs gpu_smoothing.activation_window_s > 0 s (the moving average that selects "
                "it); allowed: activation_window_s in (0, 60] s"
            )
        if s.power_cap.enabled and gs.floor_frac > s.power_cap.cap_frac:
            out.append(
                f"gpu_smoothing.floor_frac = {gs.floor_frac:g} [frac of TDP] must not exceed "
                f"power_cap.cap_frac = {s.power_cap.cap_frac:g}; allowed: floor_frac ≤ cap_frac"
            )
    if "floor" in s.optimize.levers:
        for i, job, gpu in _job_gpus(s):
            if not gpu.supports_power_smoothing or gpu.max_floor_frac <= 0:
                log.warning(
                    "optimize.levers names 'floor', but jobs.%d.gpu = %r has no hardware power "
                    "smoothing (no programmable power floor): the floor is not a decision for job "
                    "%r (burn and cap still are, where named)", i, job.gpu, job.name,
                )
    pc = s.power_cap
    if pc.enabled:
        for i, job, gpu in _job_gpus(s):
            if pc.cap_frac * gpu.tdp_w <= gpu.idle_w:
                out.append(
                    f"power_cap.cap_frac = {pc.cap_frac:g} [frac of TDP] is at or below the idle "
                    f"power of {job.gpu} (jobs.{i}, {gpu.idle_w:g} W of {gpu.tdp_w:g} W); "
                    f"allowed: {gpu.idle_frac:.3g} < cap_frac ≤ 1"
                )
    ff = s.firefly
    if ff.enabled and ff.target_frac < ff.trigger_frac:
        out.append(
            f"firefly.target_frac = {ff.target_frac:g} must be at least firefly.trigger_frac = "
            f"{ff.trigger_frac:g} [frac of TDP]; allowed: {ff.trigger_frac:g} ≤ target_frac ≤ 1"
        )
    if ff.enabled and ff.backoff_every_s and ff.backoff_s >= ff.backoff_every_s:
        out.append(
            f"firefly.backoff_s = {ff.backoff_s:g} s must be shorter than firefly.backoff_every_s = "
            f"{ff.backoff_every_s:g} s"
        )
    return out


def check_controller(s: "Scenario") -> list[str]:
    """A storage controller needs a storage to act on."""
    kind = s.controller.kind
    if kind != "none" and not s.storages():
        return [f"controller.kind = {kind!r} needs at least one enabled storage: set "
                "rack_storage.enabled, ups.enabled or bess.enabled = true (or controller.kind = 'none')"]
    return []


def _preconditions() -> tuple:
    from facility.config import preconditions as pc

    return (pc.check_job_timing, pc.check_storage_run, pc.check_controller_run, pc.check_monitor,
            pc.check_sizes)


_CHECKS = (check_time, check_jobs, check_storage, check_spec, check_gpu_controls,
           check_controller, check_grid, check_grid_events, check_grid_impact)


def check_scenario(scenario: "Scenario", source: str = "<scenario>") -> None:
    """Run every physics check; raise one :class:`ScenarioError` listing all problems.

    Raises
    ------
    NotSupportedError
        A section whose behaviour is not implemented yet is switched on.
    ScenarioError
        Any physics check failed.
    """
    for section, active in NOT_SUPPORTED.items():
        if active(scenario):
            raise NotSupportedError(f"{source}: not supported yet: {section}")
    problems = [p for check in _CHECKS for p in check(scenario)]
    if not problems:  # the run's preconditions, on a scenario that is consistent as written
        problems = [p for check in _preconditions() for p in check(scenario)]
    if problems:
        raise ScenarioError("\n".join(f"{source}: {p}" for p in problems))
