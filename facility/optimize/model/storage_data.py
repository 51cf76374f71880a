"""The storages' parameter set and what their plans cost: the sets and parameters step of
:func:`facility.optimize.model.formulation.build_model`, shared by every strategy and by the code
that prices a plan outside the LP (realization, verification, the fallback plans).

A storage section of the scenario (``[rack_storage]``, ``[ups]``, ``[bess]``) resolves to one
:class:`StorageData` (ratings fixed or extendable between bounds, efficiencies, SoC band, the
capex per MW and MWh charged to the horizon, degradation); :func:`op_cost_coefficients` and
:func:`plan_cost_kusd` are the objective's operating and capex terms. Units: MW, MWh, h, k$.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from facility.config.technology import annuity_lifetime_years, capital_recovery_factor, unit_configs
from facility.errors import ScenarioError

__all__ = ["S_PER_H", "StorageData", "resolve_storage", "resolve_units", "capex_factor", "op_cost_coefficients",
           "plan_cost_kusd"]

S_PER_H = 3600.0


@dataclass(frozen=True)
class StorageData:
    """Resolved parameters of one storage (the model's parameter set).

    =====================  =========  ===============================================
    field                  unit       meaning
    =====================  =========  ===============================================
    p_lo, p_hi             MW         bounds of the power rating P̂ (equal when fixed)
    e_lo, e_hi             MWh        bounds of the energy rating Ê (equal when fixed)
    eta_c, eta_d           frac       charge / discharge efficiency
    soc_min, soc_max       frac       SoC bounds (UPS: min_soc_frac + reserve_frac)
    soc0                   frac       initial SoC
    terminal               -          at_least_initial | equal_initial | free
    sigma_per_h            1/h        self-discharge rate
    max_ramp_mw_per_s      MW/s       converter ramp limit (None = none)
    c_p, c_e               k$/MW(h)   capex per MW / MWh (already annualized if asked)
    c_deg                  k$/MWh     degradation cost per MWh discharged
    behind_ups             -          sits behind the UPSs (rack_storage, ups): shares the
                                      feeders' headroom
    max_own_p_mw           MW         what its own connection carries (BESS transformer)
    max_feeder_p_mw        MW         feeders' capacity C_F (same on every storage)
    max_site_p_mw          MW         site capacity C_S (same on every storage)
    soc_end_lo, soc_end_hi frac       SoC band at the end of the horizon (None = the
                                      terminal policy alone; receding horizon)
    d_min_h, d_max_h       h          duration bounds d_min P̂ <= Ê <= d_max P̂ (None =
                                      none; ``min_duration_h`` / ``max_duration_h``)
    section                -          the scenario section the storage belongs to (a
                                      hybrid section's units ``bess.supercap`` ... share it)
    =====================  =========  ===============================================
    """

    name: str
    p_lo: float
    p_hi: float
    e_lo: float
    e_hi: float
    eta_c: float
    eta_d: float
    soc_min: float
    soc_max: float
    soc0: float
    terminal: str
    sigma_per_h: float
    max_ramp_mw_per_s: float | None
    c_p: float
    c_e: float
    c_deg: float
    behind_ups: bool = False
    max_own_p_mw: float = np.inf
    max_feeder_p_mw: float = np.inf
    max_site_p_mw: float = np.inf
    soc_end_lo: float | None = None
    soc_end_hi: float | None = None
    d_min_h: float | None = None
    d_max_h: float | None = None
    section: str = ""

    def duration_ratings(self, p_rated: float, e_rated: float) -> tuple[float, float]:
        """The least ratings at or above ``(p_rated, e_rated)`` within the duration bounds:
        Ê lifted to d_min P̂, then P̂ to Ê / d_max. [MW], [MWh] (Raising Ê by ΔÊ moves the
        stored energy by s_0 ΔÊ and the SoC band by s_min ΔÊ and s_max ΔÊ, so a plan that
        keeps its band keeps it; raising P̂ loosens the power limit.)"""
        if self.d_min_h is not None:
            e_rated = max(e_rated, self.d_min_h * p_rated)
        if self.d_max_h is not None and self.d_max_h > 0:
            p_rated = max(p_rated, e_rated / self.d_max_h)
        return p_rated, e_rated


def _cap(optimize, key: str) -> float:
    v = getattr(optimize, key, None)
    return np.inf if v is None else float(v)


def capex_factor(optimize, horizon_h: float, lifetime_years: float | None = None) -> float:
    """Share of the capex charged to the horizon.

    .. math::  f = \\mathrm{CRF}(r, n) \\cdot H / 8760,\\quad
               \\mathrm{CRF} = \\frac{r (1+r)^n}{(1+r)^n - 1}\\ (r > 0),\\ 1/n\\ (r = 0)

    with ``annualize = true``; f = 1 (the full capex once) otherwise. r: discount rate
    [1/year], n: lifetime [year] (``lifetime_years``, default ``optimize.lifetime_years`` or 15; per
    storage :func:`facility.config.technology.annuity_lifetime_years`), H: horizon [h].
    """
    if not optimize.annualize:
        return 1.0
    n = optimize.lifetime_or_default_years if lifetime_years is None else lifetime_years
    return capital_recovery_factor(optimize.discount_rate_frac, n) * horizon_h / 8760.0


def resolve_storage(name: str, cfg, optimize, horizon_h: float, *, soc0: float | None = None,
                    terminal: str | None = None,
                    soc_end: tuple[float, float] | None = None) -> StorageData:
    """Parameters of one storage section; fixed or extendable ratings.

    ``soc_end = (lo, hi)`` [frac] adds an end-of-horizon SoC band (receding horizon).

    Raises
    ------
    ScenarioError
        A fixed rating is missing, or a bound pair is inverted.

    ``fixed_om_usd_per_kw_year`` (``fixed_om_usd_per_kwh_year``) adds the horizon's share of a
    year of fixed O&M to c_P (c_E);
    ``min_duration_h`` / ``max_duration_h`` become d_min / d_max (rows of
    :func:`facility.optimize.model.formulation.add_duration_limits`).
    """
    if cfg.extendable:
        p_lo, p_hi = cfg.min_p_rated_mw, (np.inf if cfg.max_p_rated_mw is None else cfg.max_p_rated_mw)
        e_lo, e_hi = cfg.min_e_rated_mwh, (np.inf if cfg.max_e_rated_mwh is None else cfg.max_e_rated_mwh)
        if p_lo > p_hi or e_lo > e_hi:
            raise ScenarioError(f"{name}: min_* rating above max_* (p: {p_lo:g}..{p_hi:g} MW, "
                                f"e: {e_lo:g}..{e_hi:g} MWh)")
    else:
        if cfg.p_rated_mw is None or cfg.e_rated_mwh is None:
            raise ScenarioError(f"{name}: p_rated_mw [MW] and e_rated_mwh [MWh] are required "
                                f"when extendable = false")
        p_lo = p_hi = float(cfg.p_rated_mw)
        e_lo = e_hi = float(cfg.e_rated_mwh)
    soc_min = cfg.min_soc_frac + float(getattr(cfg, "reserve_frac", 0.0))
    s0 = cfg.initial_soc_frac if soc0 is None else float(soc0)
    if not 0.0 <= soc_min <= cfg.max_soc_frac <= 1.0:
        raise ScenarioError(f"{name}: min_soc_frac (+ reserve_frac) = {soc_min:g} must not exceed "
                            f"max_soc_frac = {cfg.max_soc_frac:g} [frac]")
    if not 0.0 <= s0 <= 1.0:
        raise ScenarioError(f"{name}: initial_soc_frac = {s0:g} must lie in [0, 1] [frac]")
    if soc_end is not None and not 0.0 <= soc_end[0] <= soc_end[1] <= 1.0:
        raise ScenarioError(f"{name}: end-of-horizon SoC band {tuple(soc_end)!r} must satisfy "
                            f"0 <= lo <= hi <= 1 [frac]")
    # the annuity over the storage's calendar life where the scenario sets no lifetime_years
    f = capex_factor(optimize, horizon_h, annuity_lifetime_years(cfg, optimize))
    om = float(getattr(cfg, "fixed_om_usd_per_kw_year", 0.0) or 0.0) * horizon_h / 8760.0
    om_e = float(getattr(cfg, "fixed_om_usd_per_kwh_year", 0.0) or 0.0) * horizon_h / 8760.0
    section = name.split(".", 1)[0]
    return StorageData(
        name=name, p_lo=p_lo, p_hi=p_hi, e_lo=e_lo, e_hi=e_hi,
        eta_c=cfg.eff_charge_frac, eta_d=cfg.eff_discharge_frac, soc_min=soc_min,
        soc_max=cfg.max_soc_frac, soc0=s0, terminal=terminal or cfg.terminal_soc,
        sigma_per_h=cfg.self_discharge_frac_per_h, max_ramp_mw_per_s=cfg.max_ramp_mw_per_s,
        # USD/kW = k$/MW, USD/kWh = k$/MWh
        # fixed O&M per kW-year: the horizon's share of a year, whatever the capex factor
        c_p=f * cfg.cost_usd_per_kw + om, c_e=f * cfg.cost_usd_per_kwh + om_e,
        c_deg=cfg.degradation_usd_per_mwh / 1000.0,
        behind_ups=section in ("rack_storage", "ups"),
        max_own_p_mw=_cap(optimize, "max_bess_p_mw") if section == "bess" else np.inf,
        max_feeder_p_mw=_cap(optimize, "max_feeder_p_mw"), max_site_p_mw=_cap(optimize, "max_site_p_mw"),
        soc_end_lo=None if soc_end is None else float(soc_end[0]),
        soc_end_hi=None if soc_end is None else float(soc_end[1]),
        d_min_h=getattr(cfg, "min_duration_h", None), d_max_h=getattr(cfg, "max_duration_h", None),
        section=section)


def resolve_units(storages, optimize, horizon_h: float) -> dict[str, StorageData]:
    """:func:`resolve_storage` of every unit of every section: one per section, or with
    candidate ``technologies`` one per candidate, ``<section>.<technology>``
    (:func:`facility.config.technology.unit_configs`)."""
    out = {}
    for n, c in storages.items():
        for u, uc in unit_configs(n, c).items():
            out[u] = resolve_storage(u, uc, optimize, horizon_h)
    return out


def op_cost_coefficients(s: StorageData, dt_s: float, price_kusd_per_mwh: float) -> tuple[float, float]:
    r"""Operating cost of one MW of charge and of discharge held for one step. [k$/MW]

    .. math::  c^{ch} = \Delta t_h\, \pi (1 - \eta_c),\qquad
               c^{dis} = \Delta t_h\, [\pi (1/\eta_d - 1) + c_{deg}]
    """
    h = dt_s / S_PER_H
    return (h * price_kusd_per_mwh * (1 - s.eta_c),
            h * (price_kusd_per_mwh * (1 / s.eta_d - 1) + s.c_deg))


def plan_cost_kusd(storages: dict[str, StorageData], plan: dict, dt_s: float,
                   price_usd_per_mwh: float) -> float:
    r"""Objective of a plan, evaluated on its arrays (the LP's objective, outside the LP). [k$]

    ``plan`` maps each storage to ``(p_rated_mw, e_rated_mwh, p_charge_mw (T,),
    p_discharge_mw (T,), e_mwh (T+1,))``.

    .. math::  \sum_s c_P \hat P_s + c_E \hat E_s + \sum_t c^{ch} p^{ch}_{s,t} + c^{dis} p^{dis}_{s,t}
    """
    total = 0.0
    for n, (p_r, e_r, ch, dis, _) in plan.items():
        s = storages[n]
        c_ch, c_dis = op_cost_coefficients(s, dt_s, price_usd_per_mwh / 1000.0)
        total += (s.c_p * p_r + s.c_e * e_r
                  + c_ch * float(np.sum(ch)) + c_dis * float(np.sum(dis)))
    return total
