"""The load generator: a scenario's jobs -> per-rack-group GPU power (:class:`LoadProfile`).

For each job: resolve its parameters (:mod:`~facility.workload.archetypes`), split it into rack
groups (:mod:`~facility.workload.groups`), build the iteration waveform of every group
(:mod:`~facility.workload.iterations`, or a trace replay, :mod:`~facility.workload.trace`),
overlay checkpoints and blend with idle through the start/stop envelope
(:mod:`~facility.workload.timeline`)::

    x = checkpoint_frac * TDP            during checkpoints
        waveform [frac] * TDP            otherwise
    p_gpu_w = idle_w + envelope * (x - idle_w)

A job with ``[jobs.failures]`` drops to idle at each crash and ramps back at each restart
(:mod:`~facility.workload.failures`: its up-segments replace the start/stop envelope; the
iteration waveform keeps its phase across the gap). Every job draws from its own child of the
scenario's generator (``numpy`` ``spawn``), so adding a job never changes the draws of the
others.
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import numpy as np
import pandas as pd

from facility.config.library import GpuModel
from facility.workload.archetypes import JobParams, resolve_job_params
from facility.workload.failures import CrashSchedule, crash_schedule, segment_masks
from facility.workload.groups import assign_feeders, group_gpu_counts
from facility.workload.iterations import draw_iteration_plan, iteration_wave
from facility.workload.profile import LoadProfile
from facility.workload.timeline import checkpoint_mask, envelope_frac, running_mask, time_grid
from facility.workload.trace_grid import trace_on_grid
from facility.workload.trace_checks import inspect_job_trace, job_trace, undecided_limits

__all__ = ["generate_load", "job_waveform"]

log = logging.getLogger(__name__)
_LOGGED: set[str] = set()


def _trace_wave(job, gpu: GpuModel, p: JobParams, offset_s: np.ndarray, t_s: np.ndarray, dt_s: float,
                key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replay a trace for every group: waveform [frac], compute mask, 'trace still playing'."""
    tr = job_trace(job, key, gpu)
    p_native, native = trace_on_grid(tr.t_s, tr.p_frac, dt_s)
    duration = p_native.size * native        # each sample stands for one native step
    grid = np.arange(p_native.size + 1) * native
    vals = np.append(p_native, p_native[0] if job.trace_loop else p_native[-1])
    g = offset_s.size
    same = bool(np.all(offset_s == offset_s[0]))     # no offsets: replay once, copy per group
    off = offset_s[:1] if same else offset_s
    tau = t_s[None, :] - p.start_s - off[:, None]
    playing = tau < duration
    if job.trace_loop:
        tau = np.mod(tau, duration)
        playing = np.ones_like(playing)
    wave = np.interp(tau, grid, vals)
    wave[~playing] = p.idle_frac
    mid = 0.5 * (p_native.min() + p_native.max())
    compute = (wave >= mid) & playing
    if same and g > 1:
        wave, compute, playing = (np.repeat(a, g, axis=0) for a in (wave, compute, playing))
    return wave, compute, playing


def job_waveform(p: JobParams, gpu_counts: np.ndarray, t_s: np.ndarray, dt_s: float,
                 rng: np.random.Generator, job=None, key: str = "jobs.0",
                 crashes: CrashSchedule | None = None, gpu: GpuModel | None = None):
    """GPU power of one job's rack groups.

    Parameters
    ----------
    p : JobParams
        Resolved parameters.
    gpu_counts : numpy.ndarray, shape (G,)
        GPUs per group.
    t_s : numpy.ndarray, shape (T,)
        Step times. [s]
    dt_s : float
        Step. [s]
    rng : numpy.random.Generator
        The job's generator.
    job : JobConfig, optional
        Needed for ``trace`` (file, scale, loop).
    key : str
        Scenario key of the job, for messages.
    crashes : CrashSchedule, optional
        Crashes and restarts (:func:`facility.workload.failures.crash_schedule`): the job
        drops to idle at each crash and ramps back at each restart.
    gpu : GpuModel, optional
        The job's GPU model (``scenario.library.gpu(job.gpu)``); needed for ``trace`` (TDP,
        idle power and model the file is read with).

    Returns
    -------
    p_gpu_w : numpy.ndarray, shape (G, T)
        Demanded power per GPU. [W]
    running, compute : numpy.ndarray of bool, shape (G, T)
    meta : dict
    """
    n = t_s.size
    g = gpu_counts.size
    t_end = n * dt_s if p.stop_s is None else min(n * dt_s, p.stop_s + p.ramp_s)
    plan = draw_iteration_plan(p, g, t_end, rng)
    if p.workload == "trace":
        wave, compute, playing = _trace_wave(job, gpu, p, plan.offset_s, t_s, dt_s, key)
        wave *= p.tdp_w                               # -> W per GPU
    else:
        wave, compute = iteration_wave(plan, n, dt_s, scale=p.tdp_w)    # W per GPU
        playing = None
    if crashes is not None and crashes.n:
        env, run, ckpt = segment_masks(t_s, p.start_s, p.stop_s, p.ramp_s, crashes,
                                       p.checkpoint_every_s, p.checkpoint_s)
    else:
        env = envelope_frac(t_s, p.start_s, p.stop_s, p.ramp_s)
        run = running_mask(t_s, p.start_s, p.stop_s, p.ramp_s)
        ckpt = checkpoint_mask(t_s, p.start_s, p.checkpoint_every_s, p.checkpoint_s)
    if ckpt.any():
        wave[:, ckpt] = p.checkpoint_frac * p.tdp_w
        compute[:, ckpt] = False
    cols = np.flatnonzero(env < 1.0)
    if cols.size:
        wave[:, cols] = p.idle_w + env[cols] * (wave[:, cols] - p.idle_w)
    running = np.broadcast_to(run, (g, n)).copy()
    if playing is not None:
        running &= playing
        compute &= running
    elif not run.all():
        compute[:, ~run] = False
    in_h = (plan.bounds_s[:-1] + p.start_s >= 0) & (plan.bounds_s[1:] + p.start_s <= n * dt_s)
    periods = np.diff(plan.bounds_s)
    meta = {
        "params": asdict(p),
        "n_groups": int(g),
        "n_stragglers": int(plan.straggler.sum()),
        "straggler_groups": np.flatnonzero(plan.straggler).tolist(),
        "n_iterations": int(in_h.sum()) if p.workload != "trace" else 0,
        "mean_period_s": float(periods[in_h].mean()) if in_h.any() and p.workload != "trace" else float("nan"),
        "mean_compute_frac": float((plan.compute_s / periods)[in_h].mean()) if in_h.any() and p.workload != "trace" else float("nan"),
        "checkpoint_steps": int(ckpt.sum()),
        "running_s": float(run.sum() * dt_s),
    }
    return wave, running, compute, meta


def generate_load(scenario, *, rng: np.random.Generator | None = None) -> LoadProfile:
    """Per-rack-group GPU power of every job of a scenario.

    Parameters
    ----------
    scenario : facility.config.schema.Scenario
        Validated and resolved scenario (``time``, ``jobs``, ``grid.n_feeders`` and the GPU
        models of ``library`` are used).
    rng : numpy.random.Generator, optional
        Source of the random draws; default ``numpy.random.default_rng(scenario.seed)``.

    Returns
    -------
    LoadProfile
        ``p_gpu_w`` (G, T) [W per GPU], ``running``, ``compute``; ``groups`` lists job,
        job_index, gpu, n_gpus, tdp_w [W], idle_w [W], feeder, straggler; ``meta['jobs']`` holds
        per-job facts (resolved parameters, iteration count, mean period [s]; ``trace``: what
        :func:`~facility.workload.trace.load_trace` found), ``meta['warnings']`` what a measured
        trace cannot show (:mod:`facility.workload.trace_checks`; also logged),
        ``meta['undecided']`` the spec limits it cannot decide -> why.
    """
    rng = np.random.default_rng(scenario.seed) if rng is None else rng
    dt_s = float(scenario.time.dt_s)
    t_s = time_grid(scenario.time.horizon_s, dt_s)
    job_rngs = rng.spawn(len(scenario.jobs))
    lib = scenario.library
    params, counts = [], []
    for i, job in enumerate(scenario.jobs):
        key = f"jobs.{i}"
        p = resolve_job_params(job, lib.gpu(job.gpu))
        params.append(p)
        counts.append(group_gpu_counts(p.n_gpus, p.gpus_per_rack, job.n_rack_groups, key))
    waves, runs, comps, rows, metas, warnings, events, undecided = [], [], [], [], {}, [], [], {}
    for i, (job, p, c) in enumerate(zip(scenario.jobs, params, counts)):
        # the failure process draws from a child of the job's generator: the iteration draws
        # stay those of the job without failures
        crashes = (crash_schedule(job, p.n_gpus, p.start_s, p.stop_s, float(t_s.size * dt_s),
                                  job_rngs[i].spawn(1)[0]) if job.failures is not None else None)
        w, r, cm, meta = job_waveform(p, c, t_s, dt_s, job_rngs[i], job=job, key=f"jobs.{i}",
                                      crashes=crashes, gpu=lib.gpu(job.gpu))
        if crashes is not None:
            meta["crashes"] = _crash_meta(crashes, p, t_s.size * dt_s)
            events.extend(_crash_events(crashes, job.name, p, t_s.size * dt_s))
        if job.workload == "trace":      # what the trace can and cannot show (same words as validate)
            tr, found = inspect_job_trace(job, f"jobs.{i}", scenario)
            meta["trace"] = {k: v for k, v in asdict(tr.info).items() if k != "header"}
            undecided.update(undecided_limits(tr, scenario.spec))
            for text in found:
                if text not in _LOGGED:       # once per process (size and sweeps generate often)
                    _LOGGED.add(text)
                    log.warning("%s", text)
            warnings.extend(found)
        waves.append(w)
        runs.append(r)
        comps.append(cm)
        strag = np.zeros(c.size, dtype=bool)
        strag[meta["straggler_groups"]] = True
        rows.append(pd.DataFrame({
            "job": job.name, "job_index": i, "gpu": p.gpu, "n_gpus": c,
            "tdp_w": p.tdp_w, "idle_w": p.idle_w, "rack_group": np.arange(c.size),
            "straggler": strag}))
        metas[job.name] = meta
    one = len(waves) == 1       # a single job: no copy
    p_gpu_w = waves[0] if one else np.concatenate(waves)
    running = runs[0] if one else np.concatenate(runs)
    compute = comps[0] if one else np.concatenate(comps)
    groups = pd.concat(rows, ignore_index=True)
    groups["feeder"] = assign_feeders(groups["job_index"].to_numpy(), scenario.grid.n_feeders)
    return LoadProfile(t_s=t_s, dt_s=dt_s, groups=groups, p_gpu_w=p_gpu_w, running=running,
                       compute=compute, meta={"jobs": metas, "seed": scenario.seed, "warnings": warnings,
                                              "events": events, "undecided": undecided})


def _crash_meta(c: CrashSchedule, p: JobParams, horizon_s: float) -> dict:
    """Per-job crash figures in the horizon: count, lost training [s, iterations], down time [s]."""
    m = c.crash_s < horizon_s
    down = np.minimum(c.restart_s[m], horizon_s) - c.crash_s[m]
    return {"n_crashes": int(m.sum()), "lost_s": float(c.lost_s[m].sum()),
            "lost_iterations": float(c.lost_s[m].sum() / p.period_s),
            "down_s": float(down.sum()),
            "crash_s": c.crash_s[m].tolist(), "restart_s": c.restart_s[m].tolist(),
            "lost_s_each": c.lost_s[m].tolist()}


def _crash_events(c: CrashSchedule, job: str, p: JobParams, horizon_s: float) -> list[dict]:
    """'crash' and 'restart' rows of events.json (one loop over the crashes)."""
    out = []
    for t, r, lost in zip(c.crash_s, c.restart_s, c.lost_s):
        if t >= horizon_s:
            break
        out.append(dict(t_s=float(t), job=job, kind="crash", detail=(
            f"job crashed: power to idle within {c.drop_s:g} s; {lost:.1f} s of training since "
            f"the last checkpoint lost ({lost / p.period_s:.1f} iterations)")))
        if r < horizon_s:
            out.append(dict(t_s=float(r), job=job, kind="restart", detail=(
                f"restart from the last checkpoint after {r - t:g} s down; start ramp {p.ramp_s:g} s")))
    return out
