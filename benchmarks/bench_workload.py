"""Benchmark: the vectorized load generator against a per-step Python loop of the same model.

Case: one stochastic GB200 job of 64 x 72 GPUs = 64 rack groups, 1 h at 10 ms (360,000 steps),
with start/stop ramps and checkpoints.

- ``facility_s``: :func:`facility.workload.generate_load` on the whole case (best of 3).
- ``baseline_s``: :func:`loop_generate`, the same generator written as a per-step, per-group
  Python loop (iteration pointer per group, envelope, checkpoints), timed on the first
  ``SLICE_STEPS`` steps and scaled linearly to 360,000 steps (its cost per step is constant:
  every step does the same work). The random draws (iteration periods, duties, offsets, levels)
  come from the same :func:`facility.workload.draw_iteration_plan` in both, so the loop
  reproduces the vectorized output; the benchmark checks that on the slice (max |diff| < 1e-6 W)
  and fails otherwise.

Prints one JSON line: ``{"name", "baseline_s", "facility_s", "ratio"}``.
Run: ``python benchmarks/bench_workload.py``.
"""

from __future__ import annotations

import json
import math
import sys
import time

import numpy as np

from facility.scenario import scenario_from_dict
from facility.config.library import load_gpu
from facility.workload import draw_iteration_plan, generate_load, resolve_job_params
from facility.workload.iterations import segment_starts_s
from facility.workload.timeline import STEP_TOL

N_GROUPS = 64
HORIZON_S = 3600.0
DT_S = 0.01
SLICE_STEPS = 36_000

SCENARIO = {
    "name": "bench_workload",
    "seed": 7,
    "time": {"horizon_s": HORIZON_S, "dt_s": DT_S},
    "jobs": [{"name": "pretrain", "n_gpus": N_GROUPS * 72, "gpu": "gb200", "workload": "stochastic",
              "period_s": 1.0, "compute_frac": 0.7, "p_low_frac": 0.2, "start_s": 0.0,
              "stop_s": 3500.0, "ramp_s": 30.0, "checkpoint_every_s": 600.0, "checkpoint_s": 20.0}],
}


def _first_step(t: float, dt_s: float) -> int:
    return max(0, math.ceil(t / dt_s - STEP_TOL))


def loop_generate(p, plan, n_steps: int, dt_s: float) -> np.ndarray:
    """Per-step Python loop of the generator for one job (the baseline).

    Parameters
    ----------
    p : JobParams
        Resolved job parameters.
    plan : IterationPlan
        The job's random draws (:func:`facility.workload.draw_iteration_plan`).
    n_steps : int
        Steps to generate from t = 0.
    dt_s : float
        Step. [s]

    Returns
    -------
    numpy.ndarray, shape (G, n_steps)
        Demanded power per GPU. [W]
    """
    starts = segment_starts_s(plan).tolist()
    levels = plan.level_frac.tolist()
    g_n = len(starts)
    n_seg = len(starts[0])
    ptr = [0] * g_n
    out = [[0.0] * n_steps for _ in range(g_n)]
    tdp, idle = p.tdp_w, p.idle_w
    ck_w = p.checkpoint_frac * tdp
    for n in range(n_steps):
        t = n * dt_s
        # envelope: ramps between idle and the waveform
        if p.ramp_s > 0:
            w = min(max((t - p.start_s) / p.ramp_s, 0.0), 1.0)
            if p.stop_s is not None:
                w = min(w, min(max(1.0 - (t - p.stop_s) / p.ramp_s, 0.0), 1.0))
        else:
            w = 1.0 if n >= _first_step(p.start_s, dt_s) else 0.0
            if p.stop_s is not None and n >= _first_step(p.stop_s, dt_s):
                w = 0.0
        # checkpoints k >= 1 at start + k * every, lasting checkpoint_s
        in_ck = False
        if p.checkpoint_every_s is not None and p.checkpoint_s > 0:
            k = int((t - p.start_s) // p.checkpoint_every_s)
            for kk in (k - 1, k, k + 1):
                if kk >= 1:
                    c = p.start_s + kk * p.checkpoint_every_s
                    if _first_step(c, dt_s) <= n < _first_step(c + p.checkpoint_s, dt_s):
                        in_ck = True
        for g in range(g_n):
            s = starts[g]
            j = ptr[g]
            while j + 1 < n_seg and _first_step(s[j + 1], dt_s) <= n:
                j += 1
            ptr[g] = j
            x = ck_w if in_ck else levels[g][j] * tdp
            out[g][n] = idle + w * (x - idle) if w < 1.0 else x
    return np.asarray(out)


def main() -> int:
    scenario = scenario_from_dict(SCENARIO)
    n_steps = int(round(HORIZON_S / DT_S))
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        profile = generate_load(scenario)
        times.append(time.perf_counter() - t0)
    facility_s = min(times)
    assert profile.p_gpu_w.shape == (N_GROUPS, n_steps), profile.p_gpu_w.shape

    # the same draws as generate_load (its first job's child generator), looped per step
    job = scenario.jobs[0]
    p = resolve_job_params(job, load_gpu(job.gpu))
    job_rng = np.random.default_rng(scenario.seed).spawn(1)[0]
    plan = draw_iteration_plan(p, N_GROUPS, min(HORIZON_S, p.stop_s + p.ramp_s), job_rng)
    t0 = time.perf_counter()
    ref = loop_generate(p, plan, SLICE_STEPS, DT_S)
    loop_slice_s = time.perf_counter() - t0
    diff = float(np.max(np.abs(ref - profile.p_gpu_w[:, :SLICE_STEPS])))
    if diff > 1e-6:
        print(f"loop and vectorized generator differ by {diff:g} W", file=sys.stderr)
        return 1
    baseline_s = loop_slice_s * n_steps / SLICE_STEPS
    print(json.dumps({"name": "workload_64groups_360k_steps", "baseline_s": round(baseline_s, 3),
                      "facility_s": round(facility_s, 4), "ratio": round(baseline_s / facility_s, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
