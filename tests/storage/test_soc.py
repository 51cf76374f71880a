"""SoC bookkeeping: hand-computed cases, saturation, converter dynamics, invariants."""

import numpy as np
import pytest

from facility.config.schema import BessConfig, UpsConfig
from facility.errors import ScenarioError
from facility.storage import (
    StorageParams,
    assert_storage_invariants,
    simulate_soc,
    storage_invariants,
    storage_metrics,
)

DT = 36.0          # 0.01 h: easy hand arithmetic


def params(**kw):
    base = dict(name="bess", p_rated_mw=10.0, e_rated_mwh=1.0, eff_charge_frac=0.9,
                eff_discharge_frac=0.8, min_soc_frac=0.1, max_soc_frac=0.9, initial_soc_frac=0.5)
    base.update(kw)
    return StorageParams(**base)


def test_hand_computed_charge_and_discharge():
    p = params()
    tr = simulate_soc([5.0, -4.0, 0.0], p, DT)
    # +5 MW for 0.01 h at eta_c 0.9: +0.045 MWh; -4 MW at eta_d 0.8: -0.05 MWh
    np.testing.assert_allclose(tr.e_mwh, [0.545, 0.495, 0.495])
    np.testing.assert_allclose(tr.soc_frac, [0.545, 0.495, 0.495])
    np.testing.assert_allclose(tr.p_mw, [5.0, -4.0, 0.0])
    assert not tr.saturated.any()


def test_power_limit_saturates_and_flags():
    tr = simulate_soc([15.0, -12.0, 3.0], params(), DT)
    np.testing.assert_allclose(tr.p_mw, [10.0, -10.0, 3.0])
    assert tr.saturated.tolist() == [True, True, False]
    assert tr.limit.tolist() == [1, 1, 0]


def test_energy_limits_never_exceeded():
    p = params()
    tr = simulate_soc(np.full(200, 10.0), p, DT)          # charge far beyond full
    assert tr.soc_frac.max() == pytest.approx(0.9, abs=1e-12)
    assert tr.soc_frac.max() <= 0.9 + 1e-12
    first = int(np.argmax(tr.saturated))
    # 0.4 MWh of headroom at 0.09 MWh per step: steps 0..3 free, step 4 clips at 0.04 MWh
    assert first == 4 and tr.limit[first] == 3
    assert tr.p_mw[4] == pytest.approx(0.04 / 0.9 / 0.01)
    tr = simulate_soc(np.full(200, -10.0), p, DT)
    assert tr.soc_frac.min() == pytest.approx(0.1, abs=1e-12)
    assert tr.limit[tr.saturated].tolist()[0] == 2
    assert_storage_invariants(tr.p_mw, tr.soc_frac, p, DT)


def test_self_discharge_closed_form():
    p = params(self_discharge_frac_per_h=0.5)
    tr = simulate_soc(np.zeros(10), p, DT)
    k = 1 - 0.5 * 0.01
    np.testing.assert_allclose(tr.e_mwh, 0.5 * k ** np.arange(1, 11))
    assert_storage_invariants(tr.p_mw, tr.soc_frac, p, DT)


def test_ramp_limit_and_response_lag():
    tr = simulate_soc(np.full(5, 8.0), params(max_ramp_mw_per_s=0.05), DT)   # 1.8 MW per step
    np.testing.assert_allclose(tr.p_mw, [1.8, 3.6, 5.4, 7.2, 8.0])
    tau = 72.0
    tr = simulate_soc(np.full(4, 4.0), params(response_s=tau), DT)
    np.testing.assert_allclose(tr.p_mw, 4.0 * (1 - np.exp(-DT * np.arange(1, 5) / tau)))
    assert not tr.saturated.any()        # dynamics are not saturation


def test_random_setpoints_keep_invariants():
    rng = np.random.default_rng(1)
    p = params(self_discharge_frac_per_h=0.01, response_s=5.0, max_ramp_mw_per_s=1.0)
    tr = simulate_soc(rng.normal(0, 8, 5000), p, 1.0)
    r = assert_storage_invariants(tr.p_mw, tr.soc_frac, p, 1.0)
    assert r["max_step_residual_mwh"] < 1e-12
    # only self-discharge may sink an idle storage below its minimum
    assert tr.soc_frac.min() >= 0.1 - 1e-4
    p = params(response_s=5.0, max_ramp_mw_per_s=1.0)
    tr = simulate_soc(rng.normal(-2, 8, 5000), p, 1.0)      # drifts into the lower bound
    assert_storage_invariants(tr.p_mw, tr.soc_frac, p, 1.0)
    assert tr.saturated.any()
    assert tr.soc_frac.min() >= 0.1 - 1e-12 and tr.soc_frac.max() <= 0.9 + 1e-12


def test_invariant_check_catches_broken_soc():
    p = params()
    tr = simulate_soc([5.0, -4.0, 0.0], p, DT)
    bad = tr.soc_frac.copy()
    bad[1] += 0.01
    with pytest.raises(AssertionError, match="energy balance"):
        assert_storage_invariants(tr.p_mw, bad, p, DT)
    with pytest.raises(AssertionError, match="simultaneous"):
        assert_storage_invariants(None, tr.soc_frac, p, DT, p_charge_mw=[5.0, 1.0, 0.0],
                                  p_discharge_mw=[0.0, 5.0, 0.0])
    out = storage_invariants(None, [0.95], p, DT, p_charge_mw=[0.0], p_discharge_mw=[0.0])
    assert out["max_soc_above_max_frac"] == pytest.approx(0.05)


def test_zero_energy_storage_delivers_nothing():
    p = params(e_rated_mwh=0.0)
    tr = simulate_soc([3.0, -3.0], p, DT)
    np.testing.assert_allclose(tr.p_mw, 0.0)
    assert tr.saturated.all()
    np.testing.assert_allclose(tr.soc_frac, 0.5)


def test_from_config_folds_ups_reserve_and_overrides():
    ups = UpsConfig(enabled=True, p_rated_mw=100, e_rated_mwh=10, min_soc_frac=0.1,
                    reserve_frac=0.3, initial_soc_frac=0.6)
    p = StorageParams.from_config("ups", ups)
    assert p.min_soc_frac == pytest.approx(0.4) and p.reserve_frac == 0.3
    assert p.e_min_mwh == pytest.approx(4.0)
    p2 = StorageParams.from_config("ups", ups, p_rated_mw=50.0, e_rated_mwh=2.0)
    assert (p2.p_rated_mw, p2.e_rated_mwh) == (50.0, 2.0)
    with pytest.raises(ScenarioError, match="initial_soc_frac"):
        StorageParams.from_config("ups", ups.model_copy(update={"initial_soc_frac": 0.3}))
    with pytest.raises(ScenarioError, match="e_rated_mwh"):
        StorageParams.from_config("bess", BessConfig(enabled=True, p_rated_mw=1.0))


def test_storage_metrics_hand_computed():
    p = params()
    tr = simulate_soc([5.0, -4.0, -2.0, 0.0], p, DT)
    m = storage_metrics(tr, p, DT)
    assert m["throughput_mwh"] == pytest.approx(0.06)           # (4 + 2) MW x 0.01 h
    assert m["equivalent_full_cycles"] == pytest.approx(0.06)
    assert m["max_soc_frac"] == pytest.approx(0.545)
    assert m["min_soc_frac"] == pytest.approx(0.545 - 0.05 - 0.025)
    assert (m["p_rated_mw"], m["e_rated_mwh"]) == (10.0, 1.0)
