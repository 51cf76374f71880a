"""Multi-mass shaft: the IEEE FBM's published torsional modes, the frequency response against
scipy's, the rigid-body limit, and the FFT (periodic) response against a time-domain lsim."""

import numpy as np
import pytest
from scipy import signal

from facility.grid_impact import load_shaft
from facility.grid_impact.library import _read


def test_fbm_modes_match_published_within_1_percent():
    shaft = load_shaft("ieee_fbm")
    published = np.array(_read("ieee_fbm")["published_modes_hz"])
    f = shaft.torsional_modes_hz()
    assert f.size == 5
    np.testing.assert_allclose(f, published, rtol=0.01)


def test_modes_need_the_base_speed():
    """Without ω0 (M = 2H instead of 2H/ω0) the frequencies are off by sqrt(ω0): the check
    above can fail."""
    shaft = load_shaft("ieee_fbm")
    w0 = shaft.w0_rad_per_s
    lam = np.linalg.eigvals(np.diag(1 / (2 * shaft.h_s)) @ shaft.stiffness_matrix())
    wrong = np.sort(np.sqrt(np.abs(lam)))[1:] / (2 * np.pi)
    np.testing.assert_allclose(wrong * np.sqrt(w0), shaft.torsional_modes_hz(), rtol=1e-9)


def test_two_mass_closed_form():
    """Two masses on one spring: f = sqrt(K ω0 (1/2H1 + 1/2H2)) / 2π; the section carries
    H1 / (H1 + H2) of a slow electrical torque at the second mass."""
    from facility.grid_impact.shaft import ShaftModel

    h1, h2, k = 1.0, 3.0, 20.0
    s = ShaftModel(("T", "G"), np.array([h1, h2]), np.array([k]), np.zeros(2), 0.01, 1, 50.0, 100.0)
    w0 = 2 * np.pi * 50.0
    assert s.torsional_modes_hz()[0] == pytest.approx(np.sqrt(k * w0 * (1 / (2 * h1) + 1 / (2 * h2))) / (2 * np.pi))
    assert abs(s.frequency_response(np.array([1e-3]))[0, 0]) == pytest.approx(h1 / (h1 + h2), rel=1e-4)
    assert s.static_gain()[0] == pytest.approx(h1 / (h1 + h2))


def test_frequency_response_matches_the_state_space():
    """Pole-residue sum = C (jωI − A)⁻¹ B of the state space solved directly (scipy's
    freqresp goes through a badly conditioned transfer polynomial for 11 states)."""
    shaft = load_shaft("ieee_fbm", damping_ratio=0.005)
    a, b, c, d = shaft.state_space()
    f = np.array([0.5, 3.0, 15.0, 15.71, 20.2, 31.0, 47.5, 49.0])
    h = shaft.frequency_response(f)
    for i, fi in enumerate(f):
        ref = c @ np.linalg.solve(2j * np.pi * fi * np.eye(a.shape[0]) - a, b)
        np.testing.assert_allclose(h[:, i], ref[:, 0], rtol=1e-8)
    # the modes' split sums to the total
    np.testing.assert_allclose(shaft.frequency_response(f, modes=True).sum(axis=0), h, rtol=1e-12)


def test_damping_ratio_sets_the_resonant_peak():
    """At torsional mode r the modal contribution's peak scales as 1 / ζ."""
    f1 = load_shaft("ieee_fbm").torsional_modes_hz()[0]
    f = np.linspace(f1 - 0.05, f1 + 0.05, 2001)
    peaks = [np.abs(load_shaft("ieee_fbm", z).frequency_response(f)).max() for z in (0.001, 0.002)]
    assert peaks[0] / peaks[1] == pytest.approx(2.0, rel=0.02)


def test_fft_response_equals_lsim():
    """Periodic input (bins of the horizon), lsim run for several periods until the transient
    has decayed: its last period equals irfft(H · rfft(u))."""
    shaft = load_shaft("ieee_fbm", damping_ratio=0.05)
    dt, n = 0.001, 4000                              # 4 s period, 1 kHz (modes up to 47 Hz)
    t = np.arange(n) * dt
    u = 0.01 * (np.sin(2 * np.pi * 15.75 * t) + 0.5 * np.cos(2 * np.pi * 2.0 * t + 0.3)
                + 0.3 * np.sin(2 * np.pi * 32.25 * t))
    x = np.fft.rfft(u)
    y_fft = np.fft.irfft(shaft.frequency_response(np.fft.rfftfreq(n, dt)) * x[None, :], n, axis=1)
    reps = 6
    a, b, c, d = shaft.state_space()
    _, y, _ = signal.lsim((a, b, c, d), np.tile(u, reps), np.arange(n * reps) * dt)
    last = y[-n:].T
    np.testing.assert_allclose(last, y_fft, atol=2e-3 * np.abs(y_fft).max())
