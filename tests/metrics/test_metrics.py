"""Hand-checked tests of facility.metrics and their independence of dt_s."""

import numpy as np
import pytest

from facility import metrics as m
from facility.config.schema import SpecBand, SpecConfig


def square(dt_s, horizon_s=20.0, period_s=2.0, duty=0.5, hi=100.0, lo=30.0):
    t = np.arange(int(round(horizon_s / dt_s))) * dt_s
    phase = np.mod(t + 1e-9, period_s) / period_s
    return t, np.where(phase < duty, hi, lo)


def test_window_steps():
    assert m.window_steps(1.0, 0.01) == 100
    assert m.window_steps(1.0, 0.3) == 3
    assert m.window_steps(0.005, 0.01) == 1


def test_step_ramp_is_step_over_tau():
    p = np.r_[np.zeros(500), np.full(500, 50.0)]
    up, down = m.max_ramp_mw_per_s(p, 0.01, 1.0)
    assert up == pytest.approx(50.0)
    assert down == 0.0
    up2, _ = m.max_ramp_mw_per_s(p, 0.01, 2.0)
    assert up2 == pytest.approx(25.0)


def test_linear_ramp_rate():
    dt = 0.01
    t = np.arange(0, 10, dt)
    p = 3.0 * t  # 3 MW/s
    up, down = m.max_ramp_mw_per_s(p, dt, 1.0)
    assert up == pytest.approx(3.0, rel=1e-9)
    assert down == 0.0


def test_ramp_not_blind_to_oscillation_at_window_multiple():
    # 1 Hz oscillation: a lag difference P(t)-P(t-1 s) is zero; the window definition is not.
    dt = 0.01
    t = np.arange(0, 10, dt)
    p = 10 * np.sin(2 * np.pi * 1.0 * t)
    lag = np.max(np.abs(p[100:] - p[:-100]))
    assert lag < 1e-9
    up, down = m.max_ramp_mw_per_s(p, dt, 1.0)
    assert up == pytest.approx(20.0, rel=1e-3)
    assert down == pytest.approx(20.0, rel=1e-3)


def test_window_swing_and_minute_ramp():
    _, p = square(0.01)
    assert m.max_window_swing_mw(p, 0.01, 5.0) == pytest.approx(70.0)
    assert m.max_ramp_mw_per_min(p, 0.01) == pytest.approx(70.0)
    # a slow ramp of 1 MW/s over 200 s: 60 MW per minute, 5 MW per 5 s window
    dt = 0.5
    p = np.arange(0, 200, dt) * 1.0
    assert m.max_ramp_mw_per_min(p, dt) == pytest.approx(60.0)
    assert m.max_window_swing_mw(p, dt, 5.0) == pytest.approx(5.0)


def test_window_inside_horizon_only():
    # a step at t=0 is not a ramp: nothing is assumed before t = 0
    p = np.full(1000, 80.0)
    assert m.max_ramp_mw_per_s(p, 0.01) == (0.0, 0.0)
    assert m.max_window_swing_mw(p, 0.01, 5.0) == 0.0


def test_sine_spectrum_amplitude_energy_and_frequency():
    dt = 0.01
    t = np.arange(0, 100, dt)
    p = 50 + 7 * np.sin(2 * np.pi * 0.5 * t) + 2 * np.sin(2 * np.pi * 30 * t)
    assert m.band_peak_mw(p, dt, 0.1, 20) == pytest.approx(7.0, rel=1e-9)
    assert m.band_energy_frac(p, dt, 0.1, 20) == pytest.approx(49 / 53, rel=1e-9)
    assert m.dominant_freq_hz(p, dt) == pytest.approx(0.5)
    assert m.band_peak_mw(p, dt, 25, 40) == pytest.approx(2.0, rel=1e-9)


def test_square_wave_band_energy_closed_form():
    # 50 % duty square wave, period 2 s: odd harmonics with energy 8/(pi^2 n^2) of the total.
    dt = 0.001
    _, p = square(dt, horizon_s=200.0, period_s=2.0, duty=0.5)
    frac = m.band_energy_frac(p, dt, 0.1, 20.0)  # harmonics 0.5, 1.5, ..., 19.5 Hz: n = 1..39 odd
    expected = sum(8 / (np.pi**2 * n**2) for n in range(1, 40, 2))
    assert frac == pytest.approx(expected, abs=2e-3)
    assert m.band_peak_mw(p, dt, 0.1, 20.0) == pytest.approx(4 / np.pi * 35.0, rel=2e-3)


@pytest.mark.parametrize("dt", [0.01, 0.02, 0.05])
def test_metrics_do_not_depend_on_dt(dt):
    spec = SpecConfig(window_s=5.0, band_min_hz=0.1, band_max_hz=5.0)
    _, p_ref = square(0.01, horizon_s=60.0, period_s=2.0, duty=0.7)
    _, p = square(dt, horizon_s=60.0, period_s=2.0, duty=0.7)
    a = m.power_metrics(p_ref, 0.01, spec)
    b = m.power_metrics(p, dt, spec)
    for key in ("p_mean_mw", "p_max_mw", "p_min_mw", "max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s",
                "max_ramp_mw_per_min", "max_window_swing_mw", "dominant_freq_hz", "dynamic_range_mw"):
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-9), key
    # spectral metrics: exact for a band-limited signal (a square wave aliases its harmonics)
    t_ref = np.arange(0, 60, 0.01)
    t = np.arange(0, 60, dt)

    def sig(tt):
        return 80 + 9 * np.sin(2 * np.pi * 0.5 * tt) + 3 * np.cos(2 * np.pi * 7.0 * tt) + np.sin(2 * np.pi * 0.05 * tt)

    a = m.power_metrics(sig(t_ref), 0.01, spec)
    b = m.power_metrics(sig(t), dt, spec)
    for key in ("band_energy_frac", "band_peak_mw", "dominant_freq_hz"):
        assert b[key] == pytest.approx(a[key], rel=1e-9), key


def test_compliance_rows_and_margin():
    spec = SpecConfig(max_window_swing_mw=10.0, max_ramp_up_mw_per_s=100.0,
                      bands=[SpecBand(name="low", min_hz=0.1, max_hz=5.0, max_peak_mw=1.0)])
    _, p = square(0.01)
    pcc = m.power_metrics(p, 0.01, spec)
    rows = m.compliance(pcc, spec)
    assert set(rows) == {"max_window_swing_mw", "max_ramp_up_mw_per_s", "band_low", "all_decided", "compliant"}
    assert rows["all_decided"] is True
    assert rows["max_window_swing_mw"] is False
    assert rows["max_ramp_up_mw_per_s"] is True
    assert rows["band_low"] is False
    assert rows["compliant"] is False
    margins = m.compliance_margins(pcc, spec)
    assert margins["max_window_swing_mw"] == pytest.approx(1 - 70 / 10)


def test_undecided_limits_are_not_rows_and_the_verdict_says_so():
    """A limit the data cannot decide is no row: all_decided false, the verdict names it."""
    spec = SpecConfig(max_window_swing_mw=10.0, max_ramp_up_mw_per_s=100.0)
    _, p = square(0.01)
    pcc = m.power_metrics(p, 0.01, spec)
    rows = m.compliance(pcc, spec, undecided=["max_window_swing_mw"])
    assert rows == {"max_ramp_up_mw_per_s": True, "all_decided": False, "compliant": True}
    assert m.verdict_text(rows, ["max_window_swing_mw"]) == "yes on max_ramp_up_mw_per_s; cannot judge max_window_swing_mw"
    assert "max_window_swing_mw" not in m.compliance_margins(pcc, spec, ["max_window_swing_mw"])
    both = m.compliance(pcc, spec, undecided=["max_window_swing_mw", "max_ramp_up_mw_per_s"])
    assert m.verdict_text(both, ["max_window_swing_mw", "max_ramp_up_mw_per_s"]) == (
        "cannot judge max_ramp_up_mw_per_s, max_window_swing_mw (no limit the data can decide)")
    decided = m.compliance(pcc, spec)
    assert m.verdict_text(decided) == "no (failing: max_window_swing_mw)"


def test_energy_mwh():
    assert m.energy_mwh(np.full(3600, 100.0), 1.0) == pytest.approx(100.0)


def test_storage_restore_charges_a_deficit_and_credits_a_surplus():
    # ended 2 MWh lower: refilling it draws 2 / 0.9 at the terminals
    assert m.storage_restore_mwh(-2.0, 0.9, 0.8) == pytest.approx(2.0 / 0.9)
    # ended 1 MWh higher: the surplus can deliver 1 x 0.8 back
    assert m.storage_restore_mwh(1.0, 0.9, 0.8) == pytest.approx(-0.8)
    assert m.storage_restore_mwh(0.0, 0.9, 0.8) == 0.0


def test_energy_metrics_by_hand():
    # a storage that ends lower than it started: a negative uncorrected overhead, a positive one
    e = m.energy_metrics(100.0, 99.0, {"bess": (-2.0, 0.9, 0.95), "ups": (0.5, 0.97, 0.97)})
    assert e["energy_overhead_uncorrected_frac"] == pytest.approx(-0.01)
    assert e["storage_net_charge_mwh"] == pytest.approx(-1.5)
    assert e["storage_restore_mwh"] == pytest.approx(2.0 / 0.9 - 0.5 * 0.97)
    assert e["pcc_restored_mwh"] == pytest.approx(99.0 + 2.0 / 0.9 - 0.485)
    assert e["energy_overhead_frac"] == pytest.approx((99.0 + 2.0 / 0.9 - 0.485) / 100.0 - 1.0)
    assert e["energy_overhead_frac"] > 0
    # no storage or none that moved: both figures agree with pcc/raw - 1
    for st in (None, {"rack_storage": (0.0, 0.97, 0.97)}):
        e = m.energy_metrics(50.0, 51.0, st)
        assert e["energy_overhead_frac"] == e["energy_overhead_uncorrected_frac"] == pytest.approx(0.02)
    assert m.energy_metrics(0.0, 0.0)["energy_overhead_frac"] == 0.0
