"""Modal grid model: the 1/(2ζ) resonance, ~0 far from it, the single machine's closed form,
the bundled sets, and the FFT response against lsim."""

import numpy as np
import pytest
from scipy import signal

from facility.grid_impact import Mode, ModeSet, load_mode_set, mode_response, smib_mode


@pytest.mark.parametrize("zeta", [0.004, 0.05, 0.3])
def test_resonance_gain_is_one_over_two_zeta(zeta):
    assert abs(mode_response(np.array([0.74]), 0.74, zeta)[0]) == pytest.approx(1 / (2 * zeta), rel=1e-12)


def test_far_from_resonance_near_zero():
    h = np.abs(mode_response(np.array([0.001, 50.0]), 0.74, 0.05))
    assert np.all(h < 0.02)


def test_sinusoid_at_resonance_through_fft():
    """A 10 MW sinusoid on a bin at the mode's frequency drives k·10/(2ζ) MW of swing."""
    dt, n = 0.01, 100_000                       # 1000 s: 0.5 Hz is bin 500
    t = np.arange(n) * dt
    ms = ModeSet("one", (Mode("m", 0.5, 0.05, 0.3, 1e-4),))
    p = 50 + 10 * np.sin(2 * np.pi * 0.5 * t)
    y = np.fft.irfft(np.fft.rfft(p - p.mean()) * ms.frequency_response(np.fft.rfftfreq(n, dt))[0], n)
    assert np.abs(y).max() == pytest.approx(0.3 * 10 / (2 * 0.05), rel=1e-6)


def test_smib_closed_form():
    """ω_n = sqrt(Ks ω0 / 2H), ζ = D / (4 H ω_n), and the frequency gain equals the speed
    response of the swing equation itself at resonance."""
    h, s, ks, d, c = 4.0, 500.0, 1.2, 3.0, 0.6
    m = smib_mode(h, s, ks, d, c, 50.0)
    w0 = 2 * np.pi * 50
    wn = np.sqrt(ks * w0 / (2 * h))
    assert m.f_hz == pytest.approx(wn / (2 * np.pi))
    assert m.damping_ratio == pytest.approx(d / (4 * h * wn))
    # swing equation: Δω(s) = −(c/S) s / (2H s² + D s + Ks ω0) per MW, in Hz: × f0
    jw = 1j * wn
    ref = abs(c / s * jw / (2 * h * jw ** 2 + d * jw + ks * w0)) * 50.0
    got = m.gain_hz_per_mw * abs(mode_response(np.array([m.f_hz]), m.f_hz, m.damping_ratio)[0])
    assert got == pytest.approx(ref, rel=1e-9)


def test_bundled_sets():
    w = load_mode_set("wecc_reduced")
    assert [m.f_hz for m in w.modes] == [0.12, 0.23, 0.55, 0.74, 1.11]
    # calibrated to the quoted 54 MW per 100 MW at 1.2 Hz
    assert abs(w.frequency_response(np.array([1.2])).sum()) == pytest.approx(0.54, rel=1e-9)
    k = load_mode_set("kundur_two_area")
    assert len(k.modes) == 3 and all(0.1 <= m.f_hz <= 2.0 for m in k.modes)
    assert 0.8 < load_mode_set("smib_example").modes[0].f_hz < 2.0


def test_fft_response_equals_lsim():
    ms = load_mode_set("kundur_two_area")
    dt, n = 0.02, 10_000                         # 200 s period
    t = np.arange(n) * dt
    p = 20 * np.sign(np.sin(2 * np.pi * 0.64 * t))   # square wave at the inter-area mode
    p = np.convolve(p, np.ones(5) / 5, mode="same")  # band-limit it a little (lsim holds linear)
    p -= p.mean()
    y_fft = np.fft.irfft(np.fft.rfft(p)[None, :] * ms.frequency_response(np.fft.rfftfreq(n, dt)), n, axis=1)
    for i in range(len(ms.modes)):
        _, y, _ = signal.lsim(ms.state_space(i), np.tile(p, 3), np.arange(3 * n) * dt)
        np.testing.assert_allclose(y[-n:], y_fft[i], atol=0.02 * np.abs(y_fft[i]).max())
