"""What a measured trace can and cannot say about a scenario's limits.

:func:`inspect_job_trace` reads a job's trace exactly as the replay does (same
:func:`~facility.workload.trace.load_trace`, same messages) and returns its
:class:`~facility.workload.trace.TraceInfo` with the warnings that apply to this scenario:

* **averaged sensor** (``average_1s``): a 1-s moving average has the response
  ``|sin(pi f T) / (pi f T)|`` with T = 1 s: 64 % at 0.5 Hz, 0 at 1, 2, 3 Hz, at most
  22 % beyond 1 Hz. Content above ~0.5 Hz cannot be seen, so the replay under-states every
  limit that responds to it: ramp rates over ``ramp_window_s``, the window swing, the dynamic
  range, and band limits reaching above 0.5 Hz. Only ``max_ramp_mw_per_min`` and bands below
  0.5 Hz are judged fairly. Nothing is deconvolved: what the average removed is gone.
* **sampling**: polls every ``I`` seconds carry nothing above ``1 / (2 I)``; band limits above
  it cannot be judged (linear interpolation to ``dt_s`` adds no content).
* **gaps**: a poll gap over 5 x the median (a stalled logger) is bridged by a straight line.
* **coverage**: a trace shorter than the job's running time inside the horizon is looped
  (``trace_loop``) or leaves the GPUs idle after its end.
* **incomplete final poll** dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.errors import ScenarioError
from facility.workload.trace import Trace, load_trace

if TYPE_CHECKING:
    from facility.config.library import GpuModel
    from facility.config.schema import JobConfig, Scenario

__all__ = ["AVERAGE_VISIBLE_MAX_HZ", "inspect_job_trace", "job_trace", "limits_above_hz", "trace_warnings",
           "undecided_limits"]

#: Highest frequency a 1-s-averaged trace still shows (response 64 %). [Hz]
AVERAGE_VISIBLE_MAX_HZ = 0.5
_GAP_WARN_RATIO = 5.0


def limits_above_hz(spec, f_hz: float) -> list[str]:
    """Names of the spec limits that are set and respond to content above ``f_hz``. [Hz]"""
    out = []
    if spec.max_ramp_up_mw_per_s is not None:
        out.append(f"max_ramp_up_mw_per_s (over {spec.ramp_window_s:g} s)")
    if spec.max_ramp_down_mw_per_s is not None:
        out.append(f"max_ramp_down_mw_per_s (over {spec.ramp_window_s:g} s)")
    if spec.max_window_swing_mw is not None:
        out.append(f"max_window_swing_mw (over {spec.window_s:g} s)")
    if spec.max_dynamic_range_mw is not None:
        out.append("max_dynamic_range_mw")
    if spec.band_max_hz > f_hz:
        for k in ("max_band_energy_frac", "max_band_peak_mw"):
            if getattr(spec, k) is not None:
                out.append(f"{k} ({spec.band_min_hz:g}-{spec.band_max_hz:g} Hz)")
    out += [f"band_{b.name} ({b.min_hz:g}-{b.max_hz:g} Hz)" for b in spec.bands if b.max_hz > f_hz]
    return out


def _limit_keys_above(spec, f_hz: float, *, bands_only: bool = False) -> list[str]:
    """Compliance row names (``facility.metrics.compliance``) of the limits set that respond to
    content above ``f_hz`` (the same limits as :func:`limits_above_hz`). [Hz]"""
    out = []
    if not bands_only:
        out += [k for k in ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s", "max_window_swing_mw",
                            "max_dynamic_range_mw") if getattr(spec, k) is not None]
    if spec.band_max_hz > f_hz:
        out += [k for k in ("max_band_energy_frac", "max_band_peak_mw") if getattr(spec, k) is not None]
    out += [f"band_{b.name}" for b in spec.bands if b.max_hz > f_hz]
    return out


def undecided_limits(trace: Trace, spec) -> dict[str, str]:
    """The spec limits this trace cannot decide -> why (a 1-s-averaged sensor hides content
    above ~0.5 Hz; polls every I seconds hide content above 1 / (2 I)). These are not rows of
    ``compliance``: ``metrics.json`` has ``undecided.<limit> = true`` and every verdict says
    "cannot judge <limit>" (shared design section 5)."""
    info, out = trace.info, {}
    nyq = 0.5 / info.median_interval_s
    for k in _limit_keys_above(spec, nyq, bands_only=True):
        out[k] = f"the trace polls every {1e3 * info.median_interval_s:.4g} ms (nothing above {nyq:.3g} Hz)"
    if info.sensor == "average_1s":
        for k in _limit_keys_above(spec, AVERAGE_VISIBLE_MAX_HZ):
            out[k] = "the trace is a 1-s average (nothing above ~0.5 Hz)"
    return out


def _band_limits_above(spec, f_hz: float) -> tuple[list[str], float]:
    names, top = [], 0.0
    if spec.band_max_hz > f_hz and (spec.max_band_energy_frac is not None or spec.max_band_peak_mw is not None):
        names.append(f"{spec.band_min_hz:g}-{spec.band_max_hz:g} Hz")
        top = spec.band_max_hz
    for b in spec.bands:
        if b.max_hz > f_hz:
            names.append(f"band_{b.name} {b.min_hz:g}-{b.max_hz:g} Hz")
            top = max(top, b.max_hz)
    return names, top


def _running_s(job: "JobConfig", horizon_s: float) -> float:
    end = horizon_s if job.stop_s is None else min(horizon_s, job.stop_s + job.ramp_s)
    return max(0.0, end - max(0.0, job.start_s))


def trace_warnings(trace: Trace, job: "JobConfig", key: str, scenario: "Scenario") -> list[str]:
    """The warnings of one job's trace under this scenario (see the module docstring)."""
    info, spec, where = trace.info, scenario.spec, f"{key}.trace_file"
    out = []
    if info.sensor == "average_1s":
        hit = limits_above_hz(spec, AVERAGE_VISIBLE_MAX_HZ)
        if hit:
            out.append(
                f"{where}: the trace is a 1-s average ({info.sensor_reason}): content above "
                f"~{AVERAGE_VISIBLE_MAX_HZ:g} Hz cannot be seen (a 1-s average keeps 64 % of a 0.5 Hz swing and "
                f"nothing at 1, 2, 3 Hz), so its replay under-states iteration swings and ramps; limits it "
                f"cannot judge: {', '.join(hit)}; record the instantaneous sensor (power.draw.instant, `facility record`) "
                "to judge them")
    nyq = 0.5 / info.median_interval_s
    bands, top = _band_limits_above(spec, nyq)
    if bands and not (info.sensor == "average_1s" and nyq > AVERAGE_VISIBLE_MAX_HZ):
        out.append(
            f"{where}: the trace polls every {1e3 * info.median_interval_s:.4g} ms, so content above "
            f"{nyq:.3g} Hz cannot be seen; the band limits reach {top:g} Hz ({', '.join(bands)}), "
            "which its replay cannot judge (interpolation to dt_s adds nothing)")
    if info.max_gap_s > _GAP_WARN_RATIO * info.median_interval_s:
        out.append(
            f"{where}: the longest gap between polls is {info.max_gap_s:.3g} s, at t = {info.max_gap_at_s:.4g} s "
            f"of the trace ({info.max_gap_s / info.median_interval_s:.0f} x the median interval; a stalled "
            "logger?); the replay bridges it with a straight line")
    run = _running_s(job, scenario.time.horizon_s)
    if run > info.duration_s * (1 + 1e-9):
        if job.trace_loop:
            out.append(f"{where}: the trace covers {info.duration_s:.4g} s of the {run:.4g} s the job runs in the "
                       f"horizon; it is looped {run / info.duration_s:.3g} times (the seam joins its last and "
                       "first poll)")
        else:
            out.append(f"{where}: the trace covers {info.duration_s:.4g} s of the {run:.4g} s the job runs in the "
                       "horizon (trace_loop = false): the GPUs sit idle after its end")
    if info.dropped_rows:
        out.append(f"{where}: {info.dropped_rows} row(s) of an incomplete first or last poll "
                   f"({info.n_gpus} GPUs per poll): dropped")
    if info.na_rows:
        out.append(f"{where}: {info.na_rows} [N/A] reading(s) dropped (trace_drop_na = true); each filled "
                   "from its own GPU's neighbouring polls")
    return out


def inspect_job_trace(job: "JobConfig", key: str, scenario: "Scenario") -> tuple[Trace, list[str]]:
    """Read a ``workload = 'trace'`` job's file as the replay does; its trace and warnings.

    Raises
    ------
    ScenarioError
        Everything :func:`~facility.workload.trace.load_trace` refuses, naming
        ``<key>.trace_file`` and the file.
    """
    tr = job_trace(job, key, scenario.library.gpu(job.gpu))
    return tr, trace_warnings(tr, job, key, scenario)


def job_trace(job: "JobConfig", key: str, gpu: "GpuModel") -> Trace:
    """The job's trace as the replay reads it (TDP, idle power and model from ``gpu``, the
    model its ``gpu`` names: ``scenario.library.gpu(job.gpu)``)."""
    if not job.trace_file:
        raise ScenarioError(f"{key}.trace_file is required when {key}.workload = 'trace'")
    return load_trace(job.trace_file, tdp_w=gpu.tdp_w, idle_w=gpu.idle_w, scale=job.trace_scale,
                      gpus_per_node=job.gpus_per_node, sensor=job.trace_sensor,
                      gpu_model=f"{gpu.name} {gpu.description}", key=key,
                      gpus_per_poll=job.trace_gpus_per_poll, drop_na=job.trace_drop_na)
