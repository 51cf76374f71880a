"""GPU-side controls of a scenario applied to a load profile: power cap → firefly → smoothing.

Order of the chain (each stage sees what the previous one left):

1. **Power cap** (hardware power limit): clips the workload's demand; capped compute phases cost
   time. The capped demand is "what the workload demands" from here on.
2. **Firefly** (software, on top of the primary job): fills low phases up to the target.
3. **Power smoothing** (GPU power controller, closest to the hardware): floor, ramps, stop
   delay on the combined load.

Burned power ``p_burn_w = max(p_gpu_w - p_demand_w, 0)`` holds everything above the (capped)
demand: floor, held ramp-downs, hysteresis, stop delay and firefly fill-in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numba as nb
import numpy as np

from facility.config.checks import check_gpu_controls
from facility.errors import ScenarioError
from facility.gpu.firefly import run_firefly
from facility.gpu.planned import add_planned_burn
from facility.gpu.power_cap import apply_power_cap
from facility.gpu.smoothing import apply_power_smoothing, steps_for

__all__ = ["GpuControlResult", "apply_gpu_controls"]

log = logging.getLogger(__name__)

_H_PER_YEAR = 8760.0
_J_PER_KWH = 3.6e6


@dataclass
class GpuControlResult:
    """GPU power after the GPU-side controls, and what they cost.

    Attributes
    ----------
    p_gpu_w : numpy.ndarray, shape (G, T)
        Actual power of one GPU of each rack group. [W per GPU]
    p_burn_w : numpy.ndarray, shape (G, T)
        Power burned above what the workload demands (floor, held ramps, stop delay, firefly
        fill-in). Read-only zeros when nothing burns. [W per GPU]
    engaged : numpy.ndarray of bool, shape (G, T)
        Steps where smoothing or firefly changed the power (after the cap).
    slowdown_frac : dict
        Per job name: extra running time / running time (ramp-up deficit, firefly contention,
        power cap; the slowest rack group gates a synchronous job). Key ``"overall"``: the
        GPU-weighted mean over jobs. [frac]
    slowdown_detail : dict
        Per job: ``ramp_frac``, ``firefly_frac``, ``cap_frac`` (the three causes) and
        ``extra_s``, ``running_s``. [frac, s]
    wear : dict
        Smoothing-circuitry usage, the proxy of NVML's lifetime counter: ``engaged_h``,
        ``engaged_frac``, ``engaged_h_per_year``, ``burn_kwh_per_gpu`` (smoothing),
        ``firefly_kwh_per_gpu``; GPU-weighted over smoothing-capable GPUs; ``per_job`` the same
        per job. [h, frac, h/year, kWh per GPU]
    events : list of dict
        ``t_s``, ``job``, ``kind``, ``detail`` of notable transitions.
    unsmoothed_jobs : list of str
        Jobs whose GPU model has no hardware power smoothing (left unsmoothed).
    """

    p_gpu_w: np.ndarray
    p_burn_w: np.ndarray
    engaged: np.ndarray
    slowdown_frac: dict
    slowdown_detail: dict = field(default_factory=dict)
    wear: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    unsmoothed_jobs: list = field(default_factory=list)

    @property
    def overall_slowdown_frac(self) -> float:
        """GPU-weighted slowdown over all jobs. [frac]"""
        return float(self.slowdown_frac.get("overall", 0.0))


def _validate(scenario) -> None:
    problems = check_gpu_controls(scenario)
    if problems:
        raise ScenarioError("\n".join(problems))


def apply_gpu_controls(profile, scenario, *, smoothing: bool = True, firefly: bool = True,
                       power_cap: bool = True, plan=None) -> GpuControlResult:
    """Apply the scenario's GPU-side controls to a load profile.

    Parameters
    ----------
    profile : facility.workload.profile.LoadProfile
        Demanded GPU power per rack group (``p_gpu_w``, ``running``, ``compute``, ``groups``).
    scenario : facility.config.schema.Scenario
        Resolved; supplies ``gpu_smoothing``, ``firefly``, ``power_cap`` (each applied only
        when its ``enabled`` is true), the job names and the GPU models (``library``) that the
        groups' ``gpu`` column names.
    smoothing, firefly, power_cap : bool
        Switch a stage off regardless of the scenario (e.g. for the co-design's fallback).
    plan : GpuPlan, optional
        Decisions of the mix optimizer (:class:`facility.gpu.planned.GpuPlan`): a floor and a
        cap per job (overriding ``floor_frac`` / ``cap_frac`` for those jobs; their stage must
        be enabled) and a planned burn per job, added last, within each group's headroom.

    Returns
    -------
    GpuControlResult

    Raises
    ------
    ScenarioError
        Settings outside a GPU's range (floor above its maximum, floor above the cap, ...).
    """
    _validate(scenario)
    gs, ff, pc = scenario.gpu_smoothing, scenario.firefly, scenario.power_cap
    do_smooth, do_ff, do_cap = smoothing and gs.enabled, firefly and ff.enabled, power_cap and pc.enabled
    groups = profile.groups
    dt = float(profile.dt_s)
    p0 = profile.p_gpu_w
    n_g, n_t = p0.shape
    tdp = groups["tdp_w"].to_numpy(dtype=float)
    n_gpus = groups["n_gpus"].to_numpy(dtype=float)
    jobs = groups["job"].astype(str).to_numpy()
    job_names = list(dict.fromkeys(jobs))
    running = np.asarray(profile.running, dtype=bool)
    compute = np.asarray(profile.compute, dtype=bool)
    events: list[dict] = []

    lib = scenario.library
    supports = np.array([lib.gpu(str(m)).supports_power_smoothing for m in groups["gpu"]],
                        dtype=bool) if n_g else np.zeros(0, dtype=bool)
    unsmoothed = sorted({str(j) for j, s in zip(jobs, supports) if not s}) if do_smooth else []
    for job in unsmoothed:
        gpu = groups.loc[groups["job"] == job, "gpu"].iloc[0]
        log.info("GPU smoothing not applied to job %r: GPU model %r has no hardware power "
                 "smoothing", job, gpu)
        events.append(dict(t_s=0.0, job=job, kind="smoothing_not_supported",
                           detail=f"GPU model {gpu!r} has no hardware power smoothing"))

    cap_frac_g = np.full(n_g, pc.cap_frac)
    floor_frac_g = np.full(n_g, gs.floor_frac)
    if plan is not None:
        cap_frac_g = plan.per_group(jobs, plan.cap_frac, cap_frac_g)
        floor_frac_g = plan.per_group(jobs, plan.floor_frac, floor_frac_g)
    # 1. power cap
    cap_extra = np.zeros(n_g)
    p_dem = p0
    if do_cap:
        p_dem, cap_extra = apply_power_cap(p0, compute, dt, cap_frac_g * tdp, pc.perf_exponent)
    # 2. firefly
    p = p_dem
    ff_info = dict(fill_j=np.zeros(n_g), active_s=np.zeros(n_g), n_starts=np.zeros(n_g, int))
    if do_ff:
        target = min(ff.target_frac, pc.cap_frac) if do_cap else ff.target_frac
        trigger = min(ff.trigger_frac, target)
        p, ff_info = run_firefly(p_dem, running, dt, tdp, trigger, target, ff.latency_s,
                                 ff.backoff_every_s, ff.backoff_s)
    # 3. smoothing
    sm_info = dict(burn_j=np.zeros(n_g), deficit_s=np.zeros(n_g), engaged_s=np.zeros(n_g))
    if do_smooth and supports.any():
        sec = (gs.secondary_floor_frac * tdp) if gs.secondary_floor_frac is not None else None
        p, sm_info = apply_power_smoothing(
            p, running, dt, floor_frac_g * tdp, gs.ramp_up_w_per_s, gs.ramp_down_w_per_s,
            gs.stop_delay_s, gs.ramp_down_hysteresis_s, compute=compute, enabled=supports,
            secondary_floor_w=sec, activation_window_s=gs.activation_window_s,
            activation_offset_w=gs.activation_offset_frac * tdp if sec is not None else 0.0)

    # 4. planned burn (mix optimizer): a dummy load on top, within the headroom under the ceiling
    if plan is not None and plan.burn_mw:
        ceiling = (cap_frac_g if do_cap else np.ones(n_g)) * tdp
        p = add_planned_burn(p, running, n_gpus, ceiling, jobs, plan.burn_mw)
    if p is p0:
        p_burn = np.broadcast_to(np.float64(0.0), p0.shape)
        engaged = np.broadcast_to(np.False_, p0.shape)
    else:
        p_burn = np.empty_like(p)
        engaged = np.empty(p.shape, dtype=np.bool_)
        _burn_engaged(p, np.ascontiguousarray(p_dem), p_burn, engaged)

    # slowdown: the slowest group gates a synchronous job
    running_s = running.sum(axis=1) * dt
    ramp_s = sm_info["deficit_s"]
    # the secondary load only runs next to the primary job: its active time is the overlap
    ff_s = ff.contention_frac * np.asarray(ff_info["active_s"], float) if do_ff else np.zeros(n_g)
    slowdown, detail, wear_jobs = {}, {}, {}
    w_job = {}
    for job in job_names:
        m = jobs == job
        run = float(running_s[m].max()) if m.any() else 0.0
        extra_g = ramp_s[m] + ff_s[m] + cap_extra[m]
        g_worst = int(np.argmax(extra_g)) if m.any() else 0
        extra = float(extra_g[g_worst]) if m.any() else 0.0
        frac = extra / run if run > 0 else 0.0
        slowdown[job] = frac
        detail[job] = dict(
            extra_s=extra, running_s=run,
            ramp_frac=float(ramp_s[m].max()) / run if run > 0 else 0.0,
            firefly_frac=float(ff_s[m].max()) / run if run > 0 else 0.0,
            cap_frac=float(cap_extra[m].max()) / run if run > 0 else 0.0)
        w_job[job] = float(n_gpus[m].sum())
        wear_jobs[job] = _wear(sm_info, ff_info, n_gpus, m & supports, m, n_t * dt)
    total_w = sum(w_job.values())
    slowdown["overall"] = (sum(slowdown[j] * w_job[j] for j in job_names) / total_w
                           if total_w > 0 else 0.0)
    wear = _wear(sm_info, ff_info, n_gpus, supports if do_smooth else np.zeros(n_g, bool),
                 np.ones(n_g, bool), n_t * dt)
    wear["per_job"] = wear_jobs

    events += _events(profile, p, p_dem, running, jobs, job_names, supports, do_smooth, do_ff,
                      do_cap, gs, ff_info, p0, cap_frac_g * tdp if do_cap else None)
    return GpuControlResult(p_gpu_w=p, p_burn_w=p_burn, engaged=engaged, slowdown_frac=slowdown,
                            slowdown_detail=detail, wear=wear, events=events,
                            unsmoothed_jobs=unsmoothed)


@nb.njit(cache=True, nogil=True)
def _burn_engaged(p, p_dem, burn, engaged):
    """burn = max(p - p_dem, 0), engaged = |p - p_dem| > 1e-9, in one pass."""
    n_g, n_t = p.shape
    for g in range(n_g):
        for k in range(n_t):
            x = p[g, k] - p_dem[g, k]
            burn[g, k] = x if x > 0.0 else 0.0
            engaged[g, k] = x > 1e-9 or x < -1e-9


def _wear(sm_info, ff_info, n_gpus, m_smooth, m_all, horizon_s) -> dict:
    w = n_gpus[m_smooth]
    eng_h = float(np.average(sm_info["engaged_s"][m_smooth], weights=w)) / 3600.0 if w.sum() > 0 else 0.0
    burn = float(np.average(sm_info["burn_j"][m_smooth], weights=w)) / _J_PER_KWH if w.sum() > 0 else 0.0
    wa = n_gpus[m_all]
    ff_kwh = float(np.average(ff_info["fill_j"][m_all], weights=wa)) / _J_PER_KWH if wa.sum() > 0 else 0.0
    frac = eng_h * 3600.0 / horizon_s if horizon_s > 0 else 0.0
    return dict(engaged_h=eng_h, engaged_frac=frac, engaged_h_per_year=frac * _H_PER_YEAR,
                burn_kwh_per_gpu=burn, firefly_kwh_per_gpu=ff_kwh)


def _events(profile, p, p_dem, running, jobs, job_names, supports, do_smooth, do_ff, do_cap, gs,
            ff_info, p0, cap_w, max_per_job: int = 200) -> list[dict]:
    """Transitions of each job's first rack group (all its groups share the schedule)."""
    t = profile.t_s
    dt = float(profile.dt_s)
    out: list[dict] = []
    for job in job_names:
        idx = np.flatnonzero(jobs == job)
        if idx.size == 0:
            continue
        g = int(idx[0])
        r = running[g]
        n = 0
        if do_smooth and supports[g]:
            edges = np.flatnonzero(np.diff(r.astype(np.int8))) + 1
            hold_n = steps_for(gs.stop_delay_s, dt) + steps_for(gs.ramp_down_hysteresis_s, dt)
            for k in edges:
                if n >= max_per_job:
                    break
                if r[k]:
                    out.append(dict(t_s=float(t[k]), job=job, kind="floor_engaged",
                                    detail=f"workload runs: floor {gs.floor_frac:g} x TDP"))
                    n += 1
                    continue
                out.append(dict(t_s=float(t[k]), job=job, kind="stop_delay_start",
                                detail=f"workload stopped: floor held {gs.stop_delay_s:g} s"))
                n += 1
                k_rd = k + hold_n
                if k_rd < r.size and not r[k:k_rd + 1].any():
                    out.append(dict(t_s=float(t[k_rd]), job=job, kind="ramp_down_start",
                                    detail="floor released, ramping down"))
                    seg_end = k_rd + np.argmax(r[k_rd:]) if r[k_rd:].any() else r.size
                    done = np.flatnonzero(np.abs(p[g, k_rd:seg_end] - p_dem[g, k_rd:seg_end]) <= 1e-9)
                    if done.size:
                        out.append(dict(t_s=float(t[k_rd + done[0]]), job=job,
                                        kind="ramp_down_end", detail="power back at the demand"))
                    n += 2
        if do_ff and ff_info["active_s"][g] > 0:
            k = int(np.argmax(p[g] > p_dem[g] + 1e-9)) if np.any(p[g] > p_dem[g] + 1e-9) else None
            if k is not None:
                out.append(dict(t_s=float(t[k]), job=job, kind="firefly_first_fill",
                                detail=f"{int(ff_info['n_starts'][g])} launches in the horizon"))
        if do_cap and cap_w is not None:
            over = p0[g] > cap_w[g]
            if over.any():
                k = int(np.argmax(over))
                out.append(dict(t_s=float(t[k]), job=job, kind="power_cap_engaged",
                                detail=f"demand clipped at {cap_w[g]:.0f} W"))
    out.sort(key=lambda e: e["t_s"])
    return out
