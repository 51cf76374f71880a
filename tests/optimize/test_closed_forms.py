"""Hand-computable optimization cases: 3-step LP, square wave, job start under a minute ramp."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage, sizing_to_json

NO_PRICE = OptimizeConfig(annualize=False, energy_price_usd_per_mwh=0.0)


def lossless(**kw):
    base = dict(enabled=True, extendable=True, eff_charge_frac=1.0, eff_discharge_frac=1.0,
                min_soc_frac=0.0, max_soc_frac=1.0, initial_soc_frac=0.5)
    base.update(kw)
    return BessConfig(**base)


@pytest.mark.parametrize("solver", ["highs", "appsi_highs"])
def test_three_step_lp_known_objective(solver):
    # load 10/20/10 MW for 1 h each; swing <= 2 MW over any 2 h (all pairs); lossless,
    # SoC 0..1 starting at 0.5, end >= start. By hand: PCC 14/16/14, storage +4/-4/+4 MW,
    # P = 4 MW, E = 8 MWh (SoC 0.5 -> 1 -> 0.5 -> 1); 100 k$/MW * 4 + 10 k$/MWh * 8 = 480 k$.
    b = lossless(cost_usd_per_kw=100.0, cost_usd_per_kwh=10.0)
    spec = SpecConfig(window_s=7200.0, max_window_swing_mw=2.0)
    opt = NO_PRICE.model_copy(update={"solver": solver})
    r = size_storage(np.array([10.0, 20.0, 10.0]), 3600.0, {"bess": b}, spec, opt)
    assert r.info.objective_usd == pytest.approx(480_000.0, rel=1e-9)
    assert r.p_rated_mw_opt["bess"] == pytest.approx(4.0, rel=1e-9)
    assert r.e_rated_mwh_opt["bess"] == pytest.approx(8.0, rel=1e-9)
    np.testing.assert_allclose(r.p_pcc_mw, [14.0, 16.0, 14.0], atol=1e-9)
    np.testing.assert_allclose(r.soc_frac["bess"], [0.5, 1.0, 0.5, 1.0], atol=1e-9)
    js = sizing_to_json(r)
    assert js["bess"]["p_rated_mw_opt"] == pytest.approx(4.0)
    assert js["solver_status"] == "optimal" and js["n_variables"] > 0 and js["n_constraints"] > 0


def square_wave(p_hi, p_lo, duty, period_s, dt_s, n_periods):
    n = int(round(period_s / dt_s))
    one = np.where(np.arange(n) < int(round(duty * n)), p_hi, p_lo)
    return np.tile(one, n_periods)


def test_square_wave_charge_power_and_energy_swing():
    # facts §7: flat PCC at P̄ = D P_hi + (1-D) P_lo; charge P̄ - P_lo in the low phase,
    # energy swing D (1-D) (P_hi - P_lo) T per cycle. Discharge first, so SoC 1 -> 1 - ΔE/E -> 1.
    p_hi, p_lo, duty, period, dt = 100.0, 40.0, 0.75, 4.0, 0.25
    load = square_wave(p_hi, p_lo, duty, period, dt, 10)
    b = lossless(initial_soc_frac=1.0, terminal_soc="equal_initial", cost_usd_per_kw=10.0,
                 cost_usd_per_kwh=100.0)
    spec = SpecConfig(window_s=4.0, max_window_swing_mw=1e-6)
    r = size_storage(load, dt, {"bess": b}, spec, NO_PRICE)
    p_bar = duty * p_hi + (1 - duty) * p_lo
    np.testing.assert_allclose(r.p_pcc_mw, p_bar, atol=1e-4)
    low = load == p_lo
    np.testing.assert_allclose(r.p_charge_mw["bess"][low], p_bar - p_lo, atol=1e-4)
    assert r.p_rated_mw_opt["bess"] == pytest.approx(p_bar - p_lo, rel=1e-5)
    de_mwh = duty * (1 - duty) * (p_hi - p_lo) * period / 3600.0
    assert r.e_rated_mwh_opt["bess"] == pytest.approx(de_mwh, rel=1e-4)


def job_start_energy_mwh(dp_mw, r_mw, dt_s):
    """Perfect-foresight energy for a step ΔP under 'rise within any 60 s <= R'.

    On a grid of dt the limit bounds P[t2] - P[t1] for lags up to k = floor(60/dt) steps, so
    the fastest rise is a linear ramp of R per k steps, i.e. ρ = R / (k dt) [MW/s] (a lag-k
    difference of exactly R, any shorter lag less). Centered on the step, the storage charges
    the triangle ½ (ΔP/2)(ΔP/(2ρ)) before it and gives the same back after it:
    E = ΔP² / (8 ρ) = ΔP² k dt / (8 R) [MW·s]; with k dt = 60 s the familiar ΔP²/(8R)
    [MW·min] (½ ΔP²/R without foresight). The sampled ramp's sums equal the triangles because
    the placement is symmetric.
    """
    k = metrics.window_steps(60.0, dt_s)
    return dp_mw ** 2 * k * dt_s / (8.0 * r_mw) / 3600.0


@pytest.mark.parametrize("dt_s", [4.0, 60.0 / 31.0, 7.0])
def test_job_start_under_minute_ramp_needs_dp2_over_8r(dt_s):
    dp, r = 4.0, 1.0
    n = int(round(1200.0 / dt_s))
    t = np.arange(n) * dt_s
    load = np.where(t >= 600.0 - 1e-9, dp, 0.0)
    b = lossless(initial_soc_frac=0.0, cost_usd_per_kw=0.0, cost_usd_per_kwh=100.0)
    spec = SpecConfig(max_ramp_mw_per_min=r)
    res = size_storage(load, dt_s, {"bess": b}, spec, NO_PRICE)
    assert res.e_rated_mwh_opt["bess"] == pytest.approx(job_start_energy_mwh(dp, r, dt_s), rel=1e-6)
    # ~ ΔP²/(8R) = 2 MW·min; without foresight ½ ΔP²/R = 8 MW·min
    assert res.e_rated_mwh_opt["bess"] * 60 == pytest.approx(dp ** 2 / (8 * r), rel=0.07)
    assert metrics.max_ramp_mw_per_min(res.p_pcc_mw, dt_s) <= r + 1e-6
