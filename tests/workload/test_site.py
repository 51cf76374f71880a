"""Site aggregation: identities, cooling lag, feeder split and assignment."""

from __future__ import annotations

import numpy as np
import pytest

from facility.errors import ScenarioError
from facility.workload import cooling_lag, default_n_feeders, generate_load, site_power
from tests.workload.conftest import make_scenario


def _job(name="a", n_gpus=720, **kw):
    job = {"name": name, "n_gpus": n_gpus, "gpu": "gb200", "workload": "square",
           "period_s": 1.0, "compute_frac": 0.6, "p_low_frac": 0.25}
    job.update(kw)
    return job


def test_identities_and_feeder_rows():
    site = {"non_gpu_frac": 0.25, "pue": 1.3, "cooling_tau_s": 5.0, "base_load_mw": 2.0}
    s = make_scenario([_job(), _job("b", 1440, workload="stochastic", start_s=3.0)],
                      horizon_s=60.0, site=site)
    prof = generate_load(s)
    n_f = default_n_feeders(s)
    assert n_f == 2
    sp = site_power(prof, prof.p_gpu_w, s.site, n_f)
    assert np.allclose(sp.p_gpu_mw, prof.total_gpu_mw(), rtol=1e-12)
    assert np.allclose(sp.p_it_mw, sp.p_gpu_mw * 1.25, rtol=1e-12)
    assert np.allclose(sp.p_site_mw, sp.p_it_mw + sp.p_cooling_mw + 2.0, rtol=1e-12)
    assert sp.p_feeder_mw.shape == (prof.n_steps, 2)
    assert np.allclose(sp.p_feeder_mw.sum(axis=1), sp.p_site_mw, rtol=1e-12)
    # job a on feeder 0 (with the base load), job b on feeder 1
    gb = prof.groups["job"].to_numpy() == "b"
    it_b = prof.group_power_mw()[gb].sum(axis=0) * 1.25
    assert np.allclose(sp.p_feeder_mw[:, 1], it_b + cooling_lag(0.3 * it_b, 0.01, 5.0))
    assert sp.p_feeder_mw[:, 0].min() > 2.0


def test_cooling_tau_zero_is_instant_pue():
    s = make_scenario(_job(), horizon_s=5.0, site={"cooling_tau_s": 0.0, "pue": 1.4})
    prof = generate_load(s)
    sp = site_power(prof, prof.p_gpu_w, s.site, 1)
    assert np.allclose(sp.p_site_mw, 1.4 * sp.p_it_mw, rtol=1e-12)


def test_cooling_lag_preserves_mean_and_smooths_swings():
    s = make_scenario(_job(), horizon_s=600.0, dt_s=0.01, site={"cooling_tau_s": 30.0})
    prof = generate_load(s)
    sp = site_power(prof, prof.p_gpu_w, s.site, 1)
    x = 0.2 * sp.p_it_mw
    assert sp.p_cooling_mw.mean() == pytest.approx(x.mean(), rel=1e-3)
    assert np.ptp(sp.p_cooling_mw) < 0.02 * np.ptp(x)    # 1 Hz swing, tau 30 s


def test_cooling_lag_step_response_is_exact_exponential():
    dt, tau = 0.1, 2.0
    x = np.zeros(200)
    x[100:] = 1.0
    y = cooling_lag(x, dt, tau)
    assert np.allclose(y[:100], 0.0)                     # initial state: mean of 0s
    n = np.arange(100)
    assert np.allclose(y[100:], 1.0 - np.exp(-dt * (n + 1) / tau), rtol=1e-12)


def test_feeder_assignment_round_robin_and_default_cap():
    s = make_scenario(_job(n_gpus=720), horizon_s=1.0, grid={"n_feeders": 3})
    prof = generate_load(s)
    assert list(prof.groups["feeder"]) == [0, 1, 2, 0, 1, 2, 0, 1, 2, 0]
    assert default_n_feeders(s) == 3
    jobs = [_job(f"j{i}", 72) for i in range(10)]
    s = make_scenario(jobs, horizon_s=1.0)
    prof = generate_load(s)
    assert list(prof.groups["feeder"]) == [0, 1, 2, 3, 4, 5, 6, 7, 7, 7]
    assert default_n_feeders(s) == 8
    sp = site_power(prof, prof.p_gpu_w, s.site, 8)
    assert np.allclose(sp.p_feeder_mw[:, 7], 3 * sp.p_feeder_mw[:, 1])
    with pytest.raises(ScenarioError, match="n_feeders = 4"):
        site_power(prof, prof.p_gpu_w, s.site, 4)


def test_site_power_uses_the_given_gpu_power():
    s = make_scenario(_job(), horizon_s=2.0, site={"cooling_tau_s": 0.0})
    prof = generate_load(s)
    flat = np.full_like(prof.p_gpu_w, 600.0)
    sp = site_power(prof, flat, s.site, 1)
    assert np.allclose(sp.p_site_mw, 720 * 600.0 * 1.3 * 1.2 / 1e6)
