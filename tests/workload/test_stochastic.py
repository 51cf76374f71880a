"""Stochastic workload: Ko & Zhu statistics, offsets, stragglers, reproducibility, archetypes."""

from __future__ import annotations

import numpy as np
import pytest

from facility.config.library import load_gpu
from facility.workload import (ARCHETYPES, draw_iteration_plan, generate_load, iteration_wave,
                               resolve_job_params)
from tests.workload.conftest import make_scenario


def _job(**kw):
    job = {"name": "s", "n_gpus": 64 * 72, "gpu": "gb200", "workload": "stochastic",
           "period_s": 1.0, "compute_frac": 0.7, "p_low_frac": 0.2}
    job.update(kw)
    return job


def test_period_and_jitter_statistics():
    s = make_scenario(_job(), horizon_s=2000.0, dt_s=0.01, seed=3)
    p = resolve_job_params(s.jobs[0], load_gpu("gb200"))
    assert (p.jitter_frac, p.phase_offset_s, p.straggler_frac) == (0.1, 0.005, 0.05)
    plan = draw_iteration_plan(p, 64, 2000.0, np.random.default_rng(3))
    periods = np.diff(plan.bounds_s)
    assert periods.size > 1900
    assert periods.mean() == pytest.approx(1.0, abs=0.01)        # 5 sigma of the mean: 0.011
    assert periods.std() == pytest.approx(0.1, rel=0.08)
    duty = plan.compute_s / periods
    assert duty.mean() == pytest.approx(0.7, abs=0.005)
    assert duty.std() == pytest.approx(0.03, rel=0.1)
    low = plan.level_frac[:, 1::2].mean(axis=0)                   # per-iteration drop depth
    assert low.mean() == pytest.approx(0.2, abs=0.005)
    assert plan.straggler.sum() == 3                              # round(0.05 * 64)
    meta = generate_load(s).meta["jobs"]["s"]
    assert meta["mean_period_s"] == pytest.approx(1.0, abs=0.01)
    assert meta["n_iterations"] == pytest.approx(2000, rel=0.02)


def test_site_mean_and_not_a_square_wave():
    s = make_scenario(_job(), horizon_s=300.0, seed=1)
    prof = generate_load(s)
    p = prof.p_gpu_w
    # groups differ (offsets, noise), the aggregate has more than two levels
    assert not np.all(p == p[0])
    total = prof.total_gpu_mw()
    assert np.unique(np.round(total, 9)).size > 100
    expected = 64 * 72 * 1200.0 * (0.7 * 1.0 + 0.3 * 0.2) / 1e6
    assert total.mean() == pytest.approx(expected, rel=0.02)
    assert prof.compute.mean() == pytest.approx(0.7, abs=0.01)


def test_stragglers_lag_their_compute_phase():
    s = make_scenario(_job(phase_offset_s=0.0, straggler_frac=0.25, straggler_delay_s=0.05,
                           jitter_frac=0.0, compute_frac_jitter=0.0, noise_high_frac=0.0,
                           noise_low_frac=0.0, drop_jitter_frac=0.0), horizon_s=5.0)
    prof = generate_load(s)
    strag = prof.groups["straggler"].to_numpy()
    assert strag.sum() == 16
    c = prof.compute
    normal = np.flatnonzero(~strag)[0]
    late = np.flatnonzero(strag)[0]
    # a straggler's waveform is the normal one shifted by 5 steps
    assert np.array_equal(c[late, 105:400], c[normal, 100:395])


def test_reproducible_with_seed_and_independent_per_job():
    a = generate_load(make_scenario(_job(), horizon_s=20.0, seed=11))
    b = generate_load(make_scenario(_job(), horizon_s=20.0, seed=11))
    c = generate_load(make_scenario(_job(), horizon_s=20.0, seed=12))
    assert np.array_equal(a.p_gpu_w, b.p_gpu_w)
    assert not np.array_equal(a.p_gpu_w, c.p_gpu_w)
    # adding a second job does not change the first job's draws
    two = generate_load(make_scenario([_job(), _job(name="other", n_gpus=720)], horizon_s=20.0,
                                      seed=11))
    assert np.array_equal(two.p_gpu_w[:64], a.p_gpu_w)
    r1 = generate_load(make_scenario(_job(), horizon_s=20.0), rng=np.random.default_rng(5))
    r2 = generate_load(make_scenario(_job(), horizon_s=20.0), rng=np.random.default_rng(5))
    assert np.array_equal(r1.p_gpu_w, r2.p_gpu_w)


def test_archetypes_have_sources_and_shape():
    for name, a in ARCHETYPES.items():
        assert a["source"]
        assert 0 < a["compute_frac"] < 1 and 0 <= a["p_low_frac"] < 1 and a["period_s"] > 0
    # adapter tuning: higher compute share and shallower drop than fine-tuning
    assert ARCHETYPES["adapter_tuning"]["compute_frac"] > ARCHETYPES["finetune"]["compute_frac"]
    assert ARCHETYPES["adapter_tuning"]["p_low_frac"] > ARCHETYPES["finetune"]["p_low_frac"]
    s = make_scenario(_job(period_s=None, compute_frac=None, p_low_frac=None,
                           archetype="llm_pretrain", noise_high_frac=0.0), horizon_s=1.0)
    p = resolve_job_params(s.jobs[0], load_gpu("gb200"))
    assert p.period_s == 1.0 and p.p_low_frac == 0.7 and p.drop_jitter_frac == 0.05
    assert p.noise_high_frac == 0.0                               # explicit key wins


def test_iteration_wave_matches_segment_definition():
    s = make_scenario(_job(), horizon_s=3.0)
    p = resolve_job_params(s.jobs[0], load_gpu("gb200"))
    plan = draw_iteration_plan(p, 4, 3.0, np.random.default_rng(0))
    wave, compute = iteration_wave(plan, 300, 0.01)
    from facility.workload.iterations import segment_starts_s
    starts = segment_starts_s(plan)
    for g in range(4):
        for n in (0, 17, 150, 299):
            j = np.searchsorted(starts[g], n * 0.01 + 1e-9, side="right") - 1
            assert wave[g, n] == plan.level_frac[g, max(j, 0)]
            assert compute[g, n] == (max(j, 0) % 2 == 0)


def test_loop_baseline_reproduces_vectorized_generator():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_workload.py"
    spec = importlib.util.spec_from_file_location("bench_workload", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    s = make_scenario(_job(n_gpus=8 * 72, start_s=0.5, stop_s=15.0, ramp_s=2.0,
                           checkpoint_every_s=5.0, checkpoint_s=1.0), horizon_s=20.0, seed=4)
    prof = generate_load(s)
    p = resolve_job_params(s.jobs[0], load_gpu("gb200"))
    plan = draw_iteration_plan(p, 8, 17.0, np.random.default_rng(4).spawn(1)[0])
    ref = bench.loop_generate(p, plan, 2000, 0.01)
    assert np.max(np.abs(ref - prof.p_gpu_w)) < 1e-9


def test_archetype_low_level_above_high_level_is_an_error():
    from facility.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"p_low_frac = 0.7 .*archetype 'llm_pretrain'"):
        make_scenario(_job(period_s=None, compute_frac=None, p_low_frac=None,     # at validation
                           archetype="llm_pretrain", p_high_frac=0.6), horizon_s=1.0)


def test_noise_never_exceeds_the_gpu_edp_ceiling():
    h = generate_load(make_scenario(_job(gpu="h100", n_gpus=64 * 32, noise_high_frac=0.1),
                                    horizon_s=60.0))
    assert h.p_gpu_w.max() <= 700.0 + 1e-9                       # H100: EDP 1.0 x TDP
    g = generate_load(make_scenario(_job(noise_high_frac=0.1), horizon_s=60.0))
    assert g.p_gpu_w.max() <= 1.1 * 1200.0 + 1e-9                 # GB200: EDP 1.1 x TDP
    assert g.p_gpu_w.max() > 1200.0
