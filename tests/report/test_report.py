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
                                     (0.0123456, "0.01235"), (2.5e-5, "2.5e-5"), (-4.2e-7, "-4.2e-7"),
                                     (-6.42e-4, "-6.42e-4"), (9.999e-4, "1e-3"), (1.234567e-9, "1.23e-9"),
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


def test_spectrum_shades_the_band_only_under_a_band_limit_and_legends_sit_beside_the_axes(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from types import SimpleNamespace

    from facility.config.schema import SpecConfig
    from facility.report import plots

    t = np.arange(0, 20, 0.01)
    y = 50 + 10 * np.sign(np.sin(2 * np.pi * 0.5 * t))
    made = []
    real_subplots = plt.subplots

    def subplots(*a, **k):
        fig, ax = real_subplots(*a, **k)
        made.append(ax)
        return fig, ax

    monkeypatch.setattr(plt, "subplots", subplots)
    monkeypatch.setattr(plots, "_save", lambda fig, path: None)
    captions = {}
    for name, spec in (("none", SpecConfig(window_s=5.0, max_window_swing_mw=10.0)),
                       ("band", SpecConfig(max_band_energy_frac=0.2))):
        res = SimpleNamespace(scenario=SimpleNamespace(spec=spec, time=SimpleNamespace(dt_s=0.01)),
                              metrics={"pcc": {"band_energy_frac": 0.1}})
        captions[name] = plots._plot_spectrum(res, y, y * 0.5 + 25, tmp_path)[1]
        ax = made[-1]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(lab.startswith("spec band") for lab in labels) == (name == "band"), labels
        # the legend is anchored beside the axes (x beyond 1 in axes coordinates), not over the data
        anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        assert anchor.x0 > 1.0
    assert "sets no band limit" in captions["none"] and "spec band shaded" in captions["band"]
