"""The generator's connection to the grid, resolved from a ``[grid_impact]`` section: the
synchronizing and damping torque on the shaft's generator mass, the optional governor, and the
edge between the quasi-static and the torsional band of the section torque.

Where each number comes from (first that applies):

* K_sync [pu torque / electrical rad, on the shaft's S_rated]: ``grid_sync_torque_pu_per_rad``;
  the two ``sync_coeff_*`` keys (the generator's and the rest of the network's synchronizing
  power at the PCC in series, K_g K_r / (K_g + K_r) / S_rated: the generator reaches the grid
  through the PCC); the mode set's ``[smib] ks_pu_per_rad``; :data:`DEFAULT_SYNC_TORQUE_PU_PER_RAD`.
* D_e [pu torque / pu speed]: ``grid_damping_pu``; the mode set's ``[smib] d_pu``; the D that
  gives the rigid shaft's swing against the grid the damping ratio
  :data:`DEFAULT_SWING_DAMPING_RATIO`, D = ζ · 4 H_total ω_n with ω_n = sqrt(K_sync ω0 / (2 H_total))
  (the single machine's ζ = D / (4 H ω_n), :func:`facility.grid_impact.modal.smib_mode`).
* Torsional band: f ≥ ``torsional_band_min_hz``, by default half the lowest torsional mode.
"""

from __future__ import annotations

import numpy as np

from facility.errors import ScenarioError
from facility.grid_impact.modal import ModeSet
from facility.grid_impact.shaft import ShaftModel

__all__ = ["DEFAULT_SYNC_TORQUE_PU_PER_RAD", "DEFAULT_SWING_DAMPING_RATIO", "connect_shaft", "torsional_band_min_hz"]

#: K_sync when neither the scenario nor the mode set gives one: the textbook order of a
#: generator on a strong grid (the same figure as the ``smib_example`` mode set; assumed, not
#: taken from a cited machine). [pu torque / electrical rad]
DEFAULT_SYNC_TORQUE_PU_PER_RAD = 1.5
#: Damping ratio of the shaft's rigid-body swing against the grid when D_e is not given
#: (assumed: local electromechanical modes are typically damped a few percent). [frac]
DEFAULT_SWING_DAMPING_RATIO = 0.05


def connection_params(cfg, shaft: ShaftModel, modes: ModeSet) -> tuple[float, float, str]:
    """(K_sync [pu/rad], D_e [pu torque / pu speed], where they come from) for a
    :class:`~facility.config.grid_impact.GridImpactConfig`, a floating ``shaft`` and the
    section's mode set ``modes`` (its :attr:`~facility.grid_impact.modal.ModeSet.smib`)."""
    smib = modes.smib
    if cfg.grid_sync_torque_pu_per_rad is not None:
        ks, src = float(cfg.grid_sync_torque_pu_per_rad), "grid_sync_torque_pu_per_rad"
    elif cfg.sync_coeff_gen_mw_per_rad is not None:
        g, r = cfg.sync_coeff_gen_mw_per_rad, cfg.sync_coeff_rest_mw_per_rad
        ks, src = float(g * r / (g + r) / shaft.s_rated_mva), "sync_coeff_*"
    elif "ks_pu_per_rad" in smib:
        ks, src = float(smib["ks_pu_per_rad"]), f"mode set {cfg.mode_set}"
    else:
        ks, src = DEFAULT_SYNC_TORQUE_PU_PER_RAD, "default"
    if cfg.grid_damping_pu is not None:
        d = float(cfg.grid_damping_pu)
    elif "d_pu" in smib:
        d = float(smib["d_pu"])
    else:
        h_tot = float(shaft.h_s.sum())
        wn = np.sqrt(ks * shaft.w0_rad_per_s / (2.0 * h_tot))
        d = DEFAULT_SWING_DAMPING_RATIO * 4.0 * h_tot * wn
    return ks, d, src


def connect_shaft(cfg, shaft: ShaftModel, modes: ModeSet) -> ShaftModel:
    """``shaft`` with its generator connected as ``cfg`` (a ``GridImpactConfig``) and its mode
    set ``modes`` say."""
    ks, d, _ = connection_params(cfg, shaft, modes)
    if cfg.governor_droop_frac is not None and shaft.turbine_torque_frac is None:
        raise ScenarioError(f"grid_impact.governor_droop_frac needs the shaft model's turbine_torque_frac; "
                            f"{shaft.name} has none")
    return shaft.connect(ks, d, cfg.governor_droop_frac, cfg.governor_time_constant_s)


def torsional_band_min_hz(cfg, shaft: ShaftModel) -> float:
    """Lower edge of the torsional band for a connected ``shaft`` [Hz]: the configured one,
    checked to lie above the electromechanical mode and below the lowest torsional mode, or
    half the lowest torsional mode."""
    f1 = float(shaft.torsional_modes_hz()[0])
    if cfg.torsional_band_min_hz is None:
        return 0.5 * f1
    f_em = shaft.electromechanical_mode_hz()
    if not f_em < cfg.torsional_band_min_hz < f1:
        raise ScenarioError(f"grid_impact.torsional_band_min_hz = {cfg.torsional_band_min_hz:g} Hz must lie between "
                            f"the shaft's electromechanical mode ({f_em:.3g} Hz) and its lowest torsional mode "
                            f"({f1:.4g} Hz)")
    return float(cfg.torsional_band_min_hz)
