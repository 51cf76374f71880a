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

Mode sets derived from a dynamic model (``facility grid-modes``,
:mod:`facility.grid_impact.dynamics`) carry the case's own transfer function instead: each
mode is a pole pair λ, λ̄ with complex residues r per output,

.. math::  H_i(s) = \\frac{r_i}{s - λ_i} + \\frac{\\bar r_i}{s - \\barλ_i},

and the set has a remainder :class:`Rest` (the instantaneous share D and every other pole:
governors, exciters, the slow common-frequency motion), so that the rows of
:meth:`ModeSet.frequency_response` sum to the observed generator's whole response,
D + Σ_all r/(s − λ).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Mode", "ModeSet", "Rest", "OUTPUTS", "mode_response", "pair_response", "smib_mode",
           "calibrate_gain"]

#: outputs of a mode set: the observed generator's electrical power [MW/MW], the frequency
#: deviation [Hz/MW] (a derived set: the PCC bus's), the observed generator's speed [pu/MW]
OUTPUTS = ("mw", "hz", "speed")


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
    residues : dict or None
        A derived mode's residues at λ = ω_n(−ζ + j√(1 − ζ²)), ω_n = 2π f_hz, per output
        ('mw' [MW/MW/s], 'hz' [Hz/MW/s], 'speed' [pu/MW/s]), complex: H(s) = r/(s − λ) + r̄/(s − λ̄)
        replaces the band-pass, and the gains are then its equivalent, |H(jω_n)| · 2ζ.
    """

    name: str
    f_hz: float
    damping_ratio: float
    gain_mw_per_mw: float
    gain_hz_per_mw: float
    residues: dict | None = None

    def __post_init__(self):
        if not (self.f_hz > 0 and 0 < self.damping_ratio < 1):
            raise ValueError(f"mode {self.name!r}: need f_hz > 0 and 0 < damping_ratio < 1")

    @property
    def pole(self) -> complex:
        """λ = ω_n(−ζ + j√(1 − ζ²)). [1/s]"""
        wn, z = 2.0 * np.pi * self.f_hz, self.damping_ratio
        return complex(-z * wn, wn * np.sqrt(1.0 - z * z))

    def response(self, f_hz: np.ndarray, output: str = "mw", f0_hz: float = 60.0) -> np.ndarray:
        """H_i(j2πf) of one output (complex). A band-pass mode's speed is its frequency
        output over ``f0_hz`` (its Hz gain comes from the observed machine's swing equation)."""
        _check_output(output)
        if self.residues is not None:
            if output not in self.residues:
                raise ValueError(f"mode {self.name!r} has no {output!r} residue")
            return pair_response(f_hz, self.pole, self.residues[output])
        k = {"mw": self.gain_mw_per_mw, "hz": self.gain_hz_per_mw,
             "speed": self.gain_hz_per_mw / f0_hz}[output]
        return k * mode_response(f_hz, self.f_hz, self.damping_ratio)


def _check_output(output: str) -> None:
    if output not in OUTPUTS:
        raise ValueError(f"output {output!r}: choose one of {', '.join(OUTPUTS)}")


def pair_response(f_hz: np.ndarray, pole: complex, residue: complex) -> np.ndarray:
    """r/(jω − λ) + r̄/(jω − λ̄) at ω = 2πf (complex); a real pole (Im λ = 0) counts once,
    r/(jω − λ) with r real."""
    jw = 2j * np.pi * np.asarray(f_hz, dtype=float)
    if pole.imag == 0.0:
        return residue.real / (jw - pole.real)
    return residue / (jw - pole) + np.conj(residue) / (jw - np.conj(pole))


@dataclass(frozen=True)
class Rest:
    """What a derived set's modes leave out of the observed response: the instantaneous share D
    and the other poles (real ones, and complex pairs given by the pole with Im λ > 0).

    Parameters
    ----------
    d : dict
        Feedthrough per output ('mw' [MW/MW], 'hz' [Hz/MW], 'speed' [pu/MW]).
    poles : numpy.ndarray (K,) complex
        [1/s]
    residues : dict
        Per output, (K,) complex. [output/MW/s]
    """

    d: dict
    poles: np.ndarray
    residues: dict

    def response(self, f_hz: np.ndarray, output: str = "mw") -> np.ndarray:
        """D + Σ_k pair_response(f, λ_k, r_k) (complex)."""
        f = np.asarray(f_hz, dtype=float)
        h = np.full(f.shape, complex(self.d[output]))
        for lam, r in zip(self.poles, self.residues[output]):
            h = h + pair_response(f, complex(lam), complex(r))
        return h

    def state_space(self, output: str = "mw"):
        """(A, B, C, D): a 1-state block per real pole, a 2-state block per pair."""
        blocks, cs = [], []
        for lam, r in zip(self.poles, self.residues[output]):
            lam, r = complex(lam), complex(r)
            if lam.imag == 0.0:
                blocks.append(np.array([[lam.real]]))
                cs.append([r.real])
            else:
                blocks.append(np.array([[lam.real, -lam.imag], [lam.imag, lam.real]]))
                cs.append([2 * r.real, -2 * r.imag])
        a = _block_diag(blocks)
        b = np.concatenate([[1.0] if blk.shape[0] == 1 else [1.0, 0.0] for blk in blocks])[:, None] \
            if blocks else np.zeros((0, 1))
        c = np.concatenate(cs)[None, :] if cs else np.zeros((1, 0))
        return a, b, c, np.array([[float(np.real(self.d[output]))]])


def _block_diag(blocks):
    n = sum(b.shape[0] for b in blocks)
    a = np.zeros((n, n))
    k = 0
    for b in blocks:
        m = b.shape[0]
        a[k:k + m, k:k + m] = b
        k += m
    return a


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
    rest : Rest or None
        A derived set's remainder (instantaneous share and non-modal poles); None for a
        band-pass set, whose rows are its modes only.
    f0_hz : float
        Nominal frequency. [Hz]
    record : dict
        Provenance of a derived set (engine and version, case, buses, generator, method).
    smib : dict
        The single machine's connection a ``[smib]`` set is built from (``ks_pu_per_rad``
        [pu torque / electrical rad], ``d_pu`` [pu torque / pu speed]); empty for other sets.
        :func:`facility.grid_impact.connection.connection_params` connects the shaft with it.
    """

    name: str
    modes: tuple
    source: str = ""
    rest: Rest | None = None
    f0_hz: float = 60.0
    record: dict = field(default_factory=dict)
    smib: dict = field(default_factory=dict)

    @property
    def row_names(self) -> list[str]:
        """Names of the rows of :meth:`frequency_response`: the modes, then 'rest' if any."""
        return [m.name for m in self.modes] + (["rest"] if self.rest is not None else [])

    def frequency_response(self, f_hz: np.ndarray, output: str = "mw") -> np.ndarray:
        """Per-mode response (rows, F), complex; the rows sum to the observed response per MW
        at the PCC: ``output`` 'mw' (generator power) [MW/MW], 'hz' (frequency deviation)
        [Hz/MW] or 'speed' (generator speed) [pu/MW]. One row per mode, and a last row
        'rest' when the set has a remainder (:attr:`row_names`)."""
        out = list(self.modes_response(f_hz, output))
        if self.rest is not None:
            out.append(self.rest.response(f_hz, output))
        return np.array(out).reshape(len(out), -1)

    def modes_response(self, f_hz: np.ndarray, output: str = "mw") -> np.ndarray:
        """The modes' rows of :meth:`frequency_response` (modes, F), without the remainder
        (which the limits on a mode's response do not read, and whose poles are the costly
        part of a derived set's response)."""
        out = [m.response(f_hz, output, self.f0_hz) for m in self.modes]
        return np.array(out).reshape(len(out), -1)

    def state_space(self, i: int, output: str = "mw"):
        """(A, B, C, D) of row i (:attr:`row_names`).

        A band-pass mode: state [x, ẋ], ẍ = −ω² x − 2ζω ẋ + u, y = k ω ẋ. A residue pair:
        z = x₁ + j x₂, ż = λ z + u, y = 2 Re(r z). The rest: its poles' blocks and D."""
        if i == len(self.modes):
            if self.rest is None:
                raise IndexError(i)
            return self.rest.state_space(output)
        m = self.modes[i]
        if m.residues is not None:
            return Rest({output: 0.0}, np.array([m.pole]), {output: np.array([m.residues[output]])}
                        ).state_space(output)
        w = 2.0 * np.pi * m.f_hz
        k = {"mw": m.gain_mw_per_mw, "hz": m.gain_hz_per_mw, "speed": m.gain_hz_per_mw / self.f0_hz}[output]
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
