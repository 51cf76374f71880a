r"""Multi-mass turbine-generator shaft connected to the grid: state space from H, K, D, the
generator's synchronizing and damping torque, an optional governor, and its frequency response.

Masses i = 0 … n−1 in a line (turbines, generator, exciter), section s joins masses s and s+1.
Per unit on the generator's MVA base S_rated (torque base S_rated / ω_m0, ω_m0 the synchronous
mechanical speed: 1 pu is the torque that carries S_rated at synchronous speed; at ω ≈ 1 a
power change ΔP [MW] is a torque change ΔP / S_rated [pu]), with ω0 = 2π f0:

.. math::

    2 H_i \frac{d\Delta\omega_i}{dt} = T_i - \sum_j C_{ij}\,\Delta\omega_j
        + K_{i-1} z_{i-1} - K_i z_i,\qquad
    \frac{dz_s}{dt} = \omega_0 (\Delta\omega_s - \Delta\omega_{s+1}),

Δω_i the speed deviation [pu], z_s = δ_s − δ_{s+1} the twist of section s [electrical rad],
section torque T_s = K_s z_s [pu] (positive when the upstream mass leads, i.e. transmits
torque towards the generator). In angle coordinates this is M δ̈ + C_δ δ̇ + K δ = T with
M = diag(2H/ω0), so the undamped modes are the square roots of the eigenvalues of M⁻¹K (the
1/ω0 is what makes the IEEE FBM's numbers give its published 15.71 … 47.46 Hz).

Grid connection (generator mass g): the electrical torque is that of a machine on an infinite
bus, T_g = −(ΔT_e + K_sync δ_g + D_e Δω_g), δ_g the rotor angle against the bus
[electrical rad], dδ_g/dt = ω0 Δω_g, K_sync the synchronizing torque coefficient
[pu torque / electrical rad], D_e the damping torque coefficient [pu torque / pu speed]
(:func:`facility.grid_impact.modal.smib_mode` is the same machine as one rigid mass). In angles
K_sync adds a spring to ground at the generator: the rigid-body rotation becomes the
electromechanical mode (the shaft swinging against the grid as a whole, near
sqrt(K_sync ω0 / (2 H_total)) / 2π), and a constant ΔT_e is carried by the connection in steady
state (δ_g = −ΔT_e / K_sync), not by the shaft: the section torques return to zero. With
K_sync = 0 the shaft floats: a constant ΔT_e decelerates it without end and each section
carries its share of the inertia (:meth:`ShaftModel.static_gain`).

Governor (optional): a droop R [pu speed / pu torque] with a lag T_g [s] on the generator
speed, T_g dx/dt = −Δω_g / R − x, its torque x shared among the turbine masses by
``turbine_torque_frac`` (T_i += f_i x).

Damping: C = ω0 · M Φ diag(2 ζ ω_r) Φᵀ M + diag(D) + D_e e_g e_gᵀ, Φ the mass-normalized
undamped mode shapes of the connected shaft: every torsional mode gets the modal damping
ratio ζ, the electromechanical mode none from it (its damping is D_e's), plus each mass's self
damping D_i [pu torque / pu speed].

Input: the generator's electrical torque change ΔT_e [pu] (a load change at the PCC the
generator picks up at first: ΔT_e ≈ share · ΔP_PCC / S_rated at ω ≈ 1).

State [Δω (n), z (n−1), δ_g (connected only), x (governor only)]: twists instead of absolute
angles keep the rigid-body rotation of a floating shaft out of the state (it carries no section
torque); its modes are simple, so the frequency response is the pole-residue sum over the
eigenvalues of A (:meth:`ShaftModel.frequency_response`). The poles are grouped by the
undamped mode they belong to: group 0 the electromechanical mode (with the governor's pole
and any real pole), groups 1 … n−1 the torsional modes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["ShaftModel"]


@dataclass(frozen=True)
class ShaftModel:
    """A lumped multi-mass shaft, floating or connected to the grid at its generator.

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
    sync_torque_pu_per_rad : float
        Synchronizing torque coefficient of the generator against the grid, K_sync; 0 = a
        floating shaft. [pu torque / electrical rad]
    grid_damping_pu : float
        Damping torque coefficient of the connection, D_e. [pu torque / pu speed]
    governor_droop_frac : float or None
        Governor droop R; None = no governor. [pu speed / pu torque]
    governor_time_constant_s : float
        Governor lag T_g. [s]
    turbine_torque_frac : numpy.ndarray (n,) or None
        Share of the governor's torque on each mass (sums to 1; needed with a governor). [frac]
    fatigue : dict or None
        The shaft's S-N curve from its library file (``sn_exponent``, ``t_endurance_pu`` [pu],
        ``n_endurance_cycles``); None for a shaft built in code without one.
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
    sync_torque_pu_per_rad: float = 0.0
    grid_damping_pu: float = 0.0
    governor_droop_frac: float | None = None
    governor_time_constant_s: float = 0.5
    turbine_torque_frac: np.ndarray | None = None
    fatigue: dict | None = None
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
        if self.sync_torque_pu_per_rad < 0 or self.grid_damping_pu < 0:
            raise ValueError(f"shaft {self.name!r}: the connection's K_sync and D_e must be >= 0")
        for a, v in (("h_s", h), ("k_pu_per_rad", k), ("d_pu", d)):
            object.__setattr__(self, a, v)
        if self.governor_droop_frac is not None:
            f = None if self.turbine_torque_frac is None else np.asarray(self.turbine_torque_frac, dtype=float)
            if f is None or f.size != n or np.any(f < 0) or abs(f.sum() - 1.0) > 1e-9:
                raise ValueError(f"shaft {self.name!r}: a governor needs turbine_torque_frac, {n} shares >= 0 "
                                 "summing to 1")
            if not (self.governor_droop_frac > 0 and self.governor_time_constant_s > 0):
                raise ValueError(f"shaft {self.name!r}: governor droop and time constant must be > 0")
            object.__setattr__(self, "turbine_torque_frac", f)

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

    @property
    def connected(self) -> bool:
        """Whether the generator has a synchronizing torque (K_sync > 0)."""
        return self.sync_torque_pu_per_rad > 0.0

    def connect(self, sync_torque_pu_per_rad: float, grid_damping_pu: float,
                governor_droop_frac: float | None = None, governor_time_constant_s: float = 0.5) -> "ShaftModel":
        """This shaft with its generator connected to the grid (see the module docstring)."""
        return replace(self, sync_torque_pu_per_rad=float(sync_torque_pu_per_rad),
                       grid_damping_pu=float(grid_damping_pu), governor_droop_frac=governor_droop_frac,
                       governor_time_constant_s=float(governor_time_constant_s))

    def stiffness_matrix(self) -> np.ndarray:
        """K (n, n): the chain's Laplacian, plus K_sync at the generator when connected.
        [pu torque / rad]"""
        n, k = self.n_masses, self.k_pu_per_rad
        km = np.zeros((n, n))
        i = np.arange(n - 1)
        km[i, i] += k
        km[i + 1, i + 1] += k
        km[i, i + 1] -= k
        km[i + 1, i] -= k
        km[self.generator, self.generator] += self.sync_torque_pu_per_rad
        return km

    def undamped_modes(self) -> tuple[np.ndarray, np.ndarray]:
        """Undamped modes of M δ̈ + K δ = 0, M = diag(2H/ω0).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Natural frequencies (n,), ascending, the first the electromechanical mode (the
            rigid-body 0 of a floating shaft) [Hz], and the mass-normalized shapes Φ (n, n),
            Φᵀ M Φ = I.
        """
        m = 2.0 * self.h_s / self.w0_rad_per_s
        s = 1.0 / np.sqrt(m)
        lam, v = np.linalg.eigh(s[:, None] * self.stiffness_matrix() * s[None, :])
        lam = np.clip(lam, 0.0, None)
        if not self.connected:
            lam[0] = 0.0  # the rigid-body rotation (eigh gives it to round-off)
        return np.sqrt(lam) / (2.0 * np.pi), s[:, None] * v

    def torsional_modes_hz(self) -> np.ndarray:
        """The n − 1 torsional (elastic) mode frequencies, ascending. [Hz]"""
        return self.undamped_modes()[0][1:]

    def electromechanical_mode_hz(self) -> float:
        """Undamped frequency of the shaft swinging against the grid as a whole (0 when
        floating). [Hz]"""
        return float(self.undamped_modes()[0][0])

    def damping_matrix(self) -> np.ndarray:
        """C (n, n) of the speed equation: modal ζ on every torsional mode, diag(D), and the
        connection's D_e at the generator. [pu torque / pu speed]"""
        f, phi = self.undamped_modes()
        m = 2.0 * self.h_s / self.w0_rad_per_s
        w = 2.0 * np.pi * f
        w[0] = 0.0  # no modal damping on the rigid-body / electromechanical mode
        mp = m[:, None] * phi
        c_delta = mp @ np.diag(2.0 * self.damping_ratio * w) @ mp.T
        c = self.w0_rad_per_s * c_delta + np.diag(self.d_pu)
        c[self.generator, self.generator] += self.grid_damping_pu
        return c

    def state_space(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(A, B, C, D) with state [Δω (n), z (n−1), δ_g (connected), x (governor)], input
        ΔT_e [pu], outputs T_s [pu]. Suitable for ``scipy.signal.StateSpace`` / ``lsim``."""
        n = self.n_masses
        g = self.generator
        w0 = self.w0_rad_per_s
        two_h = 2.0 * self.h_s
        n_x = 2 * n - 1 + int(self.connected) + int(self.governor_droop_frac is not None)
        a = np.zeros((n_x, n_x))
        a[:n, :n] = -self.damping_matrix() / two_h[:, None]
        for s, k in enumerate(self.k_pu_per_rad):
            a[s, n + s] -= k / two_h[s]           # section s pulls back its upstream mass
            a[s + 1, n + s] += k / two_h[s + 1]   # and drives its downstream mass
            a[n + s, s] = w0
            a[n + s, s + 1] = -w0
        j = 2 * n - 1
        if self.connected:                        # δ_g: the rotor angle against the grid
            a[g, j] = -self.sync_torque_pu_per_rad / two_h[g]
            a[j, g] = w0
            j += 1
        if self.governor_droop_frac is not None:  # x: the governor's torque
            tg = self.governor_time_constant_s
            a[j, g] = -1.0 / (self.governor_droop_frac * tg)
            a[j, j] = -1.0 / tg
            a[:n, j] = self.turbine_torque_frac / two_h
        b = np.zeros((n_x, 1))
        b[g, 0] = -1.0 / two_h[g]
        c = np.zeros((n - 1, n_x))
        c[np.arange(n - 1), n + np.arange(n - 1)] = self.k_pu_per_rad
        return a, b, c, np.zeros((n - 1, 1))

    def _poles_residues(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._eig is None:
            a, b, c, _ = self.state_space()
            lam, v = np.linalg.eig(a)
            wb = np.linalg.solve(v, b)[:, 0]
            res = (c @ v) * wb[None, :]              # (sections, poles)
            # the rigid-body pole of a floating shaft (0 without self damping) carries no section
            # torque: drop it
            keep = ~((np.abs(lam) < 1e-9) & (np.abs(res).max(axis=0) < 1e-9 * np.abs(res).max()))
            lam, res = lam[keep], res[:, keep]
            f_modes = self.undamped_modes()[0]
            group = np.argmin(np.abs((np.abs(lam.imag) / (2.0 * np.pi))[:, None] - f_modes[None, :]), axis=1)
            object.__setattr__(self, "_eig", (lam, res, group))
        return self._eig

    def frequency_response(self, f_hz: np.ndarray, modes: bool = False) -> np.ndarray:
        """Section torque per unit electrical torque at the generator, T_s(jω) / ΔT_e(jω).

        Parameters
        ----------
        f_hz : numpy.ndarray (F,)
            Frequencies. [Hz]
        modes : bool
            Split into the pole groups' contributions: [0] the electromechanical mode's
            (with the governor's and any real pole; zero for a floating shaft without self
            damping), [r] torsional mode r (order of :meth:`torsional_modes_hz`, from 1).

        Returns
        -------
        numpy.ndarray
            (sections, F) complex [pu/pu]; with ``modes``, (n groups, sections, F); the groups
            sum to the total.
        """
        lam, res, group = self._poles_residues()
        jw = 2j * np.pi * np.asarray(f_hz, dtype=float)
        inv = 1.0 / (jw[None, :] - lam[:, None])           # (poles, F): a few poles, one product
        if not modes:
            return res @ inv
        out = np.zeros((self.n_masses, res.shape[0], jw.size), dtype=complex)
        for g in np.unique(group):
            out[g] = res[:, group == g] @ inv[group == g]
        return out

    def mode_poles(self) -> list[list[tuple[complex, np.ndarray]]]:
        """Per pole group (as :meth:`frequency_response` with ``modes``: [0] electromechanical,
        [r] torsional mode r), its poles λ [1/s] with imag ≥ 0 and their section residues
        (S,): a complex λ stands for its conjugate pair too, a real one for itself.
        T_s(jω) = Σ res_s / (jω − λ) (+ conj.)."""
        lam, res, group = self._poles_residues()
        out = [[] for _ in range(self.n_masses)]
        for p in range(lam.size):
            if lam[p].imag >= 0:
                out[group[p]].append((complex(lam[p]), res[:, p]))
        return out

    def electromechanical_damping_ratio(self) -> float:
        """Damping ratio −Re λ / |λ| of the electromechanical mode's pole pair (0 when
        floating or overdamped). [frac]"""
        pairs = [lam for lam, _ in self.mode_poles()[0] if lam.imag > 0]
        return float(-pairs[0].real / abs(pairs[0])) if pairs else 0.0

    def static_gain(self) -> np.ndarray:
        """Section torque per unit electrical torque at ω → 0. Floating, no governor: the shaft
        as a rigid body decelerating under ΔT_e, H_upstream / H_total upstream of the generator,
        −H_downstream / H_total beyond it; connected: 0 (the connection carries ΔT_e); else the
        state space's DC gain −C A⁻¹ B. [pu/pu]"""
        if not self.connected and self.governor_droop_frac is None and not np.any(self.d_pu):
            cum = np.cumsum(self.h_s)[:-1] / self.h_s.sum()
            return np.where(np.arange(self.n_masses - 1) < self.generator, cum, cum - 1.0)
        a, b, c, _ = self.state_space()
        return -(c @ np.linalg.solve(a, b))[:, 0]
