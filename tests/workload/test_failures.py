"""Job crashes and restarts: the failure process, the lost work, the power of a crash."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from facility.errors import ScenarioError
from facility.gpu import apply_gpu_controls
from facility.workload import generate_load
from facility.workload.failures import (LLAMA3_FAILURES_PER_GPU_H, crash_schedule,
                                        failure_times_s, lost_work_s)
from tests.workload.conftest import make_scenario

TDP, IDLE = 700.0, 75.0      # models/gpus/h100.toml


def _job(failures=None, **kw):
    job = {"name": "pretrain", "n_gpus": 1024, "gpu": "h100", "workload": "square",
           "period_s": 2.0, "compute_frac": 0.75, "p_low_frac": 0.3, "ramp_s": 20.0,
           "checkpoint_every_s": 120.0, "checkpoint_s": 10.0}
    job.update(kw)
    if failures is not None:
        job["failures"] = failures
    return job


def test_llama3_rate_is_one_crash_every_three_hours_on_16k_gpus():
    # 419 interruptions / (54 days x 24 h x 16,384 GPUs); the report: "one every 3 hours"
    assert LLAMA3_FAILURES_PER_GPU_H == pytest.approx(1.973e-5, rel=1e-3)
    assert 1.0 / (LLAMA3_FAILURES_PER_GPU_H * 16384) == pytest.approx(54 * 24 / 419, rel=1e-12)
    assert 2.5 < 1.0 / (LLAMA3_FAILURES_PER_GPU_H * 16384) < 3.5


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_failure_process_reproduces_its_rate(seed):
    # Llama 3 rate on 16,384 GPUs, 600 s down per crash, one year: the process runs only while
    # the job is up, so the count is Poisson in the up time and the running-time gaps are
    # Exp(lambda). Expected count lambda H / (1 + lambda D) ~ 2,690; checked within 4 sigma.
    lam = LLAMA3_FAILURES_PER_GPU_H * 16384 / 3600.0        # [1/s]
    down, horizon = 600.0, 365 * 86400.0
    t = failure_times_s(lam, 0.0, horizon, down, np.random.default_rng(seed))
    k = np.arange(t.size)
    up_s = t - k * down                          # running time at each crash
    gaps = np.diff(np.concatenate([[0.0], up_s]))
    assert np.all(gaps > 0) and np.all(np.diff(t) > down)
    up_total = horizon - t.size * down
    expected = lam * up_total
    assert abs(t.size - expected) < 4 * np.sqrt(expected)
    assert gaps.mean() == pytest.approx(1.0 / lam, rel=4 / np.sqrt(t.size))
    assert stats.kstest(gaps, "expon", args=(0, 1.0 / lam)).pvalue > 1e-3
    # the same seed gives the same times, another seed others
    again = failure_times_s(lam, 0.0, horizon, down, np.random.default_rng(seed))
    np.testing.assert_array_equal(t, again)
    other = failure_times_s(lam, 0.0, horizon, down, np.random.default_rng(seed + 100))
    assert other.size != t.size or not np.allclose(other, t)


def test_failure_process_respects_start_and_end():
    t = failure_times_s(1.0 / 50.0, 1000.0, 5000.0, 30.0, np.random.default_rng(0))
    assert t.size > 20 and t.min() > 1000.0 and t.max() < 5000.0
    assert failure_times_s(0.0, 0.0, 1e6, 10.0, np.random.default_rng(0)).size == 0


def test_lost_work_is_time_since_last_completed_checkpoint():
    # checkpoints every 120 s taking 10 s from a = 0: done at 130, 250, 370, ...
    crash = np.array([200.0, 245.0, 100.0, 130.0, 251.0])
    lost = lost_work_s(crash, np.zeros(5), 120.0, 10.0)
    # 200: since 130; 245: inside the 240-250 write -> since 130; 100: none yet -> since 0
    np.testing.assert_allclose(lost, [70.0, 115.0, 100.0, 0.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(lost_work_s(crash, np.zeros(5), None, 0.0), crash)


def test_restart_lost_iterations_equal_time_since_last_checkpoint():
    # crash 1 at 245 s: inside the checkpoint written 240-250 -> back to the one done at 130 s;
    # restart at 345 s; crash 2 at 400 s: no checkpoint completed since the restart (the first
    # comes at 345 + 120 = 465 s) -> all 55 s lost; restart 500 s, its first checkpoint ends at
    # 630 s, crash 3 at 700 s -> 70 s. Iterations = lost / period (2 s).
    fail = {"crash_times_s": [245.0, 400.0, 700.0], "crash_drop_s": 1.0, "restart_after_s": 100.0}
    s = make_scenario(_job(fail), horizon_s=900.0, dt_s=0.5, site={"cooling_tau_s": 0.0})
    prof = generate_load(s)
    c = prof.meta["jobs"]["pretrain"]["crashes"]
    np.testing.assert_allclose(c["lost_s_each"], [115.0, 55.0, 70.0])
    assert c["lost_s"] == pytest.approx(240.0)
    assert c["lost_iterations"] == pytest.approx(120.0)
    assert c["down_s"] == pytest.approx(300.0)
    np.testing.assert_allclose(c["restart_s"], [345.0, 500.0, 800.0])
    ev = [(e["kind"], e["t_s"]) for e in prof.meta["events"]]
    assert ev == [("crash", 245.0), ("restart", 345.0), ("crash", 400.0), ("restart", 500.0),
                  ("crash", 700.0), ("restart", 800.0)]
    # checkpoints restart with each segment: after the restart at 500 s the write is at
    # 620-630 s (idle level), not at 600-610 s where the schedule from t = 0 would put it
    t, p = prof.t_s, prof.p_gpu_w[0]
    assert np.all(p[(t >= 620.0) & (t < 630.0)] == IDLE)
    assert not np.any(p[(t >= 600.0) & (t < 610.0)] == IDLE)


def test_crash_drops_to_idle_within_drop_time_and_ramps_back():
    fail = {"crash_times_s": [300.0], "crash_drop_s": 2.0, "restart_after_s": 60.0}
    s = make_scenario(_job(fail, checkpoint_every_s=None, checkpoint_s=0.0),
                      horizon_s=500.0, dt_s=0.1, site={"cooling_tau_s": 0.0})
    prof = generate_load(s)
    t, p, run = prof.t_s, prof.p_gpu_w[0], prof.running[0]
    level = 0.75 * TDP + 0.25 * 0.3 * TDP          # iteration mean per GPU [W]
    # idle from 302 s (the drop) to the restart at 360 s
    down = (t >= 302.0 - 1e-9) & (t < 360.0)
    assert np.all(p[down] == IDLE) and not run[down].any() and not prof.compute[0][down].any()
    # during the drop the envelope falls linearly: at 301 s half way between idle and the wave
    k = int(round(301.0 / 0.1))
    assert IDLE < p[k] < TDP and run[k]
    # the restart ramps over ramp_s = 20 s: the mean over the second 10 s is above the first
    first = p[(t >= 360.0) & (t < 370.0)].mean()
    second = p[(t >= 370.0) & (t < 380.0)].mean()
    assert IDLE < first < second < level + 1e-6
    assert run[(t >= 360.0)].all()
    assert p[(t >= 380.0) & (t < 400.0)].mean() == pytest.approx(level, rel=1e-9)


def test_failures_leave_the_iteration_draws_unchanged():
    # the failure process has its own child generator: before the first crash the stochastic
    # job's power is the same as without failures
    base = _job(workload="stochastic")
    a = generate_load(make_scenario(base, horizon_s=120.0, dt_s=0.05, seed=7)).p_gpu_w
    b = generate_load(make_scenario(_job({"rate_per_gpu_h": 1e-3}, workload="stochastic"),
                                    horizon_s=120.0, dt_s=0.05, seed=7))
    t_c = b.meta["jobs"]["pretrain"]["crashes"]["crash_s"]
    k = int(np.floor(t_c[0] / 0.05)) if t_c else a.shape[1]
    assert k > 0
    np.testing.assert_array_equal(a[:, :k], b.p_gpu_w[:, :k])


def test_crash_schedule_from_rate_is_seeded():
    s = make_scenario(_job({"rate_per_gpu_h": 2e-4, "restart_after_s": 300.0}), horizon_s=100.0,
                      dt_s=0.1)
    job = s.jobs[0]
    a = crash_schedule(job, 1024, 0.0, None, 86400.0, np.random.default_rng(3))
    b = crash_schedule(job, 1024, 0.0, None, 86400.0, np.random.default_rng(3))
    np.testing.assert_array_equal(a.crash_s, b.crash_s)
    # 2e-4 x 1024 GPU-h^-1 ~ 4.9 per day of running
    assert 0 < a.n < 20
    np.testing.assert_allclose(a.restart_s, a.crash_s + 300.0)


def test_gpu_smoothing_acts_on_a_crash_as_on_a_stop():
    # GB200 at a flat 1,200 W, floor 0.6 TDP = 720 W, 5 s stop delay, 200 W/s ramp-down: after
    # the instant crash at 100 s the power falls at 200 W/s from the last sample before the
    # edge (99.9 s) to the floor (102.3 s), holds it to the end of the stop delay (the last
    # held sample 104.9 s), then falls at 200 W/s to idle (107.75 s)
    fail = {"crash_times_s": [100.0], "crash_drop_s": 0.0, "restart_after_s": 60.0}
    job = _job(fail, gpu="gb200", n_gpus=720, checkpoint_every_s=None, checkpoint_s=0.0,
               ramp_s=0.0, p_low_frac=1.0)
    data = {"gpu_smoothing": {"enabled": True, "floor_frac": 0.6, "stop_delay_s": 5.0,
                              "ramp_down_w_per_s": 200.0}}
    s = make_scenario(job, horizon_s=200.0, dt_s=0.1, site={"cooling_tau_s": 0.0})
    s = s.model_copy(update={"gpu_smoothing": s.gpu_smoothing.model_copy(update=data["gpu_smoothing"])})
    prof = generate_load(s)
    res = apply_gpu_controls(prof, s)
    t, p = prof.t_s, res.p_gpu_w[0]
    floor, idle = 0.6 * 1200.0, 150.0
    at = lambda x: int(round(x / 0.1))            # noqa: E731
    assert p[at(99.9)] == pytest.approx(1200.0) and p[at(101.0)] == pytest.approx(980.0)
    np.testing.assert_allclose(p[at(102.5):at(105.0)], floor)
    assert p[at(106.0)] == pytest.approx(floor - 200.0 * 1.1, abs=1e-6)
    np.testing.assert_allclose(p[at(107.8):at(160.0)], idle)
    assert res.p_burn_w[0][at(103.0)] == pytest.approx(floor - idle)
    kinds = [e["kind"] for e in res.events]
    assert "stop_delay_start" in kinds and "ramp_down_start" in kinds


@pytest.mark.parametrize("fail, words", [
    ({}, "set rate_per_gpu_h"),
    ({"rate_per_gpu_h": 1e-5, "crash_times_s": [10.0]}, "exclude each other"),
    ({"crash_times_s": [10.0, 50.0], "restart_after_s": 60.0}, "crash_times_s[1]"),
    ({"crash_times_s": [-5.0]}, "must be after jobs.0.start_s"),
    ({"crash_times_s": [10.0], "crash_drop_s": 5.0, "restart_after_s": 1.0}, "at least"),
])
def test_bad_failures_are_clear_errors(fail, words):
    with pytest.raises(ScenarioError, match=words.replace("[", r"\[").replace("]", r"\]")):
        make_scenario(_job(fail), horizon_s=100.0, dt_s=0.1)


def test_unknown_failure_key_is_rejected():
    with pytest.raises(ScenarioError, match="crash_time"):
        make_scenario(_job({"crash_time": [10.0]}), horizon_s=100.0, dt_s=0.1)


def test_the_declared_schedule_does_not_foresee_crashes():
    # the MPC's schedule is what the site declares: start, stop, checkpoints — not crashes
    from facility.control.schedule import site_schedule

    fail = {"crash_times_s": [60.0], "restart_after_s": 30.0}
    with_crash = make_scenario(_job(fail), horizon_s=150.0, dt_s=0.1)
    without = make_scenario(_job(), horizon_s=150.0, dt_s=0.1)
    a, b = site_schedule(with_crash), site_schedule(without)
    np.testing.assert_array_equal(a.p_level_mw, b.p_level_mw)
    assert generate_load(with_crash).p_gpu_w[0][int(80 / 0.1)] == IDLE     # the load does crash


def test_lost_training_counts_as_slowdown_in_the_run():
    # one crash at 200 s, checkpoints every 120 s of 10 s from t = 0: 70 s lost (35 iterations
    # of 2 s); the job runs 0-201 s (to the end of the 1 s drop) and 380-600 s: 421 s
    from facility.run.orchestrator import run_scenario

    fail = {"crash_times_s": [200.0], "crash_drop_s": 1.0, "restart_after_s": 180.0}
    s = make_scenario(_job(fail), horizon_s=600.0, dt_s=0.5)
    res = run_scenario(s, plots=False)
    tr = res.metrics["training"]
    assert tr["crashes"]["count"] == 1
    assert tr["crashes"]["lost_s"] == pytest.approx(70.0)
    assert tr["crashes"]["lost_iterations"] == pytest.approx(35.0)
    assert tr["crashes"]["down_s"] == pytest.approx(180.0)
    assert tr["slowdown_frac"] == pytest.approx(70.0 / 421.0)
    kinds = [(e["kind"], e["t_s"]) for e in res.events if e["kind"] in ("crash", "restart")]
    assert kinds == [("crash", 200.0), ("restart", 380.0)]
