"""Small hand-built LoadProfile fixtures for the GPU-control tests (no load generator)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from facility.config.library import load_gpu
from facility.workload.profile import LoadProfile


def square_wave(t_s, period_s, duty, p_hi_w, p_lo_w):
    """Compute phase first in each period: p_hi for duty x period, then p_lo."""
    phase = np.mod(np.round(t_s / period_s, 9), 1.0)
    comp = phase < duty - 1e-9
    return np.where(comp, p_hi_w, p_lo_w), comp


def make_profile(p_w, dt_s, *, running=None, compute=None, gpus=("gb200",), jobs=None,
                 n_gpus=None) -> LoadProfile:
    """A LoadProfile from per-GPU power rows (one row per group)."""
    p_w = np.atleast_2d(np.asarray(p_w, dtype=float))
    n_g, n_t = p_w.shape
    gpus = list(gpus) * (n_g // len(gpus)) if len(gpus) < n_g else list(gpus)
    jobs = list(jobs) if jobs is not None else [f"job{i}" for i in range(n_g)]
    models = [load_gpu(g) for g in gpus]
    names = list(dict.fromkeys(jobs))
    groups = pd.DataFrame({
        "job": jobs,
        "job_index": [names.index(j) for j in jobs],
        "gpu": gpus,
        "n_gpus": list(n_gpus) if n_gpus is not None else [72] * n_g,
        "tdp_w": [m.tdp_w for m in models],
        "idle_w": [m.idle_w for m in models],
        "feeder": [0] * n_g,
    })
    running = np.ones((n_g, n_t), bool) if running is None else np.atleast_2d(running).astype(bool)
    compute = (p_w > 0.5 * groups["tdp_w"].to_numpy()[:, None]) if compute is None \
        else np.atleast_2d(compute).astype(bool)
    return LoadProfile(t_s=np.arange(n_t) * dt_s, dt_s=dt_s, groups=groups, p_gpu_w=p_w,
                       running=running, compute=compute)


@pytest.fixture
def square_profile():
    """Two GB200 groups of one job: 1 s iterations, D = 0.7, 1200 W / 240 W, 20 s at 10 ms."""
    dt = 0.01
    t = np.arange(2000) * dt
    p, comp = square_wave(t, 1.0, 0.7, 1200.0, 240.0)
    return make_profile(np.vstack([p, p]), dt, compute=np.vstack([comp, comp]),
                        gpus=("gb200", "gb200"), jobs=("train", "train"))
