"""An hour of GPU telemetry in nvidia-smi's own CSV layout, for the sizing benchmark.

No GPU was available to record a real hour (tests/data/README.md), and the 10.9 s that
tests/data holds, looped, repeats exactly (the periodic reduction then solves it). This writes
what ``nvidia-smi --query-gpu=timestamp,index,name,power.draw,utilization.gpu,memory.used
--format=csv -lms 100`` logs on one 8-GPU node of a training job whose iterations do not
repeat: every iteration draws its own period and compute share, each GPU has its own offset
and noise, the rows of one poll are 1–3 ms apart, polls drift by a few ms, now and then the
logger stalls for 0.5–3 s, values carry `` W`` / `` %`` / `` MiB`` suffixes under ``[W]``
headers. It is written through the same reader as any user's file (``workload = "trace"``).
It is **synthetic** (say so wherever it is used); its warts are those of the real logs in
tests/data.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

T0 = datetime(2025, 3, 14, 9, 26, 53, 589000)


def iteration_power(t_s: np.ndarray, rng, period_s=4.0, compute_frac=0.8, jitter=0.1,
                    frac_jitter=0.05, high_w=700.0, low_w=280.0) -> np.ndarray:
    """Per-GPU power [W] at times ``t_s`` of a job whose iterations each draw their own period
    (±``jitter``) and compute share (±``frac_jitter``)."""
    n_it = int(t_s[-1] / (period_s * (1 - jitter))) + 2
    periods = period_s * (1 + rng.uniform(-jitter, jitter, n_it))
    starts = np.concatenate([[0.0], np.cumsum(periods)])
    frac = compute_frac + rng.uniform(-frac_jitter, frac_jitter, n_it)
    k = np.searchsorted(starts, t_s, side="right") - 1
    phase = (t_s - starts[k]) / periods[k]
    return np.where(phase < frac[k], high_w, low_w)


def write_nvidia_smi_hour(path: Path, horizon_s: float = 3600.0, n_gpus: int = 8,
                          interval_s: float = 0.1, seed: int = 3) -> Path:
    """Write the log (module text) covering ``horizon_s`` and return its path."""
    rng = np.random.default_rng(seed)
    n = int(horizon_s / interval_s) + 1
    starts = np.arange(n) * interval_s + np.cumsum(rng.normal(0.0, 0.0015, n))  # drifting polls
    stalls = rng.choice(np.arange(100, n - 100), size=max(1, int(horizon_s // 600)), replace=False)
    for s in np.sort(stalls):
        starts[s:] += rng.uniform(0.5, 3.0)  # the logger stalls; the later polls shift
    offs = np.cumsum(rng.uniform(0.0008, 0.0031, (n, n_gpus)), axis=1)
    offs[:, 0] = 0.0
    t = starts[:, None] + offs                     # when each GPU was read
    base = iteration_power(t.ravel(), rng).reshape(n, n_gpus)
    p = np.round(base + rng.normal(0, 6.0, n_gpus)[None, :] + rng.normal(0, 4.0, (n, n_gpus)), 2)
    stamps = [(T0 + timedelta(seconds=float(x))).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3] for x in t.ravel()]
    util = np.where(p > 450, 100, 35).ravel()
    mem = (61000 + 13 * np.arange(n_gpus))[None, :].repeat(n, axis=0).ravel()
    idx = np.tile(np.arange(n_gpus), n)
    rows = [f"{s}, {i}, NVIDIA H100 80GB HBM3, {w:.2f} W, {u} %, {m} MiB"
            for s, i, w, u, m in zip(stamps, idx, p.ravel(), util, mem)]
    path = Path(path)
    path.write_text("timestamp, index, name, power.draw [W], utilization.gpu [%], memory.used [MiB]\n"
                    + "\n".join(rows) + "\n")
    return path
