"""FFT-bin monitor backstop: detection, tiered response, release, all logged with times."""

import numpy as np
import pytest

from facility.control import band_peaks_mw, run_control
from facility.control.monitor import BandLimit
from facility.errors import ScenarioError

from .conftest import make

DT = 0.01


def test_band_peak_of_a_bin_centred_sine_is_its_amplitude():
    t = np.arange(0, 10, DT)
    x = 50 + 7.0 * np.sin(2 * np.pi * 1.0 * t) + 3.0 * np.sin(2 * np.pi * 30.0 * t)
    lim = [BandLimit("a", 0.1, 20.0, 1.0), BandLimit("b", 25.0, 40.0, 1.0), BandLimit("c", 41, 45, 1)]
    peak, freq = band_peaks_mw(x, DT, lim)
    np.testing.assert_allclose(peak, [7.0, 3.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(freq[:2], [1.0, 30.0])


def _scenario(**mon):
    m = {"enabled": True, "window_s": 5.0, "every_s": 1.0, "throttle_frac": 0.2,
         "shed_after_s": 5.0, "shed_frac": 0.5}
    m.update(mon)
    return make(monitor=m, spec={"max_band_peak_mw": 5.0, "band_min_hz": 0.1, "band_max_hz": 20.0})


def test_monitor_detects_in_band_oscillation_and_escalates():
    sc, sto = _scenario()
    t = np.arange(0, 60, DT)
    osc = t < 30.0
    load = 100.0 + np.where(osc, 8.0 * np.sin(2 * np.pi * 1.0 * t), 0.0)
    r = run_control(load, DT, sc, sto)
    kinds = [(e["kind"], e["t_s"]) for e in r.events]
    thr = [e for e in r.events if e["kind"] == "monitor_throttle"]
    shed = [e for e in r.events if e["kind"] == "monitor_shed"]
    assert thr and thr[0]["t_s"] == pytest.approx(5.0)      # first full window
    assert thr[0]["freq_hz"] == pytest.approx(1.0) and thr[0]["peak_mw"] == pytest.approx(8.0, rel=0.02)
    # throttling removes 20 % of the swing: 6.4 MW still above 5 MW -> shedding 5 s later
    assert shed and shed[0]["t_s"] == pytest.approx(10.0)
    k = int(10.5 / DT)
    seg = r.p_load_mw[k:k + 200]
    assert seg.max() - seg.min() == pytest.approx(0.5 * 0.8 * 16.0, rel=0.02)
    assert seg.mean() == pytest.approx(50.0, rel=0.01)
    # the shed load is quiet, so the monitor probes one tier down after window_s; once the
    # oscillation has stopped it steps down to normal operation
    rel = [e for e in r.events if e["kind"] == "monitor_release"]
    assert rel[0]["t_s"] == pytest.approx(20.0), kinds
    assert r.events[-1]["kind"] == "monitor_release" and r.events[-1]["t_s"] > 30.0
    assert "tier 0" in r.events[-1]["detail"]
    assert r.p_load_mw[-1] == pytest.approx(100.0)
    assert r.info["monitor_shed_mwh"] > 0


def test_monitor_quiet_on_compliant_load():
    sc, sto = _scenario()
    t = np.arange(0, 30, DT)
    r = run_control(100.0 + 2.0 * np.sin(2 * np.pi * t), DT, sc, sto)
    assert not r.events
    assert r.info["monitor_evaluations"] > 0


def test_monitor_needs_a_spectral_limit():
    sc, sto = make(monitor={"enabled": True})
    with pytest.raises(ScenarioError, match="max_band_peak_mw"):
        run_control(np.ones(100), DT, sc, sto)
