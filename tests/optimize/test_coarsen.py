"""Exact time coarsening: the factor's conditions, and the same optimum on both grids."""

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, RackStorageConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.strategies.coarsen import coarsening_factor, expand_steps
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.certificates.verify import lag_bound_violation_mw

SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=3.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=8.0)


def bess(**kw):
    base = dict(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                min_soc_frac=0.1, max_soc_frac=0.9, initial_soc_frac=0.5,
                cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    base.update(kw)
    return BessConfig(**base)


def data_of(storages, n, dt):
    return {k: resolve_storage(k, c, OptimizeConfig(annualize=False), n * dt / 3600.0) for k, c in storages.items()}


def stepped_load(dt_s=0.1):
    """Job start from 20 MW at 10 s, a 70/50 MW wave of 2 s (on the 0.5 s grid), stop at 60 s."""
    t = np.arange(int(round(80.0 / dt_s)))
    per, on = int(round(2.0 / dt_s)), int(round(1.5 / dt_s))
    wave = np.where(t % per < on, 70.0, 50.0)
    return np.where((t >= int(round(10.0 / dt_s))) & (t < int(round(60.0 / dt_s))), wave, 20.0)


def test_factor_is_the_gcd_of_load_changes_windows_and_horizon():
    load = stepped_load()  # changes at multiples of 5 steps; windows of 10, 50, 600 steps
    assert coarsening_factor(load, 0.1, data_of({"bess": bess()}, load.size, 0.1), SPEC) == 5
    # a load change off the grid of 5 steps
    off = load.copy()
    off[203:207] += 1.0
    assert coarsening_factor(off, 0.1, data_of({"bess": bess()}, load.size, 0.1), SPEC) == 1
    # a window of 0.7 s (7 steps) leaves no common factor
    spec = SPEC.model_copy(update={"ramp_window_s": 0.7})
    assert coarsening_factor(load, 0.1, data_of({"bess": bess()}, load.size, 0.1), spec) == 1


@pytest.mark.parametrize("kw", [{"self_discharge_frac_per_h": 0.1}, {"max_ramp_mw_per_s": 5.0}])
def test_no_coarsening_with_self_discharge_or_converter_ramp(kw):
    load = stepped_load()
    assert coarsening_factor(load, 0.1, data_of({"bess": bess(**kw)}, load.size, 0.1), SPEC) == 1


def test_expand_steps_holds_powers_and_interpolates_energy():
    np.testing.assert_array_equal(expand_steps(np.array([1.0, 2.0]), 3), [1, 1, 1, 2, 2, 2])
    np.testing.assert_allclose(expand_steps(np.array([0.0, 3.0, 0.0]), 3, boundaries=True),
                               [0, 1, 2, 3, 2, 1, 0])


def test_coarse_grid_gives_the_fine_optimum():
    # binding ramp limits on a job start and stop (the fine optimum ramps step by step, the
    # coarse one in 0.5 s stairs), lossy storages of two kinds, a dynamic-range limit
    load = stepped_load()
    spec = SPEC.model_copy(update={"max_dynamic_range_mw": 70.0, "max_ramp_mw_per_min": None})
    storages = {"bess": bess(eff_charge_frac=0.95, eff_discharge_frac=0.95, cost_usd_per_kwh=20000.0),
                "rack_storage": RackStorageConfig(enabled=True, extendable=True,
                                                  max_p_rated_mw=20.0, max_e_rated_mwh=1.0,
                                                  cost_usd_per_kw=80.0, cost_usd_per_kwh=30000.0)}
    fine = size_storage(load, 0.1, storages, spec, OptimizeConfig(annualize=False, coarsen=False, periodic=False))
    coarse = size_storage(load, 0.1, storages, spec, OptimizeConfig(annualize=False, periodic=False))
    assert fine.info.step_factor == 1 and coarse.info.step_factor == 5
    assert coarse.info.n_variables < fine.info.n_variables / 4
    z_f, z_c = fine.info.relaxed_objective_usd, coarse.info.relaxed_objective_usd
    # the case is not trivial: the fine optimum's PCC moves within the 0.5 s groups
    assert np.max(np.abs(np.diff(fine.p_pcc_mw.reshape(-1, 5), axis=1))) > 0.01
    assert z_c == pytest.approx(z_f, rel=1e-7)
    # the expanded plan lives on the fine grid and meets every limit there
    assert coarse.p_pcc_mw.size == load.size and coarse.soc_frac["bess"].size == load.size + 1
    assert lag_bound_violation_mw(coarse.p_pcc_mw, spec, 0.1) <= 1e-6
    assert np.ptp(coarse.p_pcc_mw) <= 70.0 + 1e-6
    s = coarse.soc_frac["bess"]
    assert s.min() >= 0.1 - 1e-9 and s.max() <= 0.9 + 1e-9 and s[-1] >= s[0] - 1e-9


def test_coarsen_false_keeps_the_given_grid():
    load = stepped_load()
    r = size_storage(load[:300], 0.1, {"bess": bess()}, SPEC, OptimizeConfig(annualize=False, coarsen=False))
    assert r.info.step_factor == 1 and r.info.method == "full"
