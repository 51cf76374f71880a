"""Power smoothing: closed forms for a square wave, exact ramp slopes at any dt, stop delay."""

from __future__ import annotations

import numpy as np
import pytest

from facility.gpu import apply_power_smoothing
from tests.gpu.conftest import square_wave

P_HI, P_LO, TDP = 1200.0, 240.0, 1200.0


@pytest.mark.parametrize("dt", [0.001, 0.01, 0.02, 0.05])
@pytest.mark.parametrize("floor_frac,duty", [(0.65, 0.7), (0.9, 0.5), (0.3, 0.8)])
def test_square_wave_floor_energy_overhead_closed_form(dt, floor_frac, duty):
    # infinite ramps: overhead = (F - P_lo)(1 - D) / P_mean
    t = np.arange(int(round(10.0 / dt))) * dt
    p, comp = square_wave(t, 1.0, duty, P_HI, P_LO)
    y, info = apply_power_smoothing(p[None], np.ones((1, t.size), bool), dt, floor_frac * TDP,
                                    compute=comp[None])
    floor = floor_frac * TDP
    p_mean = duty * P_HI + (1 - duty) * P_LO
    expected = (floor - P_LO) * (1 - duty) / p_mean
    assert y.sum() / p.sum() - 1.0 == pytest.approx(expected, rel=1e-9)
    assert info["burn_j"][0] == pytest.approx((floor - P_LO) * (1 - duty) * 10.0, rel=1e-9)
    assert info["deficit_s"][0] == 0.0
    assert y.min() == pytest.approx(floor)
    assert y.max() == P_HI


@pytest.mark.parametrize("dt", [0.001, 0.004, 0.01, 0.02, 0.05, 0.1])
def test_ramp_limited_edges_have_the_programmed_slope_at_any_dt(dt):
    r_up, r_down = 2000.0, 1500.0
    n = int(round(4.0 / dt))
    t = np.arange(n) * dt
    p = np.where((t >= 1.0 - 1e-9) & (t < 2.5 - 1e-9), P_HI, 300.0)
    y, _ = apply_power_smoothing(p[None], np.ones((1, n), bool), dt, 0.2 * TDP, r_up, r_down)
    y = y[0]
    k_up = int(np.argmax(p > 300.0))            # first high sample
    k_dn = int(np.argmax((t >= 2.5 - 1e-9)))    # first low sample after the pulse
    # the limited edge is the line from the last sample before the edge, at the programmed rate
    up_line = np.minimum(P_HI, 300.0 + r_up * (t - t[k_up - 1]))
    np.testing.assert_allclose(y[k_up - 1:k_dn], up_line[k_up - 1:k_dn], rtol=0, atol=1e-9)
    dn_line = np.maximum(300.0, P_HI - r_down * (t - t[k_dn - 1]))
    np.testing.assert_allclose(y[k_dn - 1:], dn_line[k_dn - 1:], rtol=0, atol=1e-9)
    # slope between samples on the edges is exactly the programmed rate
    dy = np.diff(y) / dt
    assert dy.max() == pytest.approx(r_up, rel=1e-9)
    assert -dy.min() == pytest.approx(r_down, rel=1e-9)
    # time from the last low sample to the top: (P_hi - P_lo) / r_up, whenever dt divides it
    k_top = int(np.argmax(y >= P_HI - 1e-9))
    assert t[k_top] - t[k_up - 1] == pytest.approx(np.ceil(900.0 / r_up / dt - 1e-9) * dt)


@pytest.mark.parametrize("dt", [0.005, 0.01, 0.05])
def test_ramp_up_deficit_is_the_lost_compute_time(dt):
    r_up = 2000.0
    n = int(round(3.0 / dt))
    t = np.arange(n) * dt
    comp = t >= 1.0 - 1e-9
    p = np.where(comp, P_HI, 300.0)
    _, info = apply_power_smoothing(p[None], np.ones((1, n), bool), dt, 0.2 * TDP, r_up, None,
                                    compute=comp[None])
    # triangle between the demand and the ramp, over P_hi, less the demand's own edge (dt/2)
    expected = (900.0 ** 2 / (2 * r_up) - 900.0 * dt / 2) / P_HI
    assert info["deficit_s"][0] == pytest.approx(expected, rel=1e-9)


def test_stop_delay_longer_than_the_communication_gap_keeps_the_floor():
    dt = 0.01
    t = np.arange(600) * dt
    p, comp = square_wave(t, 1.0, 0.7, P_HI, P_LO)
    running = comp.copy()           # workload idles (running False) in each 0.3 s gap
    floor = 0.65 * TDP
    y_long, _ = apply_power_smoothing(p[None], running[None], dt, floor, stop_delay_s=0.5)
    assert y_long.min() == pytest.approx(floor)     # floor engaged through every gap
    y_short, _ = apply_power_smoothing(p[None], running[None], dt, floor, stop_delay_s=0.1)
    gap = ~comp & (t > 0)
    k0 = int(np.argmax(gap))                        # first step of the first gap (t = 0.7 s)
    assert np.all(y_short[0, k0:k0 + 10] == floor)  # held for exactly 0.1 s
    assert y_short[0, k0 + 10] == P_LO              # then released (infinite ramp-down)


def test_stop_delay_then_ramp_down_and_no_floor_before_start():
    dt = 0.01
    n = 1000
    t = np.arange(n) * dt
    running = (t >= 2.0 - 1e-9) & (t < 5.0 - 1e-9)
    p = np.where(running, P_HI, 150.0)
    floor, r_dn, delay = 0.65 * TDP, 1000.0, 1.0
    y, _ = apply_power_smoothing(p[None], running[None], dt, floor, None, r_dn, delay)
    y = y[0]
    assert np.all(y[t < 2.0 - 1e-9] == 150.0)       # no floor before the job ever ran
    k_stop = int(np.argmax(t >= 5.0 - 1e-9))
    # ramp-down from P_hi to the floor right away (floor held while stop delay runs)
    expect = np.maximum(floor, P_HI - r_dn * (t - t[k_stop - 1]))
    k_rel = k_stop + 100                            # stop delay over
    np.testing.assert_allclose(y[k_stop:k_rel], expect[k_stop:k_rel], atol=1e-9)
    # after the stop delay: ramp from the floor towards idle at r_dn
    expect2 = np.maximum(150.0, floor - r_dn * (t - t[k_rel - 1]))
    np.testing.assert_allclose(y[k_rel - 1:], expect2[k_rel - 1:], atol=1e-9)


@pytest.mark.parametrize("dt", [0.01, 0.02])
def test_hysteresis_shifts_the_ramp_down_by_exactly_its_length(dt):
    n = int(round(4.0 / dt))
    t = np.arange(n) * dt
    p = np.where(t < 1.0 - 1e-9, P_HI, 600.0)
    run = np.ones((1, n), bool)
    y0, _ = apply_power_smoothing(p[None], run, dt, 0.2 * TDP, None, 2000.0)
    yh, info = apply_power_smoothing(p[None], run, dt, 0.2 * TDP, None, 2000.0, hysteresis_s=0.2)
    s = int(round(0.2 / dt))
    np.testing.assert_allclose(yh[0, s:], y0[0, :-s], atol=1e-9)
    assert info["burn_j"][0] > 0


def test_disabled_groups_pass_through_and_inputs_are_not_modified():
    dt = 0.01
    t = np.arange(300) * dt
    p, _ = square_wave(t, 1.0, 0.5, P_HI, P_LO)
    p2 = np.vstack([p, p])
    keep = p2.copy()
    y, info = apply_power_smoothing(p2, np.ones_like(p2, bool), dt, [780.0, 780.0], 100.0, 100.0,
                                    enabled=[True, False])
    np.testing.assert_array_equal(y[1], p)
    np.testing.assert_array_equal(p2, keep)
    assert info["engaged_s"][1] == 0 and info["engaged_s"][0] > 0


def test_secondary_floor_during_activity_primary_floor_when_activity_drops():
    dt = 0.01
    n = 1000
    t = np.arange(n) * dt
    p, _ = square_wave(t, 1.0, 0.7, P_HI, P_LO)
    p = np.where(t < 6.0 - 1e-9, p, P_LO)          # active 6 s, then sustained low demand
    y, _ = apply_power_smoothing(p[None], np.ones((1, n), bool), dt, 0.8 * TDP,
                                 secondary_floor_w=0.4 * TDP, activation_window_s=1.0,
                                 activation_offset_w=0.1 * TDP)
    y = y[0]
    active = (t > 2.0) & (t < 5.0) & (p < P_HI)
    np.testing.assert_allclose(y[active], 0.4 * TDP)    # MA ≈ 912 W ≥ 600 W: secondary floor
    assert np.all(y[t > 7.5] == pytest.approx(0.8 * TDP))  # MA fell below: primary floor


def test_bad_arguments_raise():
    p = np.ones((1, 10))
    run = np.ones((1, 10), bool)
    with pytest.raises(ValueError, match="ramp_up_w_per_s"):
        apply_power_smoothing(p, run, 0.01, 1.0, -5.0)
    with pytest.raises(ValueError, match="running"):
        apply_power_smoothing(p, run[:, :5], 0.01, 1.0)
