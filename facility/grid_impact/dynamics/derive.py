"""Derive a mode set from an ANDES case (``facility grid-modes``).

1. :func:`~facility.grid_impact.dynamics.case.load_case`: the case with constant-power loads,
   a 0 MW load at the PCC bus, its power flow and time-domain initialization.
2. :func:`~facility.grid_impact.dynamics.case.linearize`: ANDES's analytic Jacobians at that
   point, the input column of the PCC load's power, the output rows.
3. :func:`~facility.grid_impact.dynamics.linear.reduce_dae`: the state space (A, B, C, D);
   A's eigenvalues are ANDES's own (checked against ``EIG.calc_As`` here, 1e-6 relative).
4. :func:`~facility.grid_impact.dynamics.linear.modal_residues`: every pole's residue to the
   generator's electrical power [MW/MW], its speed [pu/MW] and the PCC bus angle [rad/MW];
   the bus frequency's residues are λ r_θ / 2π [Hz/MW] (Δf = dθ/dt / 2π), and the angle's
   instantaneous step D_θ (the load's angle drop across the network) enters it differentiated
   through a 20 ms lag, ``FREQ_LAG_S`` (ANDES's bus-frequency measurement filter): a stepped
   load gives a finite frequency spike, not an impulse.
5. The electromechanical modes: complex pole pairs with natural frequency in
   [``min_hz``, ``max_hz``], damping ratio below ``max_damping_ratio`` and at least
   ``min_rotor_participation`` of their participation in the machines' rotor angles and
   speeds. Everything else — the feedthrough D (the generator's instantaneous share), the
   other poles (governors, exciters, the slow common motion) — is the set's ``[rest]``, so
   the rows sum to the exact linear response. Poles whose largest contribution
   (|r|/|Re λ| for a pair, |r|/|λ| for a real pole) is below ``prune`` of the set's largest
   are dropped from the rest, and a pole at λ = 0 (the angle reference) carries no power.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np

from facility.errors import ScenarioError
from facility.grid_impact.dynamics.case import (AndesCase, _quiet, andes_version, bus_names,
                                                linearize, load_case)
from facility.grid_impact.dynamics.linear import modal_residues, reduce_dae

__all__ = ["derive_mode_set", "derive_from_case"]

#: rotor-angle and speed states of the synchronous machines (ANDES state names)
ROTOR_STATES = ("delta", "omega")
#: lag through which the PCC angle's instantaneous step enters the PCC frequency [s] (the filter
#: time constant of ANDES's bus-frequency measurement, BusFreq Tf)
FREQ_LAG_S = 0.02


def _pair(z: complex) -> list[float]:
    return [float(np.real(z)), float(np.imag(z))]


def _mode_name(f_hz: float, taken: set) -> str:
    base = "m" + f"{f_hz:.3f}".replace(".", "p")
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _check_eigenvalues(c: AndesCase, dae, st, lam) -> str:
    """A's eigenvalues against ANDES's eigenvalue routine (``EIG.calc_As``), 1e-6 relative. Where
    the case has empty g_y columns (regularized with −1e-6 here, +1 by ANDES:
    :func:`~facility.grid_impact.dynamics.linear.reduce_dae`) the reduction is redone with
    ANDES's +1 for the comparison, so it checks everything but that one deliberate choice."""
    ss = c.system
    with _quiet():
        ss.EIG.calc_As()
    mu = np.linalg.eigvals(np.asarray(ss.EIG.As))
    ref = lam if not st.n_empty else np.linalg.eigvals(reduce_dae(dae, empty_diag=1.0).a)
    off = max(float(np.min(np.abs(mu - v))) for v in ref) if ref.size else 0.0
    scale = max(1.0, float(np.abs(mu).max(initial=0.0)))
    if ref.size != mu.size or off > 1e-6 * scale:
        raise ScenarioError(f"{c.case}: the linearization's eigenvalues differ from ANDES's "
                            f"(largest gap {off:.3g} 1/s, {ref.size} against {mu.size} states)")
    if st.n_empty:
        return (f"equal to ANDES's EIG to {off:.2g} /s ({ref.size} states) when reduced with ANDES's +1 on the "
                f"{st.n_empty} empty algebraic columns; the set uses -1e-6 there (no spurious poles at +1 /s)")
    return f"equal to ANDES's EIG to {off:.2g} /s ({lam.size} states)"


def _check_residues(st, lam, res) -> float:
    """Largest gap between the pole-residue sum and C (jωI − A)⁻¹ B + D solved directly, over
    0.01-10 Hz, relative to the largest |H| of each output; above 1e-3 the eigenvectors are
    too ill-conditioned to trust. [frac]"""
    f = np.geomspace(0.01, 10.0, 41)
    direct = st.frequency_response(f)[:, :, 0]                               # (F, q)
    jw = 2j * np.pi * f
    summed = st.d[:, 0][None, :] + np.einsum("iq,fi->fq", res[:, :, 0], 1.0 / (jw[:, None] - lam[None, :]))
    gap = float(np.max(np.abs(summed - direct).max(axis=0) / np.maximum(np.abs(direct).max(axis=0), 1e-300)))
    if gap > 1e-3:
        raise ScenarioError(f"the modal residues reproduce the linear response only to {gap:.2g} (relative): "
                            "the eigenvectors are too ill-conditioned to trust")
    return gap


def derive_from_case(c: AndesCase, name: str, min_hz: float = 0.05, max_hz: float = 4.0,
                     max_damping_ratio: float = 0.5, min_rotor_participation: float = 0.3,
                     prune: float = 1e-6, mode_names: dict | None = None) -> dict:
    """The mode set's table (what :func:`~facility.grid_impact.library.mode_set_from_dict`
    reads) of a loaded case; see the module docstring for the steps and selection."""
    dae = linearize(c)
    st = reduce_dae(dae)
    with _quiet():
        lam, res, part = modal_residues(st)
    fit = _check_residues(st, lam, res)
    scale = max(1.0, float(np.abs(lam).max()))
    eig_check = _check_eigenvalues(c, dae, st, lam)
    r_mw, r_w, r_th = res[:, 0, 0], res[:, 1, 0], res[:, 2, 0]
    r_hz = lam * r_th / (2.0 * np.pi)
    d_mw, d_w = float(st.d[0, 0]), float(st.d[1, 0])
    # Δf = s θ / 2π = (s D_θ + Σ r_θ + Σ λ r_θ / (s − λ)) / 2π; the derivative of the angle's step,
    # s D_θ, through the bus-frequency measurement's lag 1 / (1 + s T_f): D_θ/T_f − (D_θ/T_f²)/(s + 1/T_f)
    d_th = float(st.d[2, 0])
    d_hz = (float(np.real(np.sum(r_th))) + d_th / FREQ_LAG_S) / (2.0 * np.pi)
    rotor = np.array([n.split(" ")[0] in ROTOR_STATES for n in st.x_name])
    rot_part = part[rotor].sum(axis=0)
    wn = np.abs(lam)
    zeta = np.where(wn > 0, -lam.real / np.maximum(wn, 1e-300), 1.0)
    upper = lam.imag > 1e-9 * scale
    em = upper & (wn >= 2 * np.pi * min_hz) & (wn <= 2 * np.pi * max_hz) & (zeta > 0) \
        & (zeta < max_damping_ratio) & (rot_part >= min_rotor_participation)
    if np.any(lam.real > 1e-9 * scale):
        worst = lam[np.argmax(lam.real)]
        raise ScenarioError(f"{c.case}: unstable at the operating point (eigenvalue {worst:.4g} /s)")
    taken: set = set()
    modes = []
    for i in sorted(np.flatnonzero(em), key=lambda i: wn[i]):
        f = float(wn[i] / (2 * np.pi))
        nm = (mode_names or {}).get(len(modes)) or _mode_name(f, taken)
        modes.append({"name": nm, "f_hz": f, "damping_ratio": float(zeta[i]),
                      "rotor_participation": float(rot_part[i]),
                      "residue_mw": _pair(r_mw[i]), "residue_hz": _pair(r_hz[i]),
                      "residue_speed_pu": _pair(r_w[i])})
    # the rest: every other pole once (real ones, and the upper member of each pair)
    other = ~em & (lam.imag >= -1e-9 * scale) & (np.abs(lam) > 1e-9 * scale)
    k = np.flatnonzero(other)
    lam_k = np.where(np.abs(lam[k].imag) <= 1e-9 * scale, lam[k].real + 0j, lam[k])
    real = lam_k.imag == 0
    denom = np.where(real, np.abs(lam_k), np.abs(lam_k.real))

    keep = np.zeros(k.size, bool)
    for r, d in ((r_mw, d_mw), (r_w, d_w), (r_hz, d_hz)):
        size = np.abs(r[k]) / np.maximum(denom, 1e-300)
        modal = np.abs(r[em]) / np.maximum(np.abs(lam[em].real), 1e-300)
        ref = max(float(size.max(initial=0.0)), float(modal.max(initial=0.0)), abs(d))
        keep |= size > prune * max(ref, 1e-300)
    k, lam_k, real = k[keep], lam_k[keep], real[keep]

    def _res(r, extra=0.0):
        return [_pair(np.real(z) if rl else z) for z, rl in zip(r[k], real)] + [[extra, 0.0]]
    lag_pole = [-1.0 / FREQ_LAG_S, 0.0]
    lag_hz = -d_th / FREQ_LAG_S ** 2 / (2.0 * np.pi)
    h_s, s_mva = c.generator_rating()
    gen = getattr(c.system, c.model)
    names = bus_names(c)
    return {
        "name": name,
        "description": (f"derived with ANDES {andes_version()} from {c.case}: load-power input at bus "
                        f"{c.bus} ({names.get(str(c.bus), '')}), generator {c.generator} ({c.model}) observed"),
        "f0_hz": c.f0_hz,
        "observed_h_s": h_s,
        "observed_s_mva": s_mva,
        "derived": {
            "engine": "ANDES", "andes_version": andes_version(), "case": c.case,
            "pcc_bus": str(c.bus), "pcc_bus_name": names.get(str(c.bus), ""),
            "observed_generator": c.generator, "observed_model": c.model,
            "observed_bus": str(gen.bus.v[c.gen_uid]),
            "load_model": "constant power (PQ p2p = q2q = 1), PCC load added at 0 MW",
            "s_base_mva": c.s_base_mva, "n_states": int(lam.size), "eigenvalue_check": eig_check,
            "pcc_frequency": (f"df = d(theta)/dt / 2 pi; the PCC angle's instantaneous step ({d_th:.4g} rad/MW) "
                              f"differentiated through a {1e3 * FREQ_LAG_S:g} ms lag (the last pole of [rest])"),
            "residue_check": f"pole-residue sum = direct C (jwI - A)^-1 B + D to {fit:.2g} (relative, 0.01-10 Hz)",
            "method": ("linearized at the power-flow / time-domain initial point: ANDES Jacobians, "
                       "A = T^-1 (fx - fy gy^-1 gx), B, C, D likewise; residues from A's eigenvectors"),
            "selection": {"min_hz": min_hz, "max_hz": max_hz, "max_damping_ratio": max_damping_ratio,
                          "min_rotor_participation": min_rotor_participation, "prune": prune},
            "date": _dt.date.today().isoformat(),
        },
        "modes": modes,
        "rest": {"d_mw": d_mw, "d_hz": d_hz, "d_speed_pu": d_w,
                 "poles": [_pair(z) for z in lam_k] + [lag_pole],
                 "residue_mw": _res(r_mw), "residue_hz": _res(r_hz, lag_hz), "residue_speed_pu": _res(r_w)},
    }


def derive_mode_set(case: str, bus, observe: str, name: str, **kw) -> dict:
    """Load ``case`` (:func:`~facility.grid_impact.dynamics.case.load_case`) and derive its
    mode set's table (:func:`derive_from_case`)."""
    return derive_from_case(load_case(case, bus, observe), name, **kw)
