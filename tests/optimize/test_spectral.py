"""Band peak limits as LP rows (facility.optimize.model.spectral): bins as facility.metrics defines
them, the inscribed polygon, the binding limit, the periodic reduction, and `facility size`."""

import json
import warnings

import numpy as np
import pytest

from facility import metrics
from facility.cli import main
from facility.config.schema import BessConfig, OptimizeConfig, SpecBand, SpecConfig
from facility.optimize import size_storage
from facility.optimize.model.spectral import (SIDES, amplitude_weight, bin_limits, has_spectral_limits,
                                        spectral_violations)

BESS = BessConfig(enabled=True, extendable=True, eff_charge_frac=0.95, eff_discharge_frac=0.95,
                  min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.5,
                  cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)


def square(n=600, period=40, high=32, p_hi=100.0, p_lo=40.0):
    i = np.arange(n)
    return np.where(i % period < high, p_hi, p_lo)


def test_bin_limits_follow_metrics_masks_and_take_the_tightest_band():
    spec = SpecConfig(band_min_hz=0.1, band_max_hz=5.0, max_band_peak_mw=3.0,
                      bands=[SpecBand(name="low", min_hz=0.5, max_hz=1.0, max_peak_mw=1.0)])
    lim = bin_limits(spec, 1000, 0.01, margin_frac=0.1)
    f = np.fft.rfftfreq(1000, 0.01)
    assert set(lim.k) == set(np.flatnonzero((f >= 0.1 - 1e-12) & (f <= 5.0 + 1e-12)))
    low = (f[lim.k] >= 0.5) & (f[lim.k] <= 1.0)
    np.testing.assert_allclose(lim.limit_mw[low], 0.9)
    np.testing.assert_allclose(lim.limit_mw[~low], 2.7)
    assert {lim.family[i] for i in np.flatnonzero(low)} == {"band_low"}
    assert not has_spectral_limits(SpecConfig(max_band_energy_frac=0.2))


def test_amplitude_weight_is_metrics_single_sided_amplitude():
    n, dt = 800, 0.01
    t = np.arange(n) * dt
    p = 50 + 3.0 * np.cos(2 * np.pi * 2.5 * t + 0.4)          # on bin k = 20
    f, amp, _ = metrics.spectrum(p, dt)
    x = np.fft.rfft(p - p.mean())
    np.testing.assert_allclose(np.abs(x) * amplitude_weight(np.arange(x.size), n), amp, atol=1e-12)
    assert amp[20] == pytest.approx(3.0)


def test_violations_name_the_bins_above_the_polygon():
    n, dt = 800, 0.01
    t = np.arange(n) * dt
    p = 3.0 * np.sin(2 * np.pi * 2.5 * t) + 1.0 * np.sin(2 * np.pi * 5.0 * t)
    lim = bin_limits(SpecConfig(band_min_hz=0.1, band_max_hz=20.0, max_band_peak_mw=2.0), n, dt)
    k, amp, ang = spectral_violations(p, lim)
    assert list(k) == [20] and amp[0] == pytest.approx(3.0)
    assert ang[0] == pytest.approx(-np.pi / 2, abs=1e-9)            # a sine: X_k = -j N A / 2
    # exactly at the limit: above the inscribed polygon, not above the limit itself
    lim3 = bin_limits(SpecConfig(band_min_hz=0.1, band_max_hz=20.0, max_band_peak_mw=3.0), n, dt)
    assert spectral_violations(p, lim3)[0].size == 0 or spectral_violations(p, lim3, sides=None)[0].size == 0


def test_inscribed_polygon_rows_imply_the_disk():
    # every point meeting all M rows lies inside the circle of radius A (the polygon's corners)
    rng = np.random.default_rng(0)
    th = 2 * np.pi * np.arange(SIDES) / SIDES
    pts = rng.uniform(-1.1, 1.1, size=(200_000, 2))
    inside = np.all(pts @ np.vstack([np.cos(th), np.sin(th)]) <= np.cos(np.pi / SIDES), axis=1)
    assert inside.any() and np.max(np.hypot(*pts[inside].T)) <= 1.0 + 1e-12


def test_band_limit_binds_storage_grows_as_it_tightens():
    load, dt = square(), 0.1
    raw = metrics.band_peak_mw(load, dt, 0.1, 5.0)
    sizes = []
    for a in (0.5 * raw, 0.25 * raw, 0.1 * raw):
        with warnings.catch_warnings():
            warnings.simplefilter("error")                          # no "not constraints" warning
            r = size_storage(load, dt, {"bess": BESS},
                             SpecConfig(band_min_hz=0.1, band_max_hz=5.0, max_band_peak_mw=a),
                             OptimizeConfig())
        assert metrics.band_peak_mw(r.p_pcc_mw, dt, 0.1, 5.0) <= a + 1e-9
        assert r.info.n_spectral_bins > 0 and r.info.gap_frac <= 1e-9
        sizes.append((r.p_rated_mw_opt["bess"], r.info.objective_usd))
    assert sizes[0][0] < sizes[1][0] < sizes[2][0]
    assert sizes[0][1] < sizes[1][1] < sizes[2][1]


def test_periodic_reduction_with_spectral_rows_brackets_the_full_lp():
    load, dt = square(n=1000, period=20, high=16), 0.1
    spec = SpecConfig(band_min_hz=0.1, band_max_hz=5.0, max_band_peak_mw=2.0, window_s=5.0,
                      max_window_swing_mw=20.0)
    full = size_storage(load, dt, {"bess": BESS}, spec, OptimizeConfig(periodic=False))
    per = size_storage(load, dt, {"bess": BESS}, spec, OptimizeConfig(periodic=True))
    assert per.info.method == "periodic" and full.info.method == "full"
    assert per.info.lower_bound_usd <= full.info.relaxed_objective_usd * (1 + 1e-7)
    assert per.info.objective_usd == pytest.approx(full.info.objective_usd, rel=max(per.info.gap_frac, 1e-6))
    assert metrics.band_peak_mw(per.p_pcc_mw, dt, 0.1, 5.0) <= 2.0 + 1e-9


SCENARIO = """
schema_version = 1
name = "band_size"
[time]
horizon_s = 60
dt_s = 0.05
[[jobs]]
name = "job"
n_gpus = 2000
gpu = "h100"
workload = "square"
period_s = 2.0
compute_frac = 0.7
p_low_frac = 0.3
start_s = -10
[rack_storage]
enabled = true
extendable = true
max_p_rated_mw = 10.0
max_e_rated_mwh = 0.1
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 2000.0
[spec]
band_min_hz = 0.1
band_max_hz = 10.0
max_band_peak_mw = 0.3
[[spec.bands]]
name = "low"
min_hz = 0.1
max_hz = 2.0
max_peak_mw = 0.15
[optimize]
limit_margin_frac = 0.1
"""


def test_size_cli_with_band_limits_is_compliant_without_warning(tmp_path, capsys, recwarn):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO)
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr()
    assert "not constraints of the LP" not in out.err + out.out
    assert not [w for w in recwarn if "not constraints" in str(w.message)]
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert js["verification"]["compliant"] and js["n_spectral_bins"] > 0
    assert m["raw"]["band_peak_mw"] > 0.3 and m["pcc"]["band_peak_mw"] <= 0.3
    assert m["pcc"]["band_peaks_mw"]["low"] <= 0.15
    assert m["compliance"]["max_band_peak_mw"] and m["compliance"]["band_low"]


def test_new_bins_per_round_are_the_worst_that_lack_a_direction():
    """directions_for with a cap: the bins with the largest amplitude / limit among those that
    get a new direction (a bin that already holds its nearest directions does not count)."""
    from facility.optimize.model.spectral import SpectralRows

    spec = SpecConfig(band_min_hz=0.1, band_max_hz=5.0, max_band_peak_mw=1.0,
                      bands=[SpecBand(name="low", min_hz=0.1, max_hz=0.5, max_peak_mw=0.5)])
    lim = bin_limits(spec, 1000, 0.1)
    rows = SpectralRows(lim, None, None, [])
    k = np.array([20, 100, 150, 200])        # f = k / 100 Hz: bin 20 in "low" (limit 0.5)
    amp = np.array([0.6, 1.5, 1.2, 3.0])     # ratios 1.2, 1.5, 1.2, 3.0
    ang = np.zeros(4)
    rows.cuts[200] = set(rows.directions_for(np.array([200]), np.zeros(1))[200])  # 200 is done
    out = rows.directions_for(k, ang, amp, 2)
    assert set(out) == {100, 20}                                        # ties: first given
    assert set(rows.directions_for(k, ang)) == {20, 100, 150}           # no cap: all that lack one
