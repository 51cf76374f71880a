"""Scenario schema, the ``[grid_impact]`` section: what the PCC power does to a nearby
turbine-generator's shaft and to the grid's electromechanical modes, and the limits on it
(:mod:`facility.grid_impact`, docs/grid_impact.md). Part of :mod:`facility.config.schema`;
the same rules hold: a unit, a range and a description on every field, unknown keys are errors.
"""

from __future__ import annotations

from pydantic import model_validator

from facility.config.schema_base import F, StrictModel

__all__ = ["GridImpactConfig"]


class GridImpactConfig(StrictModel):
    """Grid-side impact: turbine-generator shaft torque, electromechanical modes, shaft fatigue."""

    enabled: bool = F(False, description=(
        "Compute the grid_impact metrics block (and its limits' compliance rows). Off: no block, "
        "no rows."))
    shaft_model: str = F("ieee_fbm", description="Multi-mass shaft: a name in models/grid_impact/ (ieee_fbm).")
    mode_set: str = F("wecc_reduced", description=(
        "Electromechanical modes: a name in models/grid_impact/ (wecc_reduced, smib_example; derived with ANDES: "
        "kundur_two_area, ieee39, wecc179) or the path of a mode set file (e.g. one facility grid-modes wrote)."))
    generator_share_frac: float | None = F(None, unit="frac", gt=0, le=1, description=(
        "Share of a PCC power change the turbine-generator picks up at the moment of the change, "
        "before its rotor moves (its electrical torque change is share x dP / its MVA rating; the "
        "grid connection takes it over after the swing). Give this or both sync_coeff_* keys."))
    sync_coeff_gen_mw_per_rad: float | None = F(None, unit="MW/rad", gt=0, le=1e7, description=(
        "Synchronizing power coefficient of the generator as seen from the PCC; with "
        "sync_coeff_rest_mw_per_rad it sets the share Ks_gen / (Ks_gen + Ks_rest)."))
    sync_coeff_rest_mw_per_rad: float | None = F(None, unit="MW/rad", ge=0, le=1e8, description=(
        "Synchronizing power coefficient of the rest of the network seen from the PCC."))
    grid_sync_torque_pu_per_rad: float | None = F(None, unit="pu/rad", ge=0, le=10, description=(
        "Synchronizing torque coefficient K_sync of the generator against the grid, in pu of the "
        "shaft model's torque base (S_rated at synchronous speed) per electrical rad: holds the "
        "shaft to the grid, so a slow load change is carried by the connection, not by the shaft. "
        "None = from the network: Kg Kr / (Kg + Kr) / S_rated with the two sync_coeff_* keys, "
        "else the mode set's [smib] ks_pu_per_rad, else 1.5 (assumed, textbook order). "
        "0 = a floating shaft (no connection)."))
    grid_damping_pu: float | None = F(None, unit="pu", ge=0, le=1000, description=(
        "Damping torque coefficient D_e of the connection at the generator, pu torque per pu "
        "speed. None = the mode set's [smib] d_pu, else the D that damps the shaft's rigid-body "
        "swing against the grid at 5 % (D = 0.05 x 4 H_total w_n, w_n = sqrt(K_sync w0 / 2 H_total))."))
    governor_droop_frac: float | None = F(None, unit="pu/pu", gt=0, le=1, description=(
        "Speed governor droop R on the turbine masses (0.05 = a 5 % speed change moves the "
        "turbine torque by 1 pu), shared by the shaft model's turbine_torque_frac. None = no "
        "governor (default: against an infinite bus the speed returns to 0, so a governor acts "
        "only in the swing)."))
    governor_time_constant_s: float = F(0.5, unit="s", gt=0, le=100, description=(
        "Lag of the speed governor (with governor_droop_frac)."))
    torsional_band_min_hz: float | None = F(None, unit="Hz", gt=0, le=1000, description=(
        "Lower edge of the torsional band: section torque at and above it is torsional (limits, "
        "fatigue, LP caps), below it quasi-static (reported apart). None = half the lowest "
        "torsional mode of the connected shaft (ieee_fbm: 7.9 Hz). Must lie between the "
        "electromechanical mode and the lowest torsional mode."))
    mech_damping_ratio: float | None = F(None, unit="frac", gt=0, lt=1, description=(
        "Modal damping ratio of every torsional mode; none = the shaft model's (ieee_fbm: 0.001, "
        "assumed). Small and uncertain: sweep it."))
    sn_exponent: float | None = F(None, unit="-", gt=0, le=50, description=(
        "S-N curve exponent m, N = N_e (T_e / T_a)^m; none = the shaft model's (assumed)."))
    sn_endurance_torque_pu: float | None = F(None, unit="pu", gt=0, le=100, description=(
        "Endurance torque amplitude T_e (no damage at or below), in pu of the shaft model's "
        "torque base (S_rated at synchronous speed); none = the shaft model's (assumed)."))
    sn_endurance_cycles: float | None = F(None, unit="cycles", gt=0, le=1e12, description=(
        "Cycles N_e to failure at T_e; none = the shaft model's (assumed)."))
    max_shaft_torque_pu: float | None = F(None, unit="pu", gt=0, le=100, description=(
        "Largest torque amplitude of any single FFT bin of the PCC power in the torsional band "
        "in any shaft section (a_k x share / S_rated x |H_s(f_k)|), in pu of the shaft model's "
        "torque base (S_rated at synchronous speed); an exact LP row per bin for facility size."))
    max_mode_response_mw: float | None = F(None, unit="MW", gt=0, le=1e5, description=(
        "Largest generator-power amplitude any single FFT bin of the PCC power drives through any "
        "electromechanical mode (a_k x |H_i(f_k)|); an exact LP row per bin for facility size."))
    max_fatigue_damage_per_year: float | None = F(None, unit="1/yr", gt=0, le=1e6, description=(
        "Largest Miner damage per year of any shaft section's torsional-band torque (1 = the "
        "shaft's life used up in a year); checked by the verification run only (not an LP row)."))

    @model_validator(mode="after")
    def _share(self) -> "GridImpactConfig":
        coeffs = (self.sync_coeff_gen_mw_per_rad, self.sync_coeff_rest_mw_per_rad)
        if self.generator_share_frac is not None and any(c is not None for c in coeffs):
            raise ValueError("grid_impact: give generator_share_frac [frac] or the two sync_coeff_* "
                             "keys [MW/rad], not both")
        if (coeffs[0] is None) != (coeffs[1] is None):
            raise ValueError("grid_impact: sync_coeff_gen_mw_per_rad and sync_coeff_rest_mw_per_rad "
                             "[MW/rad] go together")
        if self.enabled and self.generator_share_frac is None and coeffs[0] is None:
            raise ValueError("grid_impact.enabled needs grid_impact.generator_share_frac [frac, 0-1] "
                             "or both sync_coeff_gen_mw_per_rad and sync_coeff_rest_mw_per_rad [MW/rad]")
        if self.limits() and not self.enabled:
            raise ValueError(f"{', '.join('grid_impact.' + k for k in self.limits())} is set but "
                             "grid_impact.enabled = false; set grid_impact.enabled = true")
        return self

    @property
    def share_frac(self) -> float:
        """The generator's share of the PCC oscillation. [frac]"""
        if self.generator_share_frac is not None:
            return float(self.generator_share_frac)
        g, r = self.sync_coeff_gen_mw_per_rad, self.sync_coeff_rest_mw_per_rad
        return float(g / (g + r))

    def limits(self) -> dict:
        """The limits that are set, by key."""
        keys = ("max_shaft_torque_pu", "max_mode_response_mw", "max_fatigue_damage_per_year")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}
