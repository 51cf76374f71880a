"""Multi-mass turbine-generator shaft: state space from H, K, D and its frequency response.

Masses i = 0 … n−1 in a line (turbines, generator, exciter), section s joins masses s and s+1.
Per unit on the generator's MVA base, with the base angular speed ω0 = 2π f0:

.. math::

    2 H_i \\frac{d\\Delta\\omega_i}{dt} = T_i - \\sum_j C_{ij}\\,\\Delta\\omega_j
        + K_{i-1} z_{i-1} - K_i z_i,\\qquad
    \\frac{dz_s}{dt} = \\omega_0 (\\Delta\\omega_s - \\Delta\\omega_{s+1}),

Δω_i the speed deviation [pu], z_s = δ_s − δ_{s+1} the twist of section s [electrical rad],
section torque T_s = K_s z_s [pu] (positive when the upstream mass leads, i.e. transmits
torque towards the generator). In angle coordinates this is M δ̈ + C_δ δ̇ + K δ = T with
M = diag(2H/ω0), so the undamped torsional modes are the square roots of the eigenvalues of
M⁻¹K (the 1/ω0 is what makes the IEEE FBM's numbers give its published 15.71 … 47.46 Hz).

Damping: C = ω0 · M Φ diag(2 ζ ω_r) Φᵀ M + diag(D), Φ the mass-normalized undamped mode
shapes: every torsional mode gets the modal damping ratio ζ exactly, plus each mass's self
damping D_i [pu torque / pu speed].

Input: the generator's electrical torque change ΔT_e [pu] (a load change at the PCC the
generator picks up: ΔT_e ≈ ΔP_gen / S_rated at ω ≈ 1), acting as T_gen = −ΔT_e.

Twists instead of absolute angles keep the rigid-body rotation out of the state (it carries no
section torque); the state is 2n − 1 long and its modes are simple, so the frequency response
is the pole-residue sum over the eigenvalues of A (:meth:`ShaftModel.frequency_response`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ShaftModel"]


@dataclass(frozen=True)
class ShaftModel:
    """A lumped multi-mass shaft.

    Parameters
    ----------
    masses : tuple of str
        Mass names, in shaft order.
    h_s : numpy.ndarray (n,)
        Inertia constants on the generator base. [s]
    k_pu_per_rad : numpy.ndarray (n-1,)
        Section stiffnesses. [pu torque / electrical rad]
    d_pu : numpy.ndarray (n,)
        Self damping of each mass. [pu torque / pu speed]
    damping_ratio : float
        Modal damping ratio of every torsional mode. [frac]
    generator : int
        Index of the generator mass.
    f0_hz : float
        System frequency. [Hz]
    s_rated_mva : float
        Generator rating (the torque base). [MVA]
    name : str
    """

    masses: tuple
    h_s: np.ndarray
    k_pu_per_rad: np.ndarray
    d_pu: np.ndarray
    damping_ratio: float
    generator: int
    f0_hz: float = 60.0
    s_rated_mva: float = 1.0
    name: str = "shaft"
    _eig: tuple = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        h = np.asarray(self.h_s, dtype=float)
        k = np.asarray(self.k_pu_per_rad, dtype=float)
        d = np.asarray(self.d_pu, dtype=float)
        n = h.size
        if n < 2 or k.size != n - 1 or d.size != n or len(self.masses) != n:
            raise ValueError(f"shaft {self.name!r}: {n} masses need {n - 1} stiffnesses and {n} dampings")
        if np.any(h <= 0) or np.any(k <= 0) or np.any(d < 0):
            raise ValueError(f"shaft {self.name!r}: H and K must be > 0, D >= 0")
        if not 0 <= self.generator < n:
            raise ValueError(f"shaft {self.name!r}: generator index {self.generator} outside 0..{n - 1}")
        for a, v in (("h_s", h), ("k_pu_per_rad", k), ("d_pu", d)):
            object.__setattr__(self, a, v)

    # ------------------------------------------------------------------ matrices
    @property
    def n_masses(self) -> int:
        """Number of masses."""
        return int(self.h_s.size)

    @property
    def sections(self) -> list[str]:
        """Section names ``"<upstream>-<downstream>"``."""
        return [f"{a}-{b}" for a, b in zip(self.masses[:-1], self.masses[1:])]

    @property
    def w0_rad_per_s(self) -> float:
        """Base angular speed ω0 = 2π f0. [rad/s]"""
        return 2.0 * np.pi * self.f0_hz

    def stiffness_matrix(self) -> np.ndarray:
        """K (n, n): the chain's Laplacian. [pu torque / rad]"""
        n, k = self.n_masses, self.k_pu_per_rad
        km = np.zeros((n, n))
        i = np.arange(n - 1)
        km[i, i] += k
        km[i + 1, i + 1] += k
        km[i, i + 1] -= k
        km[i + 1, i] -= k
        return km

    def undamped_modes(self) -> tuple[np.ndarray, np.ndarray]:
        """Undamped modes of M δ̈ + K δ = 0, M = diag(2H/ω0).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Natural frequencies (n,), ascending, the first the rigid-body 0 [Hz], and the
            mass-normalized shapes Φ (n, n), Φᵀ M Φ = I.
        """
        m = 2.0 * self.h_s / self.w0_rad_per_s
        s = 1.0 / np.sqrt(m)
        lam, v = np.linalg.eigh(s[:, None] * self.stiffness_matrix() * s[None, :])
        lam = np.clip(lam, 0.0, None)
        return np.sqrt(lam) / (2.0 * np.pi), s[:, None] * v

    def torsional_modes_hz(self) -> np.ndarray:
        """The n − 1 torsional (elastic) mode frequencies, ascending. [Hz]"""
        return self.undamped_modes()[0][1:]

    def damping_matrix(self) -> np.ndarray:
        """C (n, n) of the speed equation: modal ζ on every elastic mode plus diag(D).
        [pu torque / pu speed]"""
        f, phi = self.undamped_modes()
        m = 2.0 * self.h_s / self.w0_rad_per_s
        w = 2.0 * np.pi * f
        w[0] = 0.0  # no damping on the rigid-body rotation
        mp = m[:, None] * phi
        c_delta = mp @ np.diag(2.0 * self.damping_ratio * w) @ mp.T
        return self.w0_rad_per_s * c_delta + np.diag(self.d_pu)

    def state_space(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A, B, C, D) with state [Δω (n), z (n−1)], input ΔT_e [pu], outputs T_s [pu].

        Suitable for ``scipy.signal.StateSpace`` / ``lsim``.
        """
        n = self.n_masses
        w0 = self.w0_rad_per_s
        two_h = 2.0 * self.h_s
        a = np.zeros((2 * n - 1, 2 * n - 1))
        a[:n, :n] = -self.damping_matrix() / two_h[:, None]
        for s, k in enumerate(self.k_pu_per_rad):
            a[s, n + s] -= k / two_h[s]           # section s pulls back its upstream mass
            a[s + 1, n + s] += k / two_h[s + 1]   # and drives its downstream mass
            a[n + s, s] = w0
            a[n + s, s + 1] = -w0
        b = np.zeros((2 * n - 1, 1))
        b[self.generator, 0] = -1.0 / two_h[self.generator]
        c = np.zeros((n - 1, 2 * n - 1))
        c[np.arange(n - 1), n + np.arange(n - 1)] = self.k_pu_per_rad
        return a, b, c, np.zeros((n - 1, 1))

    def _poles_residues(self) -> tuple[np.ndarray, np.ndarray]:
        if self._eig is None:
            a, b, c, _ = self.state_space()
            lam, v = np.linalg.eig(a)
            wb = np.linalg.solve(v, b)[:, 0]
            res = (c @ v) * wb[None, :]              # (sections, poles)
            # the rigid-body pole (0 without self damping) carries no section torque: drop it
            keep = ~((np.abs(lam) < 1e-9) & (np.abs(res).max(axis=0) < 1e-9 * np.abs(res).max()))
            object.__setattr__(self, "_eig", (lam[keep], res[:, keep]))
        return self._eig

    def frequency_response(self, f_hz: np.ndarray, modes: bool = False) -> np.ndarray:
        """Section torque per unit electrical torque at the generator, T_s(jω) / ΔT_e(jω).

        Parameters
        ----------
        f_hz : numpy.ndarray (F,)
            Frequencies. [Hz]
        modes : bool
            Split into the torsional modes' contributions (each complex pole pair).

        Returns
        -------
        numpy.ndarray
            (sections, F) complex [pu/pu]; with ``modes``, (n−1 modes, sections, F), in the
            order of :meth:`torsional_modes_hz` (a real pole of the self damping, if any, counts
            with the nearest mode); the modes sum to the total.
        """
        lam, res = self._poles_residues()
        jw = 2j * np.pi * np.asarray(f_hz, dtype=float)
        f_modes = self.torsional_modes_hz()
        f_pole = np.abs(lam.imag) / (2.0 * np.pi)
        idx = np.argmin(np.abs(f_pole[:, None] - f_modes[None, :]), axis=1)
        out = np.zeros((f_modes.size, res.shape[0], jw.size), dtype=complex)
        for p in range(lam.size):  # a few poles: broadcast outer products (frequency last)
            out[idx[p]] += res[:, p, None] * (1.0 / (jw - lam[p]))[None, :]
        return out if modes else out.sum(axis=0)

    def mode_poles(self) -> list[list[tuple[complex, np.ndarray]]]:
        """Per torsional mode (order of :meth:`torsional_modes_hz`), its poles λ [1/s] with
        imag ≥ 0 and their section residues (S,): a complex λ stands for its conjugate pair
        too, a real one for itself (self damping). T_s(jω) = Σ res_s / (jω − λ) (+ conj.)."""
        lam, res = self._poles_residues()
        f_modes = self.torsional_modes_hz()
        idx = np.argmin(np.abs((np.abs(lam.imag) / (2.0 * np.pi))[:, None] - f_modes[None, :]), axis=1)
        out = [[] for _ in f_modes]
        for p in range(lam.size):
            if lam[p].imag >= 0:
                out[idx[p]].append((complex(lam[p]), res[:, p]))
        return out

    def static_gain(self) -> np.ndarray:
        """Section torque per unit electrical torque at ω → 0 (the shaft as a rigid body
        decelerating under ΔT_e, no self damping): H_upstream / H_total upstream of the generator,
        −H_downstream / H_total beyond it. [pu/pu]"""
        cum = np.cumsum(self.h_s)[:-1] / self.h_s.sum()
        return np.where(np.arange(self.n_masses - 1) < self.generator, cum, cum - 1.0)
