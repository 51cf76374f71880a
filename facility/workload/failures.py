"""Job crashes and restarts: the failure process and the job's up-segments on the step grid.

A crash drops the whole (synchronous) job to idle; after ``restart_after_s`` the job restarts
from its last completed checkpoint and ramps back with its start ramp ``ramp_s``. The job's
life becomes a chain of up-segments::

    [start_s, crash_1) , [restart_1, crash_2) , ... , [restart_K, stop_s)
    restart_k = crash_k + restart_after_s

Each segment rises over ``ramp_s`` from its beginning and ends with a linear fall to idle over
``crash_drop_s`` (a crash) or ``ramp_s`` (the scheduled stop). The job "runs" (the GPU
controls' ``running``) from a segment's beginning to the end of its fall, so the smoothing
floor, its stop delay and ramp-down and the firefly load act on a crash as on a stop.

**Failure process.** Crashes arrive as a Poisson process in the job's *running* time with rate
``lambda = rate_per_gpu_h * n_gpus / 3600`` [1/s]; the process pauses while the job is down.
With running-time gaps ``g_i ~ Exp(lambda)`` the k-th crash (k = 1, 2, ...) falls at::

    t_k = t0 + (g_1 + ... + g_k) + (k - 1) * restart_after_s

(:func:`failure_times_s`, vectorized over the draws). The default source is Meta's Llama 3
pre-training: 419 unexpected interruptions in a 54-day snapshot on 16,384 H100 GPUs (Llama Team,
AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, sec. 3.3.4, Table 5), i.e.
:data:`LLAMA3_FAILURES_PER_GPU_H` = 1.97e-5 per GPU-hour, one crash every ~3 h for 16,384 GPUs;
about 78 % were attributed to confirmed or suspected hardware issues (same section).

**Lost work.** A checkpoint that began at ``c`` and completed at ``c + checkpoint_s`` before the
crash is what the restart reloads; the training done after it is lost and redone::

    lost_s = t_crash - (c_last + checkpoint_s)     (c_last: the last completed checkpoint)
    lost_s = t_crash - a                           (none completed since the segment began at a)

A checkpoint still being written at the crash does not count. Checkpoints restart their
schedule with every segment (the k-th after ``a + k * checkpoint_every_s``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from facility.workload.timeline import STEP_TOL, checkpoint_mask, step_index

__all__ = ["LLAMA3_FAILURES_PER_GPU_H", "CrashSchedule", "crash_schedule", "failure_times_s",
           "lost_work_s", "segment_masks"]

#: Unexpected interruptions per GPU-hour in the Llama 3 405B pre-training: 419 in a 54-day
#: snapshot on 16,384 H100 GPUs ("The Llama 3 Herd of Models", Meta, 2024, sec. 3.3.4). [1/GPU-h]
LLAMA3_FAILURES_PER_GPU_H = 419.0 / (54.0 * 24.0 * 16384.0)


@dataclass(frozen=True)
class CrashSchedule:
    """Crashes of one job and what each costs.

    Attributes
    ----------
    crash_s : numpy.ndarray (K,)
        Crash times. [s]
    restart_s : numpy.ndarray (K,)
        Restart times (the start ramp begins); ``inf`` where the job does not restart (its
        stop comes first). [s]
    drop_s : float
        Fall from the job's level to idle after a crash. [s]
    lost_s : numpy.ndarray (K,)
        Training time lost per crash (since the last completed checkpoint). [s]
    """

    crash_s: np.ndarray
    restart_s: np.ndarray
    drop_s: float
    lost_s: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def n(self) -> int:
        """Number of crashes. [-]"""
        return int(self.crash_s.size)


def failure_times_s(rate_per_s: float, t0_s: float, t_end_s: float, down_s: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Crash times of a Poisson process that runs only while the job is up.

    Parameters
    ----------
    rate_per_s : float
        Crash rate of the whole job while it runs. [1/s]
    t0_s : float
        Time the process starts (the job runs from here). [s]
    t_end_s : float
        No crash at or after this time (horizon end, job stop). [s]
    down_s : float
        Time the job is down after each crash (crash to restart); the process pauses. [s]
    rng : numpy.random.Generator
        Source of the exponential gaps.

    Returns
    -------
    numpy.ndarray (K,)
        ``t_k = t0 + cumsum(gaps)_k + (k - 1) down_s`` below ``t_end_s``, ascending. [s]
    """
    span = t_end_s - t0_s
    if rate_per_s <= 0 or span <= 0:
        return np.zeros(0)
    lam = rate_per_s * span          # at most this many expected (down time only removes some)
    batch = int(lam + 6.0 * np.sqrt(lam) + 8)
    gaps = rng.exponential(1.0 / rate_per_s, batch)
    while t0_s + gaps.sum() + (gaps.size - 1) * down_s < t_end_s:     # rare: draw more
        gaps = np.concatenate([gaps, rng.exponential(1.0 / rate_per_s, batch)])
    t = t0_s + np.cumsum(gaps) + np.arange(gaps.size) * down_s
    return t[t < t_end_s]


def lost_work_s(crash_s: np.ndarray, seg_start_s: np.ndarray, every_s: float | None,
                duration_s: float) -> np.ndarray:
    """Training time since the last completed checkpoint at each crash. [s]

    Parameters
    ----------
    crash_s, seg_start_s : numpy.ndarray (K,)
        Each crash and the beginning of its up-segment (job start or restart). [s]
    every_s : float or None
        Checkpoint interval; None = no checkpoints (all progress of the segment is lost). [s]
    duration_s : float
        Checkpoint duration; a checkpoint counts once it has completed. [s]
    """
    crash_s = np.asarray(crash_s, dtype=float)
    a = np.asarray(seg_start_s, dtype=float)
    if every_s is None or duration_s <= 0:
        return crash_s - a
    k = np.floor((crash_s - duration_s - a) / every_s + STEP_TOL)       # last completed
    saved = np.where(k >= 1, a + k * every_s + duration_s, a)
    return crash_s - saved


def crash_schedule(job, n_gpus: int, start_s: float, stop_s: float | None, horizon_s: float,
                   rng: np.random.Generator) -> CrashSchedule | None:
    """Crashes of one job from its ``[jobs.failures]`` table (declared or drawn).

    Parameters
    ----------
    job : facility.config.schema.JobConfig
        ``failures`` (None -> None), ``checkpoint_every_s``, ``checkpoint_s``.
    n_gpus : int
        GPUs of the job (the rate is per GPU-hour). [GPU]
    start_s, stop_s : float, float or None
        The job's start and stop. [s]
    horizon_s : float
        Simulated horizon; no crash is drawn past it. [s]
    rng : numpy.random.Generator
        The failure process's generator (a child of the job's).
    """
    f = getattr(job, "failures", None)
    if f is None:
        return None
    t_end = horizon_s if stop_s is None else min(horizon_s, stop_s)
    if f.crash_times_s:
        crash = np.asarray(f.crash_times_s, dtype=float)
    else:
        rate = float(f.rate_per_gpu_h or 0.0) * n_gpus / 3600.0
        crash = failure_times_s(rate, max(start_s, 0.0), t_end, f.restart_after_s, rng)
    restart = crash + f.restart_after_s
    if stop_s is not None:
        restart = np.where(restart < stop_s, restart, np.inf)
    seg_start = np.concatenate([[start_s], restart[:-1]]) if crash.size else np.zeros(0)
    lost = lost_work_s(crash, seg_start, job.checkpoint_every_s, job.checkpoint_s)
    return CrashSchedule(crash_s=crash, restart_s=restart, drop_s=float(f.crash_drop_s), lost_s=lost)


def _rise(t: np.ndarray, t0: float, dur: float, dt_s: float) -> np.ndarray:
    """0 before ``t0``, linear to 1 over ``dur`` (a step at :func:`step_index` when 0). [frac]"""
    if dur > 0:
        return np.clip((t - t0) / dur, 0.0, 1.0)
    return (t >= t0 - STEP_TOL * dt_s).astype(float)


def segment_masks(t_s: np.ndarray, start_s: float, stop_s: float | None, ramp_s: float,
                  crashes: CrashSchedule, every_s: float | None, ckpt_s: float):
    """Envelope, running and checkpoint masks of a job with crashes, shape (T,) each.

    Every up-segment is computed on its own index window (a loop over crashes, not steps):
    rise over ``ramp_s`` from its beginning, fall over ``crash_drop_s`` (crash) or ``ramp_s``
    (stop) from its end; running to the end of the fall; checkpoints restart with the segment
    and end at the crash.

    Returns
    -------
    env : numpy.ndarray (T,) [frac]
    running, ckpt : numpy.ndarray of bool (T,)
    """
    n = t_s.size
    dt_s = float(t_s[1] - t_s[0]) if n > 1 else 1.0
    env = np.zeros(n)
    run = np.zeros(n, dtype=bool)
    ckpt = np.zeros(n, dtype=bool)
    starts = np.concatenate([[start_s], crashes.restart_s])
    ends = list(crashes.crash_s) + [stop_s]
    falls = [crashes.drop_s] * crashes.n + [ramp_s]
    for a, b, fall in zip(starts, ends, falls):
        if not np.isfinite(a):
            break                                    # no restart (the stop came first)
        i0 = int(step_index(a, dt_s, n))
        i1 = n if b is None else int(step_index(b + fall, dt_s, n))
        if i1 <= i0:
            continue
        t = t_s[i0:i1]
        w = _rise(t, a, ramp_s, dt_s)
        if b is not None:
            w = np.minimum(w, 1.0 - _rise(t, b, fall, dt_s))
        env[i0:i1] = np.maximum(env[i0:i1], w)
        run[i0:i1] = True
        i_b = n if b is None else int(step_index(b, dt_s, n))
        if every_s is not None and i_b > i0:
            t0 = i0 * dt_s           # the window as its own grid starting at 0
            ckpt[i0:i_b] |= checkpoint_mask(t_s[i0:i_b] - t0, a - t0, every_s, ckpt_s)
    return env, run, ckpt
