"""Scenario sections of grid disturbances: ``[[grid_events]]`` (voltage sags at the PCC) and the
ride-through curve of a utility spec (``[spec.ride_through]``).

The physics that acts on them is in :mod:`facility.electrical.sags` (UPS transfer, cooling
load) and :mod:`facility.electrical.ride_through` (the compliance rows).
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from facility.config.schema_base import F, StrictModel

__all__ = ["GridEventConfig", "RideThroughSpec"]


class GridEventConfig(StrictModel):
    """A voltage sag at the PCC: a rectangular sag (``depth_pu`` for ``duration_s``) or a recorded trace."""

    kind: Literal["sag"] = F("sag", description="Kind of grid event; 'sag' = a voltage sag at the PCC.")
    start_s: float = F(unit="s", ge=0, le=7 * 86400.0, description="Time the sag starts.")
    duration_s: float | None = F(None, unit="s", gt=0, le=3600.0, description=(
        "Length of a rectangular sag (with depth_pu); none with trace_file."))
    depth_pu: float | None = F(None, unit="pu", ge=0, lt=1.0, description=(
        "Retained voltage at the PCC during a rectangular sag (0.7 = the voltage falls to 70 % of "
        "nominal); none with trace_file."))
    trace_file: str | None = F(None, description=(
        "CSV of a recorded PCC voltage with columns t_s [s] (from start_s, increasing) and vm_pu "
        "[pu]; linearly interpolated, 1 pu before its first and after its last sample. Instead of "
        "duration_s and depth_pu; a relative path resolves against the scenario's folder."))

    @model_validator(mode="after")
    def _one_shape(self) -> "GridEventConfig":
        rect = self.duration_s is not None or self.depth_pu is not None
        if self.trace_file is not None and rect:
            raise ValueError("give either trace_file or duration_s [s] with depth_pu [pu], not both")
        if self.trace_file is None and (self.duration_s is None or self.depth_pu is None):
            raise ValueError("a sag needs duration_s [s] and depth_pu [pu] (retained voltage), or a trace_file")
        return self


class RideThroughSpec(StrictModel):
    """Voltage ride-through curve and recovery of a utility spec (judged only on runs with ``[[grid_events]]``)."""

    band_max_vm_pu: list[float] = F(unit="pu", min_length=1, max_length=16, description=(
        "Upper voltage edge of each ride-through band, descending (ERCOT: 0.9, 0.8, 0.5, 0.2); "
        "band i spans [band_max_vm_pu[i+1], band_max_vm_pu[i]), the last one down to 0."))
    band_min_ride_s: list[float] = F(unit="s", min_length=1, max_length=16, description=(
        "Time the load must stay connected while the voltage stays below each band's upper edge "
        "(ERCOT: 2.0, 0.5, 0.25, 0.15); longer below an edge, the load may disconnect."))
    recovery_vm_pu: float = F(0.9, unit="pu", gt=0, le=1.0, description=(
        "Voltage above which the sag has ended and the recovery time counts."))
    recovery_frac: float | None = F(None, unit="frac", gt=0, le=1.0, description=(
        "Share of the consumption without the sag the site must draw again after the sag "
        "(ERCOT: 0.9); none = no recovery row."))
    max_recovery_s: float | None = F(None, unit="s", gt=0, le=3600.0, description=(
        "Time from the voltage's recovery within which recovery_frac must be reached (ERCOT: 2)."))
    max_load_loss_mw: float | None = F(None, unit="MW", gt=0, le=1e6, description=(
        "Largest allowed loss of consumption against the run without the sag; none = reported, no row."))
    source: str = F("", description="Where the curve comes from.")

    @model_validator(mode="after")
    def _curve(self) -> "RideThroughSpec":
        vm, ride = self.band_max_vm_pu, self.band_min_ride_s
        if len(vm) != len(ride):
            raise ValueError(f"band_max_vm_pu ({len(vm)} values) and band_min_ride_s ({len(ride)} values) "
                             f"must have one value per band")
        if any(v <= 0 or v > 1.0 for v in vm) or any(b >= a for a, b in zip(vm, vm[1:])):
            raise ValueError(f"band_max_vm_pu = {vm} [pu] must be strictly descending within (0, 1]")
        if any(r <= 0 or r > 3600.0 for r in ride):
            raise ValueError(f"band_min_ride_s = {ride} [s] must lie in (0, 3600]")
        if (self.recovery_frac is None) != (self.max_recovery_s is None):
            raise ValueError("recovery_frac [frac] and max_recovery_s [s] go together (both or neither)")
        return self
