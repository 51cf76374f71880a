"""The site's expected power level from what it declares: job start/stop ramps and checkpoints.

A site's scheduler knows when its jobs start and stop, when they checkpoint and what their
iterations look like nominally; it does not know each iteration's jitter. This module turns
that knowledge into the expected site level the MPC moves its forecast with
(:func:`facility.control.forecast.level_forecast`):

1. the scenario's jobs as nominal waves: ``stochastic`` jobs become exact ``square`` waves
   with the same period, duty and levels (no jitter, noise, stragglers or phase offsets);
   ``trace`` jobs are left out (a replayed trace has no declared schedule; the measured level
   carries them);
2. the scenario's always-on GPU controls applied to them (floor, programmed ramps, stop
   delay, firefly, cap), as for the real load;
3. per rack group the mean over one iteration period (so the level has no iteration ripple),
   aggregated to the site with the same non-GPU share, PUE and cooling lag as the real load;
   the nominal waveform itself is kept too (the MPC plans on it where the measured load
   follows it: deterministic jobs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import uniform_filter1d

from facility.config.library import GpuModel
from facility.gpu import apply_gpu_controls
from facility.workload import default_n_feeders, generate_load, site_power, time_grid
from facility.workload.archetypes import resolve_job_params

__all__ = ["SiteSchedule", "site_schedule"]


@dataclass(frozen=True)
class SiteSchedule:
    """What the site expects of its power from the declared schedule, on the scenario grid.

    Attributes
    ----------
    p_level_mw : numpy.ndarray (T,)
        Expected level: per rack group the mean over one iteration period. [MW]
    p_nominal_mw : numpy.ndarray (T,)
        The nominal waveform itself (exact square iterations, GPU controls applied). [MW]
    """

    p_level_mw: np.ndarray
    p_nominal_mw: np.ndarray

_NOMINAL = {"workload": "square", "jitter_frac": 0.0, "compute_frac_jitter": 0.0,
            "noise_high_frac": 0.0, "noise_low_frac": 0.0, "drop_jitter_frac": 0.0,
            "phase_offset_s": 0.0, "straggler_frac": 0.0,
            "failures": None}      # a crash is not declared: the site cannot plan for it


def site_schedule(scenario, *, gpu_controls: bool = True) -> SiteSchedule | None:
    """Expected site power (level and nominal waveform) of the declared schedule.

    Parameters
    ----------
    scenario : facility.config.schema.Scenario
        The resolved scenario as the site runs it (pass the storage-first variant under the co-design:
        the level the site draws while GPU controls are not engaged).
    gpu_controls : bool
        Apply the scenario's GPU-side controls to the nominal waves.

    Returns
    -------
    SiteSchedule or None
        None when no job has a declared schedule (only trace jobs).
    """
    dt = float(scenario.time.dt_s)
    jobs = [j for j in scenario.jobs if j.workload != "trace"]
    if not jobs:
        return None
    # one longest period of margin on both sides, so the period means have whole periods at
    # the ends of the horizon (the job is already running at t = 0 if it started before)
    pad_n = int(np.ceil(max(_period_s(j, scenario.library.gpu(j.gpu)) for j in jobs) / dt))
    pad = pad_n * dt
    jobs = [j.model_copy(update=dict(_NOMINAL, start_s=j.start_s + pad,
                                     stop_s=None if j.stop_s is None else j.stop_s + pad))
            for j in jobs]
    time_cfg = scenario.time.model_copy(update={"horizon_s": scenario.time.horizon_s + 2 * pad})
    nominal = scenario.model_copy(update={"jobs": jobs, "time": time_cfg})
    profile = generate_load(nominal)
    p = profile.p_gpu_w
    if gpu_controls and (nominal.gpu_smoothing.enabled or nominal.firefly.enabled
                         or nominal.power_cap.enabled):
        p = apply_gpu_controls(profile, nominal).p_gpu_w
    level = np.empty_like(p)
    metas = profile.meta["jobs"]
    names = profile.groups["job"].to_list()
    for g in range(p.shape[0]):
        n = max(1, int(round(metas[names[g]]["params"]["period_s"] / dt)))
        level[g] = uniform_filter1d(p[g], size=n, mode="nearest")
    nf = default_n_feeders(nominal)
    n_t = time_grid(scenario.time.horizon_s, dt).size
    cut = slice(pad_n, pad_n + n_t)
    return SiteSchedule(
        p_level_mw=np.ascontiguousarray(site_power(profile, level, nominal.site, nf).p_site_mw[cut]),
        p_nominal_mw=np.ascontiguousarray(site_power(profile, p, nominal.site, nf).p_site_mw[cut]))


def _period_s(job, gpu: GpuModel) -> float:
    """Iteration period of a job (its GPU model ``gpu``) as the generator resolves it. [s]"""
    return float(resolve_job_params(job, gpu).period_s)
