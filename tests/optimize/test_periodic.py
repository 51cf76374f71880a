"""Periodic steady-state reduction: detection, the proven bracket, and its fallbacks."""

import warnings

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.strategies.periodic import (PeriodicStretch, Reduction, expand, find_periodic_stretch,
                                        plan_reduction)
from facility.optimize.certificates.verify import lag_bound_violation_mw, verify_plan
from facility.optimize.model.windows import lag_bounds

SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                  window_s=5.0, max_window_swing_mw=5.0)


def bess(**kw):
    base = dict(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    base.update(kw)
    return BessConfig(**base)


def training_load(horizon_s, dt_s, start_s=None, stop_s=None, idle_mw=5.0):
    """100/40 MW square wave, period 4 s, duty 0.8; idle outside [start_s, stop_s)."""
    t = np.arange(int(round(horizon_s / dt_s))) * dt_s
    p = np.where((t % 4.0) < 3.2, 100.0, 40.0)
    if start_s is None:
        return p
    return np.where((t >= start_s) & (t < stop_s), p, idle_mw)


def both(load, dt_s, storages, spec=SPEC, **opt):
    per = size_storage(load, dt_s, storages, spec, OptimizeConfig(periodic=True, **opt))
    full = size_storage(load, dt_s, storages, spec, OptimizeConfig(periodic=False, **opt))
    return per, full


# --- detection ---------------------------------------------------------------------------

def test_find_stretch_of_a_square_wave_with_idle_ends():
    load = training_load(600.0, 0.5, start_s=60.0, stop_s=570.0)
    st = find_periodic_stretch(load)
    assert st is not None and st.period == 8  # 4 s at 0.5 s
    assert st.start <= 120 and st.stop >= 1140
    seg = load[st.start:st.stop]
    assert np.array_equal(seg[st.period:], seg[:-st.period])  # exactly periodic inside


def test_find_stretch_none_for_noise_and_short_loads():
    rng = np.random.default_rng(3)
    assert find_periodic_stretch(rng.normal(50.0, 5.0, 4000)) is None
    assert find_periodic_stretch(np.array([1.0, 2.0, 1.0])) is None


def test_plan_reduction_layout_and_expand():
    st = PeriodicStretch(start=10, stop=10 + 100 * 8, period=8)
    red = plan_reduction(st, k_block=10, n_steps=900)
    assert isinstance(red, Reduction)
    assert red.m == 3 and red.r % red.m == 0 and red.r >= 2 * red.m
    assert red.a == 10 + red.q * 8 and red.mid_stop <= st.stop
    up = red.upper_index(900)
    assert up.size == 900 - (red.r - 2) * 8
    # expand: the core's first period tiled r times, the stored energy drifting per period
    v = np.arange(up.size + 1, dtype=float)
    full = expand(red, v, drift=0.5)
    assert full.size == 901
    core = v[red.a:red.a + 8]
    np.testing.assert_allclose(full[red.a + 8 * 5:red.a + 8 * 6], core + 5 * 0.5)
    np.testing.assert_array_equal(full[red.mid_stop:], v[red.a + 16:])
    # too short a stretch to halve the horizon: no reduction
    assert plan_reduction(PeriodicStretch(0, 80, 8), k_block=10, n_steps=900) is None


def test_lag_bound_violation_matches_brute_force():
    rng = np.random.default_rng(0)
    x = np.cumsum(rng.normal(0.0, 1.0, 300))
    spec = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=1.5, ramp_window_s=3.0,
                      window_s=7.0, max_window_swing_mw=4.0)
    brute = -np.inf
    for lb in lag_bounds(spec, 1.0):
        for t2 in range(1, x.size):
            for t1 in range(max(0, t2 - lb.k), t2):
                d = x[t2] - x[t1] if lb.direction == "up" else x[t1] - x[t2]
                brute = max(brute, d - lb.bound_mw)
    assert lag_bound_violation_mw(x, spec, 1.0) == pytest.approx(brute, abs=1e-12)


# --- the bracket ---------------------------------------------------------------------------

def _check_bracket(per, full, tol=1e-4):
    i = per.info
    assert i.method == "periodic" and full.info.method == "full"
    z = full.info.relaxed_objective_usd
    assert i.lower_bound_usd <= z * (1 + 1e-7)  # a proven lower bound
    assert i.relaxed_objective_usd >= z * (1 - 1e-7)  # a feasible (restricted) plan
    assert (i.relaxed_objective_usd - z) / z <= tol
    assert 0.0 <= i.gap_frac
    assert i.n_variables < full.info.n_variables / 2


def test_fully_periodic_load_reaches_the_full_optimum():
    load = training_load(600.0, 0.5)
    per, full = both(load, 0.5, {"bess": bess()})
    _check_bracket(per, full)
    assert per.p_rated_mw_opt["bess"] == pytest.approx(full.p_rated_mw_opt["bess"], rel=1e-4)
    assert per.e_rated_mwh_opt["bess"] == pytest.approx(full.e_rated_mwh_opt["bess"], rel=1e-4)


def test_start_and_stop_transients_bracket_the_optimum():
    load = training_load(900.0, 0.5, start_s=40.0, stop_s=870.0)
    per, full = both(load, 0.5, {"bess": bess()})
    _check_bracket(per, full)


def test_self_discharge_uses_a_cyclic_core():
    b = bess(self_discharge_frac_per_h=0.5)
    per, full = both(training_load(600.0, 0.5), 0.5, {"bess": b})
    _check_bracket(per, full)


def test_expanded_plan_meets_every_limit_on_the_full_horizon():
    dt = 0.5
    load = training_load(900.0, dt, start_s=40.0, stop_s=870.0)
    storages = {"bess": bess()}
    per = size_storage(load, dt, storages, SPEC, OptimizeConfig(periodic=True))
    assert per.info.method == "periodic"
    assert per.p_pcc_mw.size == load.size and per.soc_frac["bess"].size == load.size + 1
    assert lag_bound_violation_mw(per.p_pcc_mw, SPEC, dt) <= 1e-5
    data = {"bess": resolve_storage("bess", storages["bess"], OptimizeConfig(), load.size * dt / 3600)}
    e_r = per.e_rated_mwh_opt["bess"]
    plan = {"bess": (per.p_rated_mw_opt["bess"], e_r, per.p_charge_mw["bess"],
                     per.p_discharge_mw["bess"], per.soc_frac["bess"] * e_r)}
    assert verify_plan(load, dt, data, SPEC, plan) is None
    # and the check is not blind: a plan that skips one discharge breaks a window limit
    bad_dis = per.p_discharge_mw["bess"].copy()
    bad_dis[np.argmax(bad_dis)] = 0.0
    bad = {"bess": (plan["bess"][0], e_r, plan["bess"][2], bad_dis, plan["bess"][4])}
    assert verify_plan(load, dt, data, SPEC, bad) is not None


# --- fallbacks -----------------------------------------------------------------------------

def test_periodic_false_and_short_auto_solve_the_full_lp():
    load = training_load(300.0, 0.5)
    for periodic in (False, None):  # auto skips horizons below MIN_AUTO_STEPS
        r = size_storage(load, 0.5, {"bess": bess()}, SPEC, OptimizeConfig(periodic=periodic))
        assert r.info.method == "full" and r.info.period_steps == 0


def test_periodic_true_on_a_non_repeating_load_warns_and_solves_the_full_lp():
    rng = np.random.default_rng(1)
    load = 70.0 + np.cumsum(rng.normal(0.0, 1.5, 400))
    spec = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0)
    with pytest.warns(UserWarning, match="periodic"):
        r = size_storage(load, 0.5, {"bess": bess()}, spec, OptimizeConfig(periodic=True))
    assert r.info.method == "full"
    assert r.info.gap_frac <= 1e-4


def test_full_method_reports_its_own_bound():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = size_storage(training_load(100.0, 0.5), 0.5, {"bess": bess()}, SPEC,
                         OptimizeConfig(periodic=False))
    assert r.info.lower_bound_usd == pytest.approx(r.info.relaxed_objective_usd, rel=1e-12)


def test_auto_mode_reduces_a_long_steady_job():
    # 2,400 steps (over MIN_AUTO_STEPS) of an exactly repeating load: the default picks the
    # reduction, proves its gap within optimize.max_gap_frac, and returns full-length arrays
    load = training_load(1200.0, 0.5)
    r = size_storage(load, 0.5, {"bess": bess()}, SPEC, OptimizeConfig(coarsen=False))
    assert r.info.method == "periodic" and r.info.period_steps == 8
    assert r.info.gap_frac <= 1e-4 and r.info.lower_bound_usd <= r.info.objective_usd
    assert r.p_pcc_mw.size == load.size
    assert lag_bound_violation_mw(r.p_pcc_mw, SPEC, 0.5) <= 1e-5
