"""Report helpers: number formats, plot quantities that peak at the metrics, the spectrum axis."""

import doctest

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import SpecConfig
from facility.report import html as report_html
from facility.report.html import fmt_number
from facility.report.plots import envelope, rolling_ramp_mw_per_s, rolling_swing_mw, spectrum_axis_hz


@pytest.mark.parametrize("v, text", [(3168793.2, "3,168,793"), (-12345.6, "-12,346"), (12.34567, "12.35"),
                                     (0.0123456, "0.01235"), (2.5e-5, "25e-6"), (-4.2e-7, "-420e-9"),
                                     (0.0, "0"), (-8.9e-16, "0"), (float("nan"), "n/a"), (float("inf"), "∞"), (1e-3, "0.001")])
def test_fmt_number(v, text):
    assert fmt_number(v) == text


def test_doctests():
    assert doctest.testmod(report_html).failed == 0


def test_plotted_quantities_peak_at_the_metrics():
    rng = np.random.default_rng(0)
    dt = 0.05
    p = np.cumsum(rng.normal(0, 1, 2000)) + 50
    assert rolling_swing_mw(p, dt, 5.0).max() == pytest.approx(metrics.max_window_swing_mw(p, dt, 5.0))
    up, down = rolling_ramp_mw_per_s(p, dt, 1.0)
    m_up, m_down = metrics.max_ramp_mw_per_s(p, dt, 1.0)
    assert up.max() == pytest.approx(m_up) and down.max() == pytest.approx(m_down)
    assert rolling_swing_mw(p, dt, 60.0).max() == pytest.approx(metrics.max_ramp_mw_per_min(p, dt))


def test_envelope_keeps_extremes_of_a_slow_series():
    t = np.arange(100_000) * 0.01
    y = np.sin(t / 100.0)
    tt, lo, hi = envelope(t, y, 500)
    assert tt.size == 500 and lo.min() == pytest.approx(y.min()) and hi.max() == pytest.approx(y.max())
    assert np.all(hi >= lo)


def test_spectrum_axis_covers_the_band_at_a_coarse_step():
    spec = SpecConfig(band_min_hz=0.1, band_max_hz=20.0)
    lo, hi = spectrum_axis_hz(spec, 0.5, 1e-3)   # Nyquist 1 Hz
    assert lo <= 0.05 and hi >= 20.0
    lo, hi = spectrum_axis_hz(SpecConfig(bands=[{"name": "b", "min_hz": 5, "max_hz": 55, "max_peak_mw": 1}]),
                              0.01, 1e-3)
    assert hi >= 55.0
