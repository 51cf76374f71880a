"""Spectral metrics of a power series: the single-sided FFT-bin amplitudes, the band energy
share, the band peak and the dominant frequency (definitions: :mod:`facility.metrics`).
Imports numpy only."""

from __future__ import annotations

import numpy as np

__all__ = ["spectrum", "band_energy_frac", "band_peak_mw", "dominant_freq_hz"]


def spectrum(p_mw: np.ndarray, dt_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Single-sided spectrum of P − mean(P).

    Returns
    -------
    f_hz : numpy.ndarray
        Bin frequencies k / (N dt). [Hz]
    amp_mw : numpy.ndarray
        Single-sided amplitude: 2|X_k|/N (|X_k|/N at DC and Nyquist); a sinusoid of amplitude A
        on a bin reads A. [MW]
    energy : numpy.ndarray
        Share of the AC energy in each bin (sums to 1 unless P is constant). [frac]
    """
    p = np.asarray(p_mw, dtype=float)
    n = p.size
    x = np.fft.rfft(p - p.mean())
    f = np.fft.rfftfreq(n, dt_s)
    mag2 = np.abs(x) ** 2
    weight = np.full(mag2.shape, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    amp = np.sqrt(mag2) * weight / n
    e = mag2 * weight
    e[0] = 0.0
    total = e.sum()
    energy = e / total if total > 0 else np.zeros_like(e)
    return f, amp, energy


def _band_mask(f_hz: np.ndarray, min_hz: float, max_hz: float) -> np.ndarray:
    return (f_hz >= min_hz - 1e-12) & (f_hz <= max_hz + 1e-12)


def _peak_in(f_hz: np.ndarray, amp_mw: np.ndarray, min_hz: float, max_hz: float) -> float:
    m = _band_mask(f_hz, min_hz, max_hz)
    return float(amp_mw[m].max()) if m.any() else 0.0


def _dominant(f_hz: np.ndarray, amp_mw: np.ndarray, min_hz: float) -> float:
    m = f_hz >= min_hz - 1e-12
    if not m.any() or amp_mw[m].max() <= 0:
        return 0.0
    return float(f_hz[m][np.argmax(amp_mw[m])])


def band_energy_frac(p_mw: np.ndarray, dt_s: float, min_hz: float, max_hz: float) -> float:
    """Share of the AC energy of P in [min_hz, max_hz]. [frac]"""
    f, _, energy = spectrum(p_mw, dt_s)
    return float(energy[_band_mask(f, min_hz, max_hz)].sum())


def band_peak_mw(p_mw: np.ndarray, dt_s: float, min_hz: float, max_hz: float) -> float:
    """Largest single-sided FFT-bin amplitude in [min_hz, max_hz] (the paper's FFT-bin monitor). [MW]"""
    f, amp, _ = spectrum(p_mw, dt_s)
    return _peak_in(f, amp, min_hz, max_hz)


def dominant_freq_hz(p_mw: np.ndarray, dt_s: float, min_hz: float = 0.1) -> float:
    """Frequency of the largest spectral bin at or above ``min_hz`` (0 for a constant P). [Hz]"""
    f, amp, _ = spectrum(p_mw, dt_s)
    return _dominant(f, amp, min_hz)
