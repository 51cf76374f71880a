"""Modal grid model: electromechanical modes driven by the PCC power.

Each mode i (frequency f_i, damping ratio ζ_i, ω_i = 2π f_i) maps the PCC power change ΔP
[MW] to an observed generator's power swing or to the frequency deviation through

.. math::  H_i(s) = k_i\\,\\frac{\\omega_i s}{s^2 + 2\\zeta_i\\omega_i s + \\omega_i^2},

a band-pass whose gain is k_i / (2 ζ_i) at resonance and → 0 far below and far above it:
the mode's oscillatory part only. k_i is the *modal* gain [MW/MW or Hz/MW], the flat
(frequency-independent) transmission the mode's resonance amplifies by 1/(2ζ_i). The
quasi-static share of a slow load change (governors, AGC) and the instantaneous share a
machine takes at high frequency are not modes and not modelled here.

Single machine on an infinite bus (:func:`smib_mode`): with the load at the machine's
terminal, the machine's initial share c of a change, swing 2H dΔω/dt = −ΔP_e − D Δω and
ΔP_e = K_s δ + c ΔP_L / S, the speed deviation is exactly
Δω = −(c / (2 H S)) s / (s² + 2ζω_n s + ω_n²) ΔP_L with ω_n² = K_s ω0 / (2H), 2ζω_n = D / (2H):
the band-pass above with k = c f0 / (2 H S ω_n) [Hz/MW]. Its generator power swing
c (s² + 2ζω_n s) / (s² + 2ζω_n s + ω_n²) has the same resonant peak c/(2ζ) to first order in
ζ; the band-pass form with k = c keeps that peak and drops the flat high-frequency share c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Mode", "ModeSet", "mode_response", "smib_mode", "calibrate_gain"]


@dataclass(frozen=True)
class Mode:
    """One electromechanical mode.

    Parameters
    ----------
    name : str
    f_hz : float
        Natural frequency. [Hz]
    damping_ratio : float
        ζ. [frac]
    gain_mw_per_mw : float
        Modal gain to the observed generator's power. [MW/MW]
    gain_hz_per_mw : float
        Modal gain to the frequency deviation. [Hz/MW]
    """

    name: str
    f_hz: float
    damping_ratio: float
    gain_mw_per_mw: float
    gain_hz_per_mw: float

    def __post_init__(self):
        if not (self.f_hz > 0 and 0 < self.damping_ratio < 1):
            raise ValueError(f"mode {self.name!r}: need f_hz > 0 and 0 < damping_ratio < 1")


def mode_response(f_hz: np.ndarray, mode_f_hz: float, damping_ratio: float) -> np.ndarray:
    """H(j 2π f) / k of one mode: ω_i jω / (ω_i² − ω² + 2jζω_i ω) (complex, [1]).

    Equals 1/(2ζ) at f = f_i and tends to 0 far from it."""
    w = 2.0 * np.pi * np.asarray(f_hz, dtype=float)
    wi = 2.0 * np.pi * mode_f_hz
    return wi * 1j * w / (wi * wi - w * w + 2j * damping_ratio * wi * w)


@dataclass(frozen=True)
class ModeSet:
    """A set of modes seen from one generator.

    Parameters
    ----------
    name : str
    modes : tuple of Mode
    source : str
        Where the numbers come from.
    """

    name: str
    modes: tuple
    source: str = ""

    def frequency_response(self, f_hz: np.ndarray, output: str = "mw") -> np.ndarray:
        """Per-mode response (modes, F), complex: ``output`` 'mw' [MW/MW] or 'hz' [Hz/MW]."""
        out = []
        for m in self.modes:
            k = m.gain_mw_per_mw if output == "mw" else m.gain_hz_per_mw
            out.append(k * mode_response(f_hz, m.f_hz, m.damping_ratio))
        return np.array(out).reshape(len(self.modes), -1)

    def state_space(self, i: int, output: str = "mw"):
        """(A, B, C, D) of mode i: state [x, ẋ], ẍ = −ω² x − 2ζω ẋ + u, y = k ω ẋ."""
        m = self.modes[i]
        w = 2.0 * np.pi * m.f_hz
        k = m.gain_mw_per_mw if output == "mw" else m.gain_hz_per_mw
        a = np.array([[0.0, 1.0], [-w * w, -2.0 * m.damping_ratio * w]])
        return a, np.array([[0.0], [1.0]]), np.array([[0.0, k * w]]), np.zeros((1, 1))


def hz_gain(gain_mw_per_mw: float, f_hz: float, h_s: float, s_mva: float, f0_hz: float = 60.0) -> float:
    """Frequency gain of a mode from its generator-power gain via the observed machine's swing
    equation, |Δf| = f0 |ΔP| / (2 H S ω). [Hz/MW]"""
    return gain_mw_per_mw * f0_hz / (2.0 * h_s * s_mva * 2.0 * np.pi * f_hz)


def smib_mode(h_s: float, s_mva: float, ks_pu_per_rad: float, d_pu: float, share_frac: float,
              f0_hz: float = 60.0, name: str = "smib") -> Mode:
    """The electromechanical mode of a single machine on an infinite bus.

    Parameters
    ----------
    h_s : float
        Inertia constant. [s]
    s_mva : float
        Rating. [MVA]
    ks_pu_per_rad : float
        Synchronizing power coefficient E V cos δ0 / X. [pu power / rad]
    d_pu : float
        Damping coefficient. [pu power / pu speed]
    share_frac : float
        The machine's initial share of a load change at its terminal. [frac]
    f0_hz : float
        System frequency. [Hz]

    Returns
    -------
    Mode
        ω_n = sqrt(K_s ω0 / (2H)), ζ = D / (4 H ω_n), k_MW = c, k_Hz = c f0 / (2 H S ω_n).
    """
    w0 = 2.0 * np.pi * f0_hz
    wn = np.sqrt(ks_pu_per_rad * w0 / (2.0 * h_s))
    zeta = d_pu / (4.0 * h_s * wn)
    return Mode(name, float(wn / (2 * np.pi)), float(zeta), float(share_frac),
                float(share_frac * f0_hz / (2.0 * h_s * s_mva * wn)))


def calibrate_gain(f_hz: np.ndarray, zeta: np.ndarray, at_hz: float, target: float) -> float:
    """The common modal gain k that makes |Σ_i k H_i(at_hz)/k| equal ``target``. [MW/MW]"""
    h = sum(mode_response(np.array([at_hz]), f, z)[0] for f, z in zip(f_hz, zeta))
    return float(target / abs(h))
