"""Second validation layer: the cross-field physics checks that need only the schema (and the
configuration's own libraries: GPU models, utility specs, storage technologies).

Each ``check_*`` function returns a list of problems (strings naming key, unit and range);
:func:`check_scenario` runs them with the configuration's preconditions
(:mod:`facility.config.preconditions`) and raises one :class:`ScenarioError` listing every
problem. The checks that need a domain (trace files, transformer and UPS types, grid events,
the grid-impact models, the load generator's timing, the controller's grid) live in that
domain's ``checks`` module; :func:`facility.scenario.resolve` runs them all, these first.

May import: :mod:`facility.config` and :mod:`facility.errors` only.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import numpy as np

from facility.config import files
from facility.config.checks_storage import check_duration, check_storage, duration_violation
from facility.config.preconditions import check_monitor, check_sizes, check_storage_run
from facility.config.resolved import job_gpu, job_gpus
from facility.errors import NotSupportedError, ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = [
    "NOT_SUPPORTED",
    "MAX_STEPS",
    "CHECKS",
    "check_scenario",
    "check_supported",
    "config_problems",
    "raise_problems",
    "check_time",
    "check_jobs",
    "check_failures",
    "check_storage",
    "check_spec",
    "check_gpu_controls",
    "check_controller",
    "check_grid_voltages",
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
    """GPU names, start/stop order, checkpoint timing, power levels, failures and the trace
    files' presence (their content: :func:`facility.workload.checks.check_trace_files`)."""
    out = []
    for i, job in enumerate(s.jobs):
        key = f"jobs.{i}"
        try:
            gpu = job_gpu(s, i)
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


def check_gpu_controls(s: "Scenario") -> list[str]:
    """GPU smoothing floor inside each GPU's programmable range; firefly target above trigger."""
    out = []
    gs = s.gpu_smoothing
    if gs.enabled:
        for i, job, gpu in job_gpus(s):
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
        for i, job, gpu in job_gpus(s):
            if not gpu.supports_power_smoothing or gpu.max_floor_frac <= 0:
                log.warning(
                    "optimize.levers names 'floor', but jobs.%d.gpu = %r has no hardware power "
                    "smoothing (no programmable power floor): the floor is not a decision for job "
                    "%r (burn and cap still are, where named)", i, job.gpu, job.name,
                )
    pc = s.power_cap
    if pc.enabled:
        for i, job, gpu in job_gpus(s):
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


def check_grid_voltages(s: "Scenario") -> list[str]:
    """The network's voltage levels descend: HV above MV above LV (the rest of ``[grid]``:
    :func:`facility.electrical.checks.check_grid`)."""
    g = s.grid
    out = []
    if g.mv_kv >= g.vn_kv:
        out.append(f"grid.mv_kv = {g.mv_kv:g} kV must be below grid.vn_kv = {g.vn_kv:g} kV")
    if g.lv_kv >= g.mv_kv:
        out.append(f"grid.lv_kv = {g.lv_kv:g} kV must be below grid.mv_kv = {g.mv_kv:g} kV")
    return out


#: The configuration's consistency checks, in the order their problems are listed.
CHECKS = (check_time, check_jobs, check_storage, check_spec, check_gpu_controls, check_controller,
          check_grid_voltages)


def check_supported(scenario: "Scenario", source: str = "<scenario>") -> None:
    """Raise :class:`NotSupportedError` when a section of :data:`NOT_SUPPORTED` is on."""
    for section, active in NOT_SUPPORTED.items():
        if active(scenario):
            raise NotSupportedError(f"{source}: not supported yet: {section}")


def config_problems(scenario: "Scenario") -> list[str]:
    """The problems of every check of :data:`CHECKS`, in order."""
    return [p for check in CHECKS for p in check(scenario)]


def check_scenario(scenario: "Scenario", source: str = "<scenario>") -> None:
    """Run the configuration's checks, and on a scenario consistent as written its
    preconditions (:func:`~facility.config.preconditions.check_storage_run`,
    :func:`~facility.config.preconditions.check_monitor`,
    :func:`~facility.config.preconditions.check_sizes`); raise one :class:`ScenarioError`
    listing all problems. The domains' checks: :func:`facility.scenario.resolve`.

    Raises
    ------
    NotSupportedError
        A section whose behaviour is not implemented yet is switched on.
    ScenarioError
        Any check failed.
    """
    check_supported(scenario, source)
    problems = config_problems(scenario)
    if not problems:  # the run's preconditions, on a scenario that is consistent as written
        problems = [p for check in (check_storage_run, check_monitor, check_sizes) for p in check(scenario)]
    raise_problems(problems, source)


def raise_problems(problems: list[str], source: str) -> None:
    """Raise one :class:`ScenarioError` listing ``problems``, each line prefixed with
    ``source``; nothing when there are none."""
    if problems:
        raise ScenarioError("\n".join(f"{source}: {p}" for p in problems))
