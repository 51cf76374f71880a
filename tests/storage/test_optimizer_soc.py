"""Optimizer SoC equals simulator SoC on the same dispatch."""

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.storage import StorageParams, assert_storage_invariants, simulate_soc


def _lp_soc(p_ch, p_dis, prm, dt_s):
    """The optimizer's SoC equation written out independently (split variables)."""
    dt_h = dt_s / 3600
    k = 1 - prm.self_discharge_frac_per_h * dt_h
    e = np.empty(p_ch.size)
    prev = prm.e_initial_mwh
    for t in range(p_ch.size):
        prev = prev * k + (prm.eff_charge_frac * p_ch[t] - p_dis[t] / prm.eff_discharge_frac) * dt_h
        e[t] = prev
    return e / prm.e_rated_mwh


def test_simulator_reproduces_the_lp_soc_equation_on_a_feasible_plan():
    prm = StorageParams("bess", p_rated_mw=20.0, e_rated_mwh=2.0, eff_charge_frac=0.93,
                        eff_discharge_frac=0.91, min_soc_frac=0.05, max_soc_frac=0.95,
                        initial_soc_frac=0.5, self_discharge_frac_per_h=0.02)
    t = np.arange(0, 600, 0.5)
    p = 15.0 * np.sin(2 * np.pi * t / 120.0)
    tr = simulate_soc(p, prm, 0.5)
    assert not tr.saturated.any()
    np.testing.assert_allclose(tr.soc_frac, _lp_soc(np.maximum(p, 0), np.maximum(-p, 0), prm, 0.5),
                               atol=1e-12)


@pytest.mark.parametrize("self_discharge", [0.0, 0.2])
def test_real_optimizer_dispatch_matches_simulator(self_discharge):
    optimize = pytest.importorskip("facility.optimize")
    if not hasattr(optimize, "solve_dispatch"):
        pytest.skip("facility.optimize.solve_dispatch not available")
    cfg = BessConfig(enabled=True, p_rated_mw=30.0, e_rated_mwh=1.0, eff_charge_frac=0.95,
                     eff_discharge_frac=0.9, min_soc_frac=0.1, max_soc_frac=0.9,
                     initial_soc_frac=0.5, self_discharge_frac_per_h=self_discharge)
    dt = 0.5
    t = np.arange(0, 120, dt)
    load = np.where((t % 6.0) < 4.0, 100.0, 60.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=15.0)
    res = optimize.solve_dispatch(load, dt, {"bess": cfg}, spec, OptimizeConfig())
    prm = StorageParams.from_config("bess", cfg)
    p = np.asarray(res.p_storage_mw["bess"], dtype=float)
    tr = simulate_soc(p, prm, dt)
    assert not tr.saturated.any()          # LP round-off at a bound is below the flag tolerance
    np.testing.assert_allclose(tr.p_mw, p, atol=1e-5)
    soc_opt = np.asarray(res.soc_frac["bess"], dtype=float)     # (T+1,) at step boundaries
    assert soc_opt[0] == pytest.approx(prm.initial_soc_frac)
    np.testing.assert_allclose(tr.soc_frac, soc_opt[1:], atol=1e-6)
    assert_storage_invariants(p, soc_opt[1:], prm, dt, tol_soc_frac=1e-6,
                              p_charge_mw=res.p_charge_mw["bess"],
                              p_discharge_mw=res.p_discharge_mw["bess"])
