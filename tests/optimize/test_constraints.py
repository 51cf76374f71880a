"""One behaviour test per constraint family, checked with facility.metrics on the PCC power."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, RackStorageConfig, SpecConfig, UpsConfig
from facility.errors import InfeasibleError, exit_code_for
from facility.optimize import size_storage, solve_dispatch
from facility.optimize.model.windows import lag_bounds

OPT = OptimizeConfig(energy_price_usd_per_mwh=60.0)
TOL = 1e-6


def load_profile(dt_s=0.1, horizon_s=120.0, seed=0):
    """Square wave 100/40 MW, 2 s period, starting at 30 s, with some noise."""
    t = np.arange(int(round(horizon_s / dt_s))) * dt_s
    p = np.where((t % 2.0) < 1.4, 100.0, 40.0)
    p = np.where(t >= 30.0, p, 10.0)
    return p + np.random.default_rng(seed).normal(0, 1.0, t.size)


def bess(**kw):
    base = dict(enabled=True, extendable=True, cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0,
                initial_soc_frac=0.5, min_soc_frac=0.1, max_soc_frac=0.9)
    base.update(kw)
    return BessConfig(**base)


def test_ramp_per_second_limits_hold_and_bind():
    dt = 0.1
    load = load_profile(dt)
    spec = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=3.0, ramp_window_s=1.0)
    r = size_storage(load, dt, {"bess": bess()}, spec, OPT)
    up, down = metrics.max_ramp_mw_per_s(r.p_pcc_mw, dt, 1.0)
    assert up <= 2.0 + TOL and down <= 3.0 + TOL
    assert max(up / 2.0, down / 3.0) > 0.99  # a limit binds (else no storage would be bought)
    raw_up, _ = metrics.max_ramp_mw_per_s(load, dt, 1.0)
    assert raw_up > 10.0


def test_ramp_per_minute_limit():
    dt = 0.5
    load = load_profile(dt, 300.0)
    spec = SpecConfig(max_ramp_mw_per_min=20.0)
    r = size_storage(load, dt, {"bess": bess()}, spec, OPT)
    assert metrics.max_ramp_mw_per_min(r.p_pcc_mw, dt) <= 20.0 + TOL
    assert metrics.max_ramp_mw_per_min(r.p_pcc_mw, dt) > 19.9


def test_window_swing_limit():
    dt = 0.1
    load = load_profile(dt)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)
    r = size_storage(load, dt, {"bess": bess()}, spec, OPT)
    sw = metrics.max_window_swing_mw(r.p_pcc_mw, dt, 5.0)
    assert 9.99 < sw <= 10.0 + TOL


def test_dynamic_range_limit():
    dt = 0.2
    load = load_profile(dt)
    spec = SpecConfig(max_dynamic_range_mw=50.0)
    r = size_storage(load, dt, {"bess": bess()}, spec, OPT)
    assert metrics.dynamic_range_mw(r.p_pcc_mw) <= 50.0 + TOL


def test_power_limit_and_soc_bounds_of_fixed_storage():
    dt = 0.1
    load = load_profile(dt, 60.0)
    b = bess(extendable=False, p_rated_mw=50.0, e_rated_mwh=2.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=40.0)
    r = solve_dispatch(load, dt, {"bess": b}, spec, OPT)
    assert np.all(r.p_charge_mw["bess"] <= 50.0 + TOL) and np.all(r.p_discharge_mw["bess"] <= 50.0 + TOL)
    soc = r.soc_frac["bess"]
    assert soc.shape == (load.size + 1,)
    assert soc.min() >= 0.1 - TOL and soc.max() <= 0.9 + TOL
    assert r.p_rated_mw_opt["bess"] == 50.0 and r.e_rated_mwh_opt["bess"] == 2.0


def test_soc_dynamics_with_losses_and_self_discharge():
    dt = 1.0
    load = load_profile(dt, 600.0)
    b = bess(eff_charge_frac=0.9, eff_discharge_frac=0.8, self_discharge_frac_per_h=0.5)
    spec = SpecConfig(max_ramp_mw_per_min=30.0)
    r = size_storage(load, dt, {"bess": b}, spec, OPT)
    e = r.soc_frac["bess"] * r.e_rated_mwh_opt["bess"]
    h = dt / 3600.0
    pred = e[:-1] * (1 - 0.5 * h) + h * (0.9 * r.p_charge_mw["bess"] - r.p_discharge_mw["bess"] / 0.8)
    np.testing.assert_allclose(e[1:], pred, atol=1e-7)
    # losses are paid: the PCC draws more energy than the load (terminal SoC >= initial)
    assert r.p_pcc_mw.sum() > load.sum()
    np.testing.assert_allclose(r.p_pcc_mw, load + r.p_storage_mw["bess"], atol=1e-9)


@pytest.mark.parametrize("policy", ["at_least_initial", "equal_initial", "free"])
def test_terminal_soc_policy(policy):
    dt = 1.0
    load = np.r_[np.full(100, 50.0), np.full(100, 80.0)]
    b = bess(extendable=False, p_rated_mw=40.0, e_rated_mwh=2.0, initial_soc_frac=0.5,
             eff_charge_frac=1.0, eff_discharge_frac=1.0, terminal_soc=policy)
    spec = SpecConfig(max_ramp_mw_per_min=10.0)
    r = solve_dispatch(load, dt, {"bess": b}, spec, OptimizeConfig(energy_price_usd_per_mwh=0.0))
    soc = r.soc_frac["bess"]
    if policy == "at_least_initial":
        assert soc[-1] >= 0.5 - TOL
    elif policy == "equal_initial":
        assert soc[-1] == pytest.approx(0.5, abs=1e-7)
    # free lets it end lower: same case with terminal override
    r2 = solve_dispatch(load, dt, {"bess": b}, spec, OptimizeConfig(energy_price_usd_per_mwh=0.0),
                        terminal="free", initial_soc_frac={"bess": 0.8})
    assert r2.soc_frac["bess"][0] == pytest.approx(0.8)


def test_ups_reserve_raises_the_soc_floor():
    dt = 0.5
    load = load_profile(dt, 120.0)
    ups = UpsConfig(enabled=True, extendable=True, cost_usd_per_kw=100.0, cost_usd_per_kwh=100.0,
                    min_soc_frac=0.1, reserve_frac=0.3, initial_soc_frac=0.7)
    r = size_storage(load, dt, {"ups": ups}, SpecConfig(window_s=5.0, max_window_swing_mw=20.0), OPT)
    assert r.soc_frac["ups"].min() >= 0.4 - TOL


def test_storage_converter_ramp_limit():
    dt = 0.1
    load = load_profile(dt, 60.0)
    b = bess(max_ramp_mw_per_s=1000.0)
    r = size_storage(load, dt, {"bess": b}, SpecConfig(window_s=5.0, max_window_swing_mw=30.0), OPT)
    assert np.abs(np.diff(r.p_storage_mw["bess"])).max() <= 1000.0 * dt + TOL


def test_rack_storage_plus_bess_both_extendable_share_the_work():
    dt = 0.5
    load = load_profile(dt, 300.0)
    rack = RackStorageConfig(enabled=True, extendable=True, cost_usd_per_kw=50.0,
                             cost_usd_per_kwh=20000.0, min_soc_frac=0.0, max_soc_frac=1.0)
    b = bess(cost_usd_per_kw=300.0, cost_usd_per_kwh=200.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0, max_ramp_mw_per_min=20.0)
    r = size_storage(load, dt, {"rack_storage": rack, "bess": b}, spec, OPT)
    assert r.p_rated_mw_opt["rack_storage"] > 1.0  # cheap power takes the fast swing
    assert r.e_rated_mwh_opt["bess"] > r.e_rated_mwh_opt["rack_storage"]  # cheap energy the ramp
    assert metrics.max_window_swing_mw(r.p_pcc_mw, dt, 5.0) <= 10.0 + TOL
    assert metrics.max_ramp_mw_per_min(r.p_pcc_mw, dt) <= 20.0 + TOL


def test_pcc_history_enters_the_window_limits():
    dt = 1.0
    load = np.full(30, 60.0)
    b = bess(extendable=False, p_rated_mw=50.0, e_rated_mwh=5.0, terminal_soc="free")
    spec = SpecConfig(max_ramp_mw_per_min=5.0)
    hist = np.full(20, 40.0)
    r = solve_dispatch(load, dt, {"bess": b}, spec, OPT, p_pcc_history_mw=hist)
    full = np.r_[hist, r.p_pcc_mw]
    assert metrics.max_ramp_mw_per_min(full, dt) <= 5.0 + TOL
    assert r.p_pcc_mw[0] <= 45.0 + TOL


def test_implied_lag_bounds_are_dropped():
    spec = SpecConfig(max_ramp_up_mw_per_s=20.0, ramp_window_s=1.0, window_s=5.0,
                      max_window_swing_mw=10.0, max_ramp_mw_per_min=30.0)
    kept = {(b.limit, b.direction) for b in lag_bounds(spec, 0.1)}
    assert ("max_ramp_up_mw_per_s", "up") not in kept  # 10 MW over 5 s implies 20 MW over 1 s
    assert ("max_window_swing_mw", "up") in kept and ("max_ramp_mw_per_min", "down") in kept


def test_infeasible_raises_with_diagnosis():
    dt = 0.1
    load = load_profile(dt, 60.0)
    b = bess(extendable=False, p_rated_mw=5.0, e_rated_mwh=1.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)
    with pytest.raises(InfeasibleError) as ei:
        solve_dispatch(load, dt, {"bess": b}, spec, OPT)
    err = ei.value
    assert exit_code_for(err) == 3
    assert "max_window_swing_mw" in str(err)
    worst = err.diagnosis["slack"]["max_window_swing_mw:up"]
    assert worst["unit"] == "MW" and worst["max"] > 1.0 and worst["t_s"] >= 30.0


def test_without_diagnosis_an_infeasible_solve_raises_at_once():
    """The MPC's attempts only pass an infeasible one to the next: no penalized re-solve, no
    slack report; outside the block the diagnosis is back."""
    from facility.optimize.solvers.solve import without_diagnosis

    dt = 0.1
    load = load_profile(dt, 60.0)
    b = bess(extendable=False, p_rated_mw=5.0, e_rated_mwh=1.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)
    with without_diagnosis(), pytest.raises(InfeasibleError, match="not diagnosed") as ei:
        solve_dispatch(load, dt, {"bess": b}, spec, OPT)
    assert "slack" not in ei.value.diagnosis and exit_code_for(ei.value) == 3
    with pytest.raises(InfeasibleError, match="max_window_swing_mw"):
        solve_dispatch(load, dt, {"bess": b}, spec, OPT)


def test_allow_slack_returns_a_plan_with_reported_violation():
    dt = 0.1
    load = load_profile(dt, 60.0)
    b = bess(extendable=False, p_rated_mw=5.0, e_rated_mwh=1.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)
    r = solve_dispatch(load, dt, {"bess": b}, spec, OPT.model_copy(update={"allow_slack": True}))
    assert r.info.status == "slack" and r.info.slack
    assert np.all(np.abs(r.p_storage_mw["bess"]) <= 5.0 + TOL)


def test_extendable_bound_too_small_is_infeasible():
    dt = 0.5
    load = load_profile(dt, 60.0)
    b = bess(max_p_rated_mw=1.0)
    with pytest.raises(InfeasibleError, match="max_ramp_mw_per_min"):
        size_storage(load, dt, {"bess": b}, SpecConfig(max_ramp_mw_per_min=5.0), OPT)


def test_matrix_build_matches_the_naive_rule_based_pyomo_build():
    from facility.optimize.model.formulation import resolve_storage
    from facility.optimize.strategies.naive import solve_naive

    dt = 0.2
    load = load_profile(dt, 40.0)
    b = bess(eff_charge_frac=0.9, self_discharge_frac_per_h=0.1)
    spec = SpecConfig(max_ramp_up_mw_per_s=4.0, max_ramp_down_mw_per_s=6.0, window_s=5.0,
                      max_window_swing_mw=15.0, max_ramp_mw_per_min=25.0, max_dynamic_range_mw=80.0)
    r = size_storage(load, dt, {"bess": b}, spec, OPT)
    ref = solve_naive(load, dt, {"bess": resolve_storage("bess", b, OPT, 40.0 / 3600)}, spec, 60.0)
    assert ref["termination"] == "optimal"
    assert r.info.relaxed_objective_usd == pytest.approx(1000 * ref["objective_kusd"], rel=1e-7)


def test_plan_never_charges_and_discharges_at_once():
    # a pre-ramp before a job start with a tight SoC headroom: the LP would rather burn energy
    # by charging and discharging at once (lossy) than buy energy capacity
    dt = 0.5
    t = np.arange(600) * dt
    load = np.where(t >= 120.0, 40.0, 5.0)
    b = bess(initial_soc_frac=0.9, max_soc_frac=0.95, min_soc_frac=0.05, eff_charge_frac=0.9,
             eff_discharge_frac=0.9)
    r = size_storage(load, dt, {"bess": b}, SpecConfig(max_ramp_mw_per_min=10.0), OPT)
    assert np.minimum(r.p_charge_mw["bess"], r.p_discharge_mw["bess"]).max() <= 1e-6
    assert r.info.objective_usd >= r.info.relaxed_objective_usd - 1e-6
    assert metrics.max_ramp_mw_per_min(r.p_pcc_mw, dt) <= 10.0 + TOL


def test_limit_margin_tightens_the_window_limits():
    dt = 0.1
    load = load_profile(dt, 60.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)
    r = size_storage(load, dt, {"bess": bess()}, spec, OPT.model_copy(update={"limit_margin_frac": 0.2}))
    assert metrics.max_window_swing_mw(r.p_pcc_mw, dt, 5.0) <= 8.0 + TOL
