"""Study quantities derived from one case's scenario and metrics: costs, margin, strategy.

These are what the Pareto front and the per-spec tables compare (docs/studies.md gives the
definitions; they are repeated in each docstring).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from facility.config.schema import STORAGE_NAMES, Scenario
from facility.metrics import compliance_margins

__all__ = [
    "HOURS_PER_YEAR",
    "annuity_factor",
    "storage_capex_usd",
    "energy_cost_usd_per_year",
    "compliance_margin",
    "strategy_label",
    "spec_label",
    "derive",
]

HOURS_PER_YEAR = 8760.0


def annuity_factor(lifetime_years: float, discount_rate_frac: float) -> float:
    """Present value of 1 USD a year for ``lifetime_years``: Σ_{k=1..L} (1 + r)^−k. [year]

    ``(1 − (1 + r)^−L) / r``, and ``L`` for ``r = 0``.
    """
    r, n = float(discount_rate_frac), float(lifetime_years)
    if r == 0.0:
        return n
    return (1.0 - (1.0 + r) ** (-n)) / r


def _ratings(scenario: Scenario, metrics: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """``{storage: (p_rated_mw, e_rated_mwh)}`` of the enabled storages (metrics first: sized)."""
    block = metrics.get("storage") or {}
    out = {}
    for name in STORAGE_NAMES:
        cfg = getattr(scenario, name)
        if not cfg.enabled:
            continue
        m = block.get(name) or {}
        p = m.get("p_rated_mw", cfg.p_rated_mw)
        e = m.get("e_rated_mwh", cfg.e_rated_mwh)
        out[name] = (float(p or 0.0), float(e or 0.0))
    return out


def storage_capex_usd(scenario: Scenario, metrics: Mapping[str, Any]) -> float:
    """Capital cost of the enabled storages. [USD]

    Σ_s 1000 · (p_rated_mw_s · cost_usd_per_kw_s + e_rated_mwh_s · cost_usd_per_kwh_s), with
    the ratings of ``metrics["storage"]`` (the sized ones after ``size``) or the scenario's.
    """
    total = 0.0
    for name, (p, e) in _ratings(scenario, metrics).items():
        cfg = getattr(scenario, name)
        total += 1000.0 * (p * cfg.cost_usd_per_kw + e * cfg.cost_usd_per_kwh)
    return total


def energy_cost_usd_per_year(scenario: Scenario, metrics: Mapping[str, Any]) -> tuple[float, float]:
    """Extra energy drawn at the PCC (vs. the raw site), scaled to a year, and its cost.

    overhead_mwh_per_year = (energy.pcc_restored_mwh − energy.raw_mwh) · 8760 h / horizon_h;
    cost = overhead_mwh_per_year · optimize.energy_price_usd_per_mwh.
    ``pcc_restored_mwh`` is the PCC energy with every storage returned to its initial stored
    energy (:func:`facility.metrics.energy_metrics`), so a case that discharges its initial
    charge pays for refilling it instead of earning a negative energy cost; metrics without it
    (older case records) fall back to ``pcc_mwh``.

    Returns
    -------
    (float, float)
        ``(overhead_mwh_per_year [MWh/year], cost_usd_per_year [USD/year])``
    """
    e = metrics.get("energy") or {}
    horizon_h = scenario.time.horizon_s / 3600.0
    extra = float(e.get("pcc_restored_mwh", e.get("pcc_mwh", 0.0))) - float(e.get("raw_mwh", 0.0))
    per_year = extra * HOURS_PER_YEAR / horizon_h
    return per_year, per_year * scenario.optimize.energy_price_usd_per_mwh


def compliance_margin(scenario: Scenario, metrics: Mapping[str, Any]) -> dict[str, float]:
    """Relative margin of every set limit and their minimum. [frac]

    margin_k = 1 − metric_k / limit_k for each limit k the spec sets (on the ``pcc`` metrics);
    ``min`` = min_k margin_k: > 0 every limit holds with that headroom, < 0 the worst limit is
    exceeded by that fraction. NaN when the spec sets no limit (or none the data can decide).
    """
    pcc = metrics.get("pcc")
    if not pcc:
        return {"min": math.nan}
    # a limit the data cannot decide (metrics 'undecided') has no margin either
    out = {k: float(v) for k, v in compliance_margins(pcc, scenario.spec, metrics.get("undecided") or ()).items()}
    out["min"] = min(out.values()) if out else math.nan
    return out


def strategy_label(scenario: Scenario, metrics: Mapping[str, Any], mode: str = "run") -> str:
    """The mitigations a case uses, joined by ``+`` in a fixed order, or ``none``.

    ``gpu_smoothing`` (enabled with a floor > 0, or programmed ramps), ``firefly``,
    ``power_cap`` (cap < 1), and each storage with e_rated_mwh > 0 that a controller drives
    (controller ≠ none, or ``size`` mode, which dispatches optimally).
    """
    parts = []
    g = scenario.gpu_smoothing
    if g.enabled and (g.floor_frac > 0 or g.ramp_up_w_per_s or g.ramp_down_w_per_s):
        parts.append("gpu_smoothing")
    if scenario.firefly.enabled:
        parts.append("firefly")
    if scenario.power_cap.enabled and scenario.power_cap.cap_frac < 1.0:
        parts.append("power_cap")
    driven = mode == "size" or scenario.controller.kind != "none"
    for name, (p, e) in _ratings(scenario, metrics).items():
        if driven and e > 0 and p > 0:
            parts.append(name)
    return "+".join(parts) or "none"


def spec_label(scenario: Scenario) -> str:
    """The library spec the case is judged against (``spec.base``), or ``custom``."""
    return scenario.spec.base or "custom"


def derive(scenario: Scenario, metrics: Mapping[str, Any], mode: str = "run") -> dict[str, Any]:
    """The study block of a case: ``cost``, ``compliance_margin``, ``strategy``, ``spec_name``.

    ``cost.total_usd`` = storage capex + energy cost per year × annuity factor
    (``optimize.lifetime_years``, ``optimize.discount_rate_frac``): the present cost of a design.
    """
    capex = storage_capex_usd(scenario, metrics)
    mwh_y, usd_y = energy_cost_usd_per_year(scenario, metrics)
    pv = annuity_factor(scenario.optimize.lifetime_or_default_years, scenario.optimize.discount_rate_frac)
    return {
        "strategy": strategy_label(scenario, metrics, mode),
        "spec_name": spec_label(scenario),
        "cost": {
            "storage_capex_usd": capex,
            "energy_overhead_mwh_per_year": mwh_y,
            "energy_usd_per_year": usd_y,
            "total_usd": capex + usd_y * pv,
        },
        "compliance_margin": compliance_margin(scenario, metrics),
    }
