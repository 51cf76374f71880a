"""Resolved storage parameters: ratings, efficiencies, SoC bounds (UPS reserve included)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facility.config.checks_storage import duration_violation
from facility.errors import ScenarioError

__all__ = ["StorageParams"]


@dataclass(frozen=True)
class StorageParams:
    """One storage unit with every number the simulator and the optimizer need.

    Built from a scenario section with :meth:`from_config`; sizing may override the ratings.

    Attributes
    ----------
    name : str
        Section name: ``rack_storage``, ``ups`` or ``bess``.
    p_rated_mw : float
        Rated charge and discharge power at the terminals. [MW]
    e_rated_mwh : float
        Rated usable energy; SoC is stored energy / e_rated_mwh. [MWh]
    eff_charge_frac, eff_discharge_frac : float
        Charging efficiency eta_c and discharging efficiency eta_d. [frac]
    min_soc_frac : float
        Lowest SoC the controllers may use: the section's ``min_soc_frac`` plus the UPS
        ride-through ``reserve_frac``. [frac]
    max_soc_frac : float
        Highest SoC. [frac]
    initial_soc_frac : float
        SoC at t = 0. [frac]
    terminal_soc : str
        End-of-horizon SoC policy for the optimizer.
    self_discharge_frac_per_h : float
        Share of the stored energy lost per hour. [frac/h]
    response_s : float
        Time constant of the converter's first-order lag; 0 = instant. [s]
    max_ramp_mw_per_s : float or None
        Ramp limit of the converter; None = unlimited. [MW/s]
    reserve_frac : float
        UPS ride-through reserve already folded into ``min_soc_frac``. [frac]
    eff_ups_frac : float
        Double-conversion efficiency of the UPS path the rack load passes through (1 for
        rack storage and BESS); a loss of the load path, applied by the electrical model. [frac]
    cost_usd_per_kw, cost_usd_per_kwh, degradation_usd_per_mwh : float
        Economics, for the optimizer. [USD/kW], [USD/kWh], [USD/MWh]
    cycle_life, cycle_depth_frac, calendar_life_years : float or None, float, float or None
        Rated cycles at that depth [-], [frac] and calendar life [yr] (life metrics,
        :func:`facility.storage.metrics.life_metrics`).
    """

    name: str
    p_rated_mw: float
    e_rated_mwh: float
    eff_charge_frac: float = 1.0
    eff_discharge_frac: float = 1.0
    min_soc_frac: float = 0.0
    max_soc_frac: float = 1.0
    initial_soc_frac: float = 0.5
    terminal_soc: str = "at_least_initial"
    self_discharge_frac_per_h: float = 0.0
    response_s: float = 0.0
    max_ramp_mw_per_s: float | None = None
    reserve_frac: float = 0.0
    eff_ups_frac: float = 1.0
    cost_usd_per_kw: float = 0.0
    cost_usd_per_kwh: float = 0.0
    degradation_usd_per_mwh: float = 0.0
    cycle_life: float | None = None
    cycle_depth_frac: float = 1.0
    calendar_life_years: float | None = None

    def __post_init__(self) -> None:
        k = self.name
        if not (np.isfinite(self.p_rated_mw) and self.p_rated_mw >= 0):
            raise ScenarioError(f"{k}.p_rated_mw = {self.p_rated_mw!r} MW must be a number >= 0")
        if not (np.isfinite(self.e_rated_mwh) and self.e_rated_mwh >= 0):
            raise ScenarioError(f"{k}.e_rated_mwh = {self.e_rated_mwh!r} MWh must be a number >= 0")
        for f in ("eff_charge_frac", "eff_discharge_frac"):
            v = getattr(self, f)
            if not 0 < v <= 1:
                raise ScenarioError(f"{k}.{f} = {v!r} must lie in (0, 1] [frac]")
        if not 0 <= self.min_soc_frac < self.max_soc_frac <= 1:
            raise ScenarioError(
                f"{k}: min_soc_frac (incl. reserve_frac) = {self.min_soc_frac:g} must be below "
                f"max_soc_frac = {self.max_soc_frac:g}, both in [0, 1] [frac]")
        if not self.min_soc_frac - 1e-12 <= self.initial_soc_frac <= self.max_soc_frac + 1e-12:
            raise ScenarioError(
                f"{k}.initial_soc_frac = {self.initial_soc_frac:g} [frac] must lie in "
                f"[{self.min_soc_frac:g}, {self.max_soc_frac:g}] (min_soc_frac + reserve_frac, "
                f"max_soc_frac)")
        if self.max_ramp_mw_per_s is not None and not self.max_ramp_mw_per_s > 0:
            raise ScenarioError(f"{k}.max_ramp_mw_per_s = {self.max_ramp_mw_per_s!r} MW/s must be > 0")
        if self.response_s < 0:
            raise ScenarioError(f"{k}.response_s = {self.response_s!r} s must be >= 0")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_config(cls, name: str, cfg, p_rated_mw: float | None = None,
                    e_rated_mwh: float | None = None) -> "StorageParams":
        """Resolve a scenario storage section into parameters.

        Parameters
        ----------
        name : str
            Section name (``rack_storage``, ``ups``, ``bess``).
        cfg : facility.config.schema.StorageConfig
            The section.
        p_rated_mw, e_rated_mwh : float, optional
            Ratings that override the section's (e.g. the optimizer's sizing). [MW], [MWh]

        Raises
        ------
        ScenarioError
            A rating is missing (an extendable storage that has not been sized) or the SoC
            bounds are inconsistent.
        """
        p = cfg.p_rated_mw if p_rated_mw is None else float(p_rated_mw)
        e = cfg.e_rated_mwh if e_rated_mwh is None else float(e_rated_mwh)
        if p is None or e is None:
            miss = "p_rated_mw [MW]" if p is None else "e_rated_mwh [MWh]"
            raise ScenarioError(
                f"{name}.{miss} is not set: give it in the scenario or size the storage first "
                f"(extendable = {cfg.extendable})")
        why = duration_violation(name, cfg, float(p), float(e))
        if why:  # a design outside its technology's bounds is never run silently
            raise ScenarioError(why)
        reserve = float(getattr(cfg, "reserve_frac", 0.0))
        return cls(
            name=name, p_rated_mw=float(p), e_rated_mwh=float(e),
            eff_charge_frac=cfg.eff_charge_frac, eff_discharge_frac=cfg.eff_discharge_frac,
            min_soc_frac=cfg.min_soc_frac + reserve, max_soc_frac=cfg.max_soc_frac,
            initial_soc_frac=cfg.initial_soc_frac, terminal_soc=cfg.terminal_soc,
            self_discharge_frac_per_h=cfg.self_discharge_frac_per_h, response_s=cfg.response_s,
            max_ramp_mw_per_s=cfg.max_ramp_mw_per_s, reserve_frac=reserve,
            eff_ups_frac=float(getattr(cfg, "eff_ups_frac", 1.0)),
            cost_usd_per_kw=cfg.cost_usd_per_kw, cost_usd_per_kwh=cfg.cost_usd_per_kwh,
            degradation_usd_per_mwh=cfg.degradation_usd_per_mwh,
            cycle_life=getattr(cfg, "cycle_life", None),
            cycle_depth_frac=float(getattr(cfg, "cycle_depth_frac", 1.0)),
            calendar_life_years=getattr(cfg, "calendar_life_years", None),
        )

    # ------------------------------------------------------------------ derived
    @property
    def e_min_mwh(self) -> float:
        """Lowest usable stored energy. [MWh]"""
        return self.min_soc_frac * self.e_rated_mwh

    @property
    def e_max_mwh(self) -> float:
        """Highest stored energy. [MWh]"""
        return self.max_soc_frac * self.e_rated_mwh

    @property
    def e_initial_mwh(self) -> float:
        """Stored energy at t = 0. [MWh]"""
        return self.initial_soc_frac * self.e_rated_mwh

    def kernel_args(self, dt_s: float) -> tuple:
        """Per-step constants of :func:`facility.storage.soc.storage_step`.

        Returns
        -------
        tuple
            ``(p_rated_mw, eta_c, eta_d, k_self, e_min_mwh, e_max_mwh, alpha, ramp_step_mw)``:
            ``k_self = 1 - self_discharge_frac_per_h * dt_h``, ``alpha = 1 - exp(-dt / response_s)``
            (1 without lag), ``ramp_step_mw = max_ramp_mw_per_s * dt_s`` (inf without limit).
        """
        dt_h = dt_s / 3600.0
        k_self = 1.0 - self.self_discharge_frac_per_h * dt_h
        alpha = 1.0 if self.response_s <= 0 else float(-np.expm1(-dt_s / self.response_s))
        ramp = np.inf if self.max_ramp_mw_per_s is None else self.max_ramp_mw_per_s * dt_s
        return (self.p_rated_mw, self.eff_charge_frac, self.eff_discharge_frac, k_self,
                self.e_min_mwh, self.e_max_mwh, alpha, ramp)
