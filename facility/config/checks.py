"""Second validation layer: cross-field physics checks on a schema-valid :class:`Scenario`.

Each ``check_*`` function returns a list of problems (strings naming key, unit and range);
:func:`check_scenario` runs them all and raises one :class:`ScenarioError` listing every problem.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import numpy as np

from facility.config import files
from facility.config.library import load_gpu
from facility.config.plausibility import estimate_peak_site_mw
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
                                     hint=f"; cut {key}.trace_file to the part the job replays, or "
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
        job_trace(job, key)
    except ScenarioError as exc:
        return [str(exc)]
    return []


def scenario_warnings(s: "Scenario") -> list[str]:
    """What the scenario's inputs cannot show (no error): a trace averaged by its sensor under
    limits above ~0.5 Hz, sampling slower than the band limits, poll gaps, a trace shorter than
    the job; and numbers that cannot be what the user meant
    (:mod:`facility.config.plausibility`). Each names its key. ``run`` logs the same and lists
    them in events and report.html.
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

    return out + plausibility_warnings(s) + grid_impact_warnings(s)


def trace_summaries(s: "Scenario") -> list[str]:
    """One line per trace job: what its file holds (GPUs, polls, interval, sensor)."""
    from facility.workload.trace_checks import job_trace

    out = []
    for i, job in enumerate(s.jobs):
        if job.workload == "trace" and job.trace_file:
            try:
                out.append(f"jobs.{i}.trace_file: {job_trace(job, f'jobs.{i}').info.summary()}")
            except ScenarioError:
                continue
    return out


def check_storage(s: "Scenario") -> list[str]:
    """Ratings present or extendable with bounds; SoC bounds ordered."""
    out = []
    for name, st in s.storages().items():
        if st.extendable:
            if st.max_p_rated_mw is None:
                out.append(f"{name}.max_p_rated_mw [MW] is required when {name}.extendable = true")
            if st.max_e_rated_mwh is None:
                out.append(f"{name}.max_e_rated_mwh [MWh] is required when {name}.extendable = true")
            if st.max_p_rated_mw is not None and st.max_p_rated_mw < st.min_p_rated_mw:
                out.append(f"{name}.max_p_rated_mw = {st.max_p_rated_mw:g} MW is below {name}.min_p_rated_mw = {st.min_p_rated_mw:g} MW")
            if st.max_e_rated_mwh is not None and st.max_e_rated_mwh < st.min_e_rated_mwh:
                out.append(f"{name}.max_e_rated_mwh = {st.max_e_rated_mwh:g} MWh is below {name}.min_e_rated_mwh = {st.min_e_rated_mwh:g} MWh")
        else:
            if st.p_rated_mw is None:
                out.append(f"{name}.p_rated_mw [MW] is required when {name}.enabled = true and "
                           f"{name}.extendable = false")
            if st.e_rated_mwh is None:
                out.append(f"{name}.e_rated_mwh [MWh] is required when {name}.enabled = true and "
                           f"{name}.extendable = false")
        if st.min_soc_frac >= st.max_soc_frac:
            out.append(
                f"{name}.min_soc_frac = {st.min_soc_frac:g} must be below {name}.max_soc_frac = "
                f"{st.max_soc_frac:g} [frac]"
            )
        elif not st.min_soc_frac <= st.initial_soc_frac <= st.max_soc_frac:
            out.append(
                f"{name}.initial_soc_frac = {st.initial_soc_frac:g} [frac] must lie in "
                f"[min_soc_frac, max_soc_frac] = [{st.min_soc_frac:g}, {st.max_soc_frac:g}]"
            )
        out += check_duration(name, st)
        reserve = getattr(st, "reserve_frac", 0.0)
        if reserve and st.min_soc_frac + reserve >= st.max_soc_frac:
            out.append(
                f"{name}.reserve_frac = {reserve:g} leaves no usable energy above min_soc_frac "
                f"({st.min_soc_frac:g}) below max_soc_frac ({st.max_soc_frac:g}) [frac]"
            )
    return out


def duration_violation(name: str, st, p_mw: float, e_mwh: float, rtol: float = 1e-6) -> str | None:
    """Why ratings (p_mw [MW], e_mwh [MWh]) break the section's duration bounds
    ``min_duration_h <= e / p <= max_duration_h`` [h], or None. No power rating: no duration."""
    lo, hi = st.min_duration_h, st.max_duration_h
    if p_mw <= 0 or (lo is None and hi is None):
        return None
    d = e_mwh / p_mw
    if (lo is not None and d < lo * (1 - rtol)) or (hi is not None and d > hi * (1 + rtol)):
        tech = f" (technology {st.technology})" if getattr(st, "technology", None) else ""
        return (f"{name}: e_rated_mwh / p_rated_mw = {e_mwh:g} MWh / {p_mw:g} MW = {d:.4g} h lies "
                f"outside [min_duration_h, max_duration_h] = [{lo if lo is not None else 0:g}, "
                f"{hi if hi is not None else float('inf'):g}] h{tech}")
    return None


def check_duration(name: str, st) -> list[str]:
    """Duration bounds ordered; fixed ratings within them; extendable bounds that admit a
    rating within them; candidate technologies only on an extendable storage."""
    out = []
    lo, hi = st.min_duration_h, st.max_duration_h
    if getattr(st, "technologies", None) or st.unit_p_rated_mw is not None or st.unit_e_rated_mwh is not None:
        return _check_hybrid(name, st)
    if lo is not None and hi is not None and lo > hi:
        out.append(f"{name}.min_duration_h = {lo:g} h is above {name}.max_duration_h = {hi:g} h")
        return out
    if not st.extendable:
        if st.p_rated_mw is not None and st.e_rated_mwh is not None:
            why = duration_violation(name, st, st.p_rated_mw, st.e_rated_mwh)
            if why:
                out.append(why)
        return out
    p_hi, e_hi = st.max_p_rated_mw, st.max_e_rated_mwh
    if hi is not None and p_hi is not None and st.min_e_rated_mwh > hi * p_hi * (1 + 1e-9):
        out.append(f"{name}.min_e_rated_mwh = {st.min_e_rated_mwh:g} MWh needs a power rating above "
                   f"max_p_rated_mw = {p_hi:g} MW at max_duration_h = {hi:g} h")
    if lo is not None and e_hi is not None and st.min_p_rated_mw * lo > e_hi * (1 + 1e-9):
        out.append(f"{name}.min_p_rated_mw = {st.min_p_rated_mw:g} MW at min_duration_h = {lo:g} h "
                   f"needs more energy than max_e_rated_mwh = {e_hi:g} MWh")
    return out


def _check_hybrid(name: str, st) -> list[str]:
    """A hybrid section: candidates for the optimizer (extendable), or fixed units with a power
    and an energy rating for every technology, each unit within its duration bounds."""
    from facility.config.technology import unit_configs, unit_technology_names

    techs = unit_technology_names(st) if st.technologies else []
    given = {"unit_p_rated_mw": st.unit_p_rated_mw, "unit_e_rated_mwh": st.unit_e_rated_mwh}
    if not techs:
        return [f"{name}.unit_p_rated_mw / unit_e_rated_mwh: unit ratings need {name}.technologies "
                f"(the technologies of the units)"]
    if st.extendable:
        set_ = [k for k, v in given.items() if v is not None]
        return ([f"{name}.{', '.join(set_)}: fixed unit ratings and extendable = true: the optimizer sizes "
                 f"the units; set extendable = false to run the given ratings"] if set_ else [])
    out = []
    for k, v in given.items():
        unit = "MW" if k.startswith("unit_p") else "MWh"
        if v is None or sorted(v) != sorted(techs):
            out.append(f"{name}.{k} = {v!r}: a fixed hybrid (extendable = false, technologies = "
                       f"{st.technologies!r}) needs one rating [{unit}] per technology, keyed "
                       f"{', '.join(techs)}; or set {name}.extendable = true for the optimizer to "
                       f"choose among them")
    if out:
        return out
    tot_p, tot_e = sum(st.unit_p_rated_mw.values()), sum(st.unit_e_rated_mwh.values())
    for k, tot, unit in (("p_rated_mw", tot_p, "MW"), ("e_rated_mwh", tot_e, "MWh")):
        v = getattr(st, k)
        if v is not None and abs(v - tot) > 1e-6 * max(1.0, tot):
            out.append(f"{name}.{k} = {v:g} {unit} is not the sum of its units' ratings ({tot:g} {unit}); "
                       f"leave it out or set it to the sum")
    for u, uc in unit_configs(name, st).items():
        why = duration_violation(u, uc, uc.p_rated_mw, uc.e_rated_mwh)
        if why:
            out.append(why)
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


def check_grid(s: "Scenario") -> list[str]:
    """The substation must be able to carry the peak site load (within 2x of its rating)."""
    g = s.grid
    out = []
    if g.mv_kv >= g.vn_kv:
        out.append(f"grid.mv_kv = {g.mv_kv:g} kV must be below grid.vn_kv = {g.vn_kv:g} kV")
    if g.lv_kv >= g.mv_kv:
        out.append(f"grid.lv_kv = {g.lv_kv:g} kV must be below grid.mv_kv = {g.mv_kv:g} kV")
    from facility.electrical.library import check_grid_types, load_trafo_type  # no pandapower import

    types = check_grid_types(g)
    out.extend(types)
    if not types:   # a transformer needs a reactance: vkr < vk (pandapower divides by it)
        for pre, type_key in (("trafo", "trafo_type"), ("lv_trafo", "lv_trafo_type")):
            name = getattr(g, type_key)
            if name is not None:
                tt = load_trafo_type(name, key=f"grid.{type_key}")
                vk, vkr, where = tt.vk_percent, tt.vkr_percent, f" (from grid.{type_key} = {name!r})"
            else:
                vk, vkr, where = getattr(g, f"{pre}_vk_percent"), getattr(g, f"{pre}_vkr_percent"), ""
            if vkr >= vk:
                out.append(f"grid.{pre}_vkr_percent = {vkr:g} % must be below grid.{pre}_vk_percent = "
                           f"{vk:g} %{where}: the short-circuit voltage's real part cannot exceed it "
                           f"(the transformer would have no reactance)")
    sn = g.trafo_sn_mva
    if g.trafo_type is not None and not types:
        sn = load_trafo_type(g.trafo_type).sn_mva
    if g.enabled:
        from facility.config.preconditions import check_feeders as feeder_checks
        from facility.config.preconditions import feeder_peaks_mw

        try:
            peaks = feeder_peaks_mw(s)
            peak = sum(peaks) if peaks else estimate_peak_site_mw(s)
        except ScenarioError:
            return out
        if g.sc_mva < peak:
            out.append(
                f"grid.sc_mva = {g.sc_mva:g} MVA is below the peak site load of up to {peak:.1f} MW "
                f"(short-circuit ratio {g.sc_mva / peak:.2g} < 1): the utility cannot deliver it "
                f"(voltage collapse); allowed: sc_mva ≥ {peak:.1f} MVA (real connections: ≥ 3x)")
        if sn is not None and peak > 2.0 * sn * g.n_trafos:
            src = f" (from grid.trafo_type = {g.trafo_type!r})" if g.trafo_type is not None else ""
            out.append(
                f"grid.trafo_sn_mva = {sn:g} MVA{src} x grid.n_trafos = {g.n_trafos} transformer(s) "
                f"cannot carry the peak site load of up to {peak:.1f} MW (jobs.*.n_gpus at full "
                f"power, site.non_gpu_frac, site.pue, site.base_load_mw); allowed: trafo_sn_mva ≥ "
                f"{peak / 2.0 / g.n_trafos:.1f} MVA (2x overload at most)"
            )
        out.extend(feeder_checks(s))
    return out


def check_grid_events(s: "Scenario") -> list[str]:
    """Each sag starts inside the horizon and is resolved by dt_s; a voltage trace is readable;
    the UPS's retransfer voltage is not below its transfer voltage."""
    out = []
    dt, horizon = s.time.dt_s, s.time.horizon_s
    for i, ev in enumerate(s.grid_events):
        key = f"grid_events.{i}"
        if ev.start_s >= horizon:
            out.append(f"{key}.start_s = {ev.start_s:g} s is not inside the horizon; allowed: < time.horizon_s = "
                       f"{horizon:g} s")
        if ev.duration_s is not None and ev.duration_s < dt - 1e-12:
            out.append(f"{key}.duration_s = {ev.duration_s:g} s is shorter than time.dt_s = {dt:g} s; allowed: "
                       f">= {dt:g} s")
        if ev.trace_file is not None:
            from facility.electrical.grid_events import read_voltage_trace  # numpy/pandas only

            try:
                read_voltage_trace(ev.trace_file, f"{key}.trace_file")
            except ScenarioError as exc:
                out.append(str(exc))
    if s.grid_events:
        from facility.electrical.grid_events import ups_sag_settings

        try:
            st = ups_sag_settings(s)
        except ScenarioError:
            return out  # check_grid names the UPS type
        if st.retransfer_vm_pu < st.transfer_vm_pu:
            out.append(f"ups.retransfer_vm_pu = {st.retransfer_vm_pu:g} pu must not be below ups.transfer_vm_pu = "
                       f"{st.transfer_vm_pu:g} pu (with the grid.ups_type's values where unset)")
    return out


def check_grid_impact(s: "Scenario") -> list[str]:
    """``[grid_impact]``: the shaft and mode set are bundled models (validate names them)."""
    gi = s.grid_impact
    if not gi.enabled:
        return []
    from facility.grid_impact.library import list_mode_sets, list_shafts

    out = []
    if gi.shaft_model not in list_shafts():
        out.append(f"grid_impact.shaft_model = {gi.shaft_model!r} is not a bundled shaft model "
                   f"(models/grid_impact/): {', '.join(list_shafts())}")
    if gi.mode_set not in list_mode_sets():
        out.append(f"grid_impact.mode_set = {gi.mode_set!r} is not a bundled mode set "
                   f"(models/grid_impact/): {', '.join(list_mode_sets())}")
    return out


def grid_impact_warnings(s: "Scenario") -> list[str]:
    """Torsional modes above the Nyquist frequency of ``time.dt_s`` (their response is not
    resolved: the metrics see only the modes below it)."""
    gi = s.grid_impact
    if not gi.enabled or check_grid_impact(s):
        return []
    from facility.grid_impact.library import load_shaft

    nyq = 0.5 / s.time.dt_s
    above = [f for f in load_shaft(gi.shaft_model).torsional_modes_hz() if f >= nyq]
    if not above:
        return []
    return [f"grid_impact: torsional mode(s) at {', '.join(f'{f:.2f}' for f in above)} Hz lie above the "
            f"Nyquist frequency {nyq:g} Hz of time.dt_s = {s.time.dt_s:g} s: not resolved, their torque "
            f"is missing from the grid_impact metrics (use dt_s <= {0.5 / (1.05 * max(above)):.3g} s)"]


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
