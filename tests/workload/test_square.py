"""Square workload: closed forms of the ideal synchronous wave, ramps, checkpoints, idle."""

from __future__ import annotations

import numpy as np
import pytest

from facility.workload import default_n_feeders, generate_load, site_power
from tests.workload.conftest import make_scenario

TDP, IDLE = 700.0, 75.0      # models/gpus/h100.toml


def _square(**kw):
    job = {"name": "j", "n_gpus": 700, "gpu": "h100", "workload": "square", "period_s": 1.0,
           "compute_frac": 0.7, "p_low_frac": 0.2}
    job.update(kw)
    return job


@pytest.mark.parametrize("dt_s", [0.1, 0.05, 0.01, 0.002])
def test_square_wave_closed_form(dt_s):
    s = make_scenario(_square(), horizon_s=10.0, dt_s=dt_s, site={"cooling_tau_s": 0.0})
    prof = generate_load(s)
    p = prof.p_gpu_w
    assert p.shape == (prof.n_groups, round(10.0 / dt_s))
    # every group identical, two levels only
    assert np.all(p == p[0])
    assert set(np.unique(p)) == {TDP, 0.2 * TDP}
    duty = np.mean(p[0] == TDP)
    assert duty == pytest.approx(0.7, abs=1e-12)
    # compute phase = first 0.7 s of each 1 s iteration, from t = 0
    t = prof.t_s
    phase = np.round(np.mod(t, 1.0) / dt_s).astype(int)
    assert np.all((p[0] == TDP) == (phase < round(0.7 / dt_s)))
    assert np.array_equal(prof.compute[0], p[0] == TDP)
    site = site_power(prof, p, s.site, default_n_feeders(s))
    mean_mw = 700 * TDP * (0.7 * 1.0 + 0.3 * 0.2) * (1 + 0.3) * 1.2 / 1e6
    assert site.p_site_mw.mean() == pytest.approx(mean_mw, rel=1e-12)
    assert site.p_site_mw.max() == pytest.approx(700 * TDP * 1.3 * 1.2 / 1e6, rel=1e-12)
    assert site.p_site_mw.min() == pytest.approx(700 * 0.2 * TDP * 1.3 * 1.2 / 1e6, rel=1e-12)


def test_square_ignores_archetype_noise_but_takes_shape():
    s = make_scenario(_square(period_s=None, compute_frac=None, p_low_frac=None,
                              archetype="finetune"), horizon_s=8.0)
    prof = generate_load(s)
    p = prof.p_gpu_w
    assert np.all(p == p[0])
    assert set(np.unique(p)) == {TDP, 0.2 * TDP}                 # finetune: p_low 0.2
    assert np.mean(p[0] == TDP) == pytest.approx(0.8)            # finetune: duty 0.8
    assert prof.meta["jobs"]["j"]["mean_period_s"] == pytest.approx(2.0)


def test_start_before_zero_counts_phase_from_start():
    s = make_scenario(_square(start_s=-0.35), horizon_s=3.0)
    p = generate_load(s).p_gpu_w[0]
    t = np.arange(p.size) * 0.01
    expected = np.where(np.mod(t + 0.35 + 1e-9, 1.0) < 0.7, TDP, 0.2 * TDP)
    assert np.array_equal(p, expected)


def test_idle_outside_job_and_running_mask():
    s = make_scenario(_square(start_s=2.0, stop_s=6.0), horizon_s=10.0)
    prof = generate_load(s)
    p, t = prof.p_gpu_w, prof.t_s
    assert np.all(p[:, t < 2.0 - 1e-9] == IDLE)
    assert np.all(p[:, t >= 6.0 - 1e-9] == IDLE)
    assert np.array_equal(prof.running[0], (t >= 2.0 - 1e-9) & (t < 6.0 - 1e-9))
    assert not prof.compute[:, ~prof.running[0]].any()
    # iterations counted from start_s: first compute phase [2, 2.7)
    assert np.all(p[0, (t >= 2.0 - 1e-9) & (t < 2.7 - 1e-9)] == TDP)
    assert np.all(p[0, (t >= 2.7 - 1e-9) & (t < 3.0 - 1e-9)] == 0.2 * TDP)


def test_start_and_stop_ramp_slope():
    # constant waveform at TDP (p_low = p_high) isolates the envelope
    s = make_scenario(_square(p_low_frac=1.0, start_s=5.0, stop_s=30.0, ramp_s=10.0),
                      horizon_s=50.0, dt_s=0.01)
    prof = generate_load(s)
    p, t = prof.p_gpu_w[0], prof.t_s
    slope = np.diff(p) / 0.01
    up = (t[:-1] >= 5.0 - 1e-9) & (t[1:] <= 15.0 + 1e-9)
    down = (t[:-1] >= 30.0 - 1e-9) & (t[1:] <= 40.0 + 1e-9)
    assert np.allclose(slope[up], (TDP - IDLE) / 10.0, rtol=1e-9)
    assert np.allclose(slope[down], -(TDP - IDLE) / 10.0, rtol=1e-9)
    assert p[np.searchsorted(t, 5.0)] == pytest.approx(IDLE)
    assert np.all(p[(t >= 15.0 - 1e-9) & (t < 30.0 - 1e-9)] == pytest.approx(TDP))
    assert np.all(p[t >= 40.0 - 1e-9] == pytest.approx(IDLE))
    # running covers the ramps: [start_s, stop_s + ramp_s)
    assert np.array_equal(prof.running[0], (t >= 5.0 - 1e-9) & (t < 40.0 - 1e-9))


def test_checkpoints_at_idle_and_at_given_fraction():
    s = make_scenario(_square(checkpoint_every_s=4.0, checkpoint_s=1.0), horizon_s=10.0)
    prof = generate_load(s)
    p, t = prof.p_gpu_w[0], prof.t_s
    ck = ((t >= 4.0 - 1e-9) & (t < 5.0 - 1e-9)) | ((t >= 8.0 - 1e-9) & (t < 9.0 - 1e-9))
    assert np.all(p[ck] == IDLE)
    assert np.all(p[~ck] >= 0.2 * TDP)
    assert not prof.compute[0, ck].any()
    assert prof.running[0, ck].all()
    s2 = make_scenario(_square(checkpoint_every_s=4.0, checkpoint_s=1.0, checkpoint_frac=0.1),
                       horizon_s=10.0)
    p2 = generate_load(s2).p_gpu_w[0]
    assert np.all(p2[ck] == pytest.approx(70.0))


def test_checkpoints_of_a_job_started_long_ago():
    s = make_scenario(_square(start_s=-1e6, checkpoint_every_s=300.0, checkpoint_s=20.0),
                      horizon_s=400.0, dt_s=0.1)
    p, t = generate_load(s).p_gpu_w[0], np.arange(4000) * 0.1
    # checkpoints at -1e6 + k*300: k = 3334 -> t = 200 s
    ck = (t >= 200.0 - 1e-9) & (t < 220.0 - 1e-9)
    assert np.all(p[ck] == IDLE)
    assert np.all(p[~ck] > IDLE)


def test_group_counts_sum_to_n_gpus_and_default_group_number():
    s = make_scenario(_square(n_gpus=1000), horizon_s=1.0)       # 32 per rack -> 32 racks
    g = generate_load(s).groups
    assert len(g) == 32 and g["n_gpus"].sum() == 1000
    s = make_scenario(_square(n_gpus=100_001, gpu="gb200"), horizon_s=1.0)
    g = generate_load(s).groups
    assert len(g) == 64 and g["n_gpus"].sum() == 100_001
    assert g["n_gpus"].max() - g["n_gpus"].min() < 2 * 72     # one rack, plus the partial last one
    s = make_scenario(_square(n_gpus=5000, n_rack_groups=7, gpus_per_rack=50), horizon_s=1.0)
    g = generate_load(s).groups
    assert list(g["n_gpus"]) == [750, 750, 700, 700, 700, 700, 700]


def test_too_many_rack_groups_is_an_error():
    from facility.errors import ScenarioError
    with pytest.raises(ScenarioError, match=r"jobs\.0\.n_rack_groups = 3 exceeds"):  # 2 racks
        make_scenario(_square(n_gpus=64, n_rack_groups=3), horizon_s=1.0)   # refused at validation
    s = make_scenario(_square(n_gpus=64, n_rack_groups=2), horizon_s=1.0)
    assert generate_load(s).p_gpu_w.shape[0] == 2
