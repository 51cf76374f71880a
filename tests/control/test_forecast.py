"""The MPC's forecast pieces: period, level, schedule, ripple shares and reserves."""

import numpy as np
import pytest

from facility.control.forecast import (block_mean, estimate_period_steps, level_forecast,
                                       level_window_steps, measured_level, moving_mean,
                                       ripple_of, ripple_reserves_mwh, ripple_shares)

from .conftest import square

DT = 0.01


def test_period_estimate_climbs_to_the_peak():
    # a square wave sampled finely: the lags just before the period are within 10 % of the
    # peak; the estimate must be the period itself, not the flank before it
    t = np.arange(0, 30, 0.05)
    x = square(t, period_s=3.0, duty=0.75, p_hi=68.0, p_lo=17.0)
    assert estimate_period_steps(x) == 60
    hist = np.tile([1.0, 1.0, 1.0, 0.0, 0.0], 20)
    assert estimate_period_steps(hist) == 5
    assert estimate_period_steps(np.random.default_rng(0).normal(size=400)) is None
    assert estimate_period_steps(np.ones(100)) is None


def test_level_over_whole_periods_is_the_mean():
    t = np.arange(0, 20, DT)
    x = square(t, period_s=2.0, duty=0.7, p_hi=100.0, p_lo=30.0)   # mean 79
    n = level_window_steps(200, 1000, 1000)
    assert n == 1000
    assert measured_level(x, n) == pytest.approx(79.0)
    assert level_window_steps(300, 500, 1000) == 900         # three whole periods
    assert level_window_steps(None, 500, 1000) == 500
    assert level_window_steps(2000, 500, 1000) == 500        # period longer than the window


def test_level_forecast_moves_with_the_schedule():
    sched = np.array([80.0, 80.0, 30.0, 30.0, 80.0])
    fc = level_forecast(75.0, 7, sched, 80.0)                 # measured 5 MW below schedule
    np.testing.assert_allclose(fc, [75, 75, 25, 25, 75, 75, 75])
    np.testing.assert_allclose(level_forecast(75.0, 3), [75, 75, 75])


def test_moving_and_block_means():
    x = np.arange(6.0)
    np.testing.assert_allclose(moving_mean(x, 3), [0, 0.5, 1, 2, 3, 4])
    np.testing.assert_allclose(block_mean(x, 4), [3.5])        # the last whole block


def test_ripple_shares_fast_first_then_by_rating():
    p = np.array([30.0, 120.0, 40.0])
    sh = ripple_shares(60.0, p, 0)
    assert sh.sum() == pytest.approx(1.0)
    assert sh[0] == pytest.approx(0.9 * 30 / 60)
    assert sh[1] / sh[2] == pytest.approx(3.0)
    # a storage that cannot follow (the UPS here) takes none
    sh = ripple_shares(60.0, p, 0, follows=np.array([True, False, True]))
    assert sh[1] == 0 and sh[2] == pytest.approx(1 - 0.45)
    np.testing.assert_allclose(ripple_shares(10.0, p, 0), [1, 0, 0])   # the fast one can take all
    np.testing.assert_allclose(ripple_shares(np.inf, p, 0), [1, 0, 0])


def test_ripple_reserve_of_a_square_wave_is_its_half_cycle_energy():
    # 100 / 30 MW, duty 0.7, 2 s: the ripple is +21 MW for 1.4 s and -49 MW for 0.6 s,
    # so the integral swings by 21 * 1.4 = 29.4 MW s = 8.17e-3 MWh within a period
    t = np.arange(0, 20, DT)
    x = square(t, period_s=2.0, duty=0.7, p_hi=100.0, p_lo=30.0)
    rip = ripple_of(x, 200)
    assert abs(rip.mean()) < 1e-9
    res = ripple_reserves_mwh(rip, DT, 200, np.array([0.25, 0.75]))
    np.testing.assert_allclose(res, np.array([0.25, 0.75]) * 29.4 / 3600, rtol=1e-3)
