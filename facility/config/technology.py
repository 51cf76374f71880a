"""Storage technologies you can buy: the library ``models/storage/<name>.toml`` and how a
storage section takes its defaults from one.

A storage section (``[rack_storage]``, ``[ups]``, ``[bess]``) with ``technology = "lfp_2h"``
(a name in ``models/storage/`` or the path of a ``.toml`` file) takes every key of
:data:`FILLED_KEYS` it does not set itself from the technology; the keys it sets win.
``degradation_usd_per_mwh``, when the section does not set it, is derived from the (resolved)
energy cost and cycle life (:func:`degradation_usd_per_mwh`). :func:`apply_technologies`
does this on the raw scenario dict before validation and returns where each filled key came
from; :func:`facility.config.load.dump_scenario_toml` writes that as a comment in
``scenario.resolved.toml``.

A section may instead list candidate ``technologies``: the optimizer then carries one
extendable unit per candidate (:func:`unit_configs`), named ``<storage>.<technology>``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

from pydantic import ValidationError, model_validator

from facility.config import files
from facility.config.library import MODELS_DIR, cached_by_reference, read_library
from facility.config.messages import format_validation_error
from facility.config.schema_base import F, StrictModel
from facility.errors import ScenarioError

__all__ = ["StorageTechnology", "FILLED_KEYS", "list_technologies", "load_technology",
           "degradation_usd_per_mwh", "apply_technologies", "unit_configs", "technology_label",
           "section_of", "unit_technology_names", "annuity_lifetime_years", "capital_recovery_factor",
           "MARKS", "cost_year_note"]

#: keys of a storage section that a technology fills when the section does not set them
FILLED_KEYS = ("cost_usd_per_kw", "cost_usd_per_kwh", "fixed_om_usd_per_kw_year",
               "fixed_om_usd_per_kwh_year", "eff_charge_frac", "eff_discharge_frac", "self_discharge_frac_per_h",
               "min_duration_h", "max_duration_h", "cycle_life",
               "cycle_depth_frac", "calendar_life_years", "cost_year")

STORAGE_SECTIONS = ("rack_storage", "ups", "bess")

#: the marks a technology figure carries
MARKS = ("verified", "unverified")

#: How the tool compares costs of different dollar years: not at all (no escalation).
COST_YEAR_POLICY = ("costs are used in the dollars of each technology's cost_year, without "
                    "escalation to one year (no price index is applied): a comparison of "
                    "technologies with different cost years mixes those years, which are shown")


def cost_year_note(years: dict[str, int | None]) -> str:
    """A sentence on the cost years of the storage units ``{unit: cost_year}``: "" when they
    share one year (or none is known), else the years and that they are not escalated."""
    known = {u: y for u, y in years.items() if y is not None}
    if len(set(known.values())) <= 1:
        return ""
    return ("costs in different dollar years, compared as given (no escalation to one year): "
            + ", ".join(f"{u} USD of {y}" for u, y in known.items()))


class StorageTechnology(StrictModel):
    """A storage technology: costs, efficiencies, duration bounds, cycle and calendar life."""

    name: str = F(description="Technology name (file stem).")
    description: str = F("", description="Free text.")
    cost_usd_per_kw: float = F(unit="USD/kW", ge=0, le=1e5, description="Capital cost per kW of power rating.")
    cost_usd_per_kwh: float = F(unit="USD/kWh", ge=0, le=1e6, description="Capital cost per kWh of energy rating.")
    fixed_om_usd_per_kw_year: float = F(0.0, unit="USD/kW-yr", ge=0, le=1e4, description="Fixed operation and maintenance cost per kW and year.")
    fixed_om_usd_per_kwh_year: float = F(0.0, unit="USD/kWh-yr", ge=0, le=1e4, description="Fixed operation and maintenance cost per kWh and year.")
    eff_charge_frac: float = F(unit="frac", ge=0.5, le=1, description="Charging efficiency.")
    eff_discharge_frac: float = F(unit="frac", ge=0.5, le=1, description="Discharging efficiency.")
    self_discharge_frac_per_h: float = F(0.0, unit="frac/h", ge=0, le=1, description="Self-discharge per hour.")
    min_duration_h: float = F(unit="h", gt=0, le=1000, description="Shortest duration E/P sold (the highest C-rate).")
    max_duration_h: float = F(unit="h", gt=0, le=1000, description="Longest duration E/P sold.")
    cycle_life: float = F(unit="cycles", gt=0, le=1e9, description="Rated equivalent full cycles at cycle_depth_frac to end of life.")
    cycle_depth_frac: float = F(1.0, unit="frac", gt=0, le=1, description="Depth of discharge at which cycle_life is rated.")
    calendar_life_years: float = F(unit="yr", gt=0, le=100, description="Calendar life.")
    cost_year: int = F(unit="yr", ge=1990, le=2100, description="Year of the cost figures (currency year).")
    source: str = F(description="Where the values come from (title, publisher, year, table).", min_length=1)
    marks: dict[str, Literal["verified", "unverified"]] = F(default_factory=dict, description=(
        "Per figure (a key of FILLED_KEYS): 'verified' (read in the source named, or plain "
        "arithmetic on such figures) or 'unverified' (no checked source). A figure not listed "
        "is unverified."))

    @model_validator(mode="after")
    def _known_marks(self):
        unknown = sorted(set(self.marks) - set(FILLED_KEYS))
        if unknown:
            raise ValueError(f"marks names {', '.join(unknown)}, not a figure of a technology "
                             f"(one of {', '.join(FILLED_KEYS)})")
        return self

    def mark(self, key: str) -> str:
        """``'verified'`` or ``'unverified'`` (the default) for one figure."""
        return self.marks.get(key, "unverified")

    def figures_by_mark(self) -> dict[str, list[str]]:
        """``{'verified': [...], 'unverified': [...]}``: the figures (FILLED_KEYS) by mark."""
        out: dict[str, list[str]] = {m: [] for m in MARKS}
        for k in FILLED_KEYS:
            out[self.mark(k)].append(k)
        return out

    @property
    def round_trip_frac(self) -> float:
        """Round-trip efficiency eta_c * eta_d. [frac]"""
        return self.eff_charge_frac * self.eff_discharge_frac


def list_technologies() -> list[str]:
    """Names of the storage technologies in ``models/storage/``."""
    return sorted(p.stem for p in (MODELS_DIR / "storage").glob("*.toml"))


def technology_label(name: str) -> str:
    """How a technology reference is named in messages and notes."""
    return name if files.is_explicit_path(name) else f"models/storage/{name}.toml"


def load_technology(name: str, key: str = "technology") -> StorageTechnology:
    """Load a storage technology by name (file stem in ``models/storage/``) or ``.toml`` path.

    Cached per file and its modification time and size (not per ``key``, which only names the
    reference in a failure's message): a file of one's own that changed is read again.

    The ``[marks]`` table of the file marks each figure ``verified`` or ``unverified``
    (:meth:`StorageTechnology.mark`); it is data about the file, not a key a storage section
    takes.

    Raises
    ------
    ScenarioError
        Unknown name (the message lists the available ones), malformed file, or
        min_duration_h above max_duration_h.
    """
    stamp = None
    if files.is_explicit_path(name):
        try:
            st = os.stat(name)
            stamp = (st.st_mtime_ns, st.st_size)
        except (OSError, ValueError):
            stamp = None
    return _load_technology(name, key, stamp)


@cached_by_reference
def _load_technology(name: str, key: str, stamp) -> StorageTechnology:
    data, label = read_library("storage", name, "storage technology", key)
    if files.is_explicit_path(name):
        data.setdefault("name", Path(name).stem)
    try:
        tech = StorageTechnology(**data)
    except ValidationError as exc:
        raise ScenarioError(f"{key} = {files.shown(name)}: {label} is not a valid StorageTechnology "
                            f"table:\n" + format_validation_error(exc, label, StorageTechnology)) from None
    except TypeError as exc:
        raise ScenarioError(f"{label} ({key}): {exc}") from None
    if tech.min_duration_h > tech.max_duration_h:
        raise ScenarioError(f"{label} ({key}): min_duration_h = {tech.min_duration_h:g} h is above "
                            f"max_duration_h = {tech.max_duration_h:g} h")
    return tech


def degradation_usd_per_mwh(cost_usd_per_kwh: float, cycle_life: float, cycle_depth_frac: float) -> float:
    r"""Cost of one MWh of discharge throughput from the replacement of the energy part.

    .. math::  c_{deg} = \frac{1000\, c_E}{N\, d}

    c_E: energy cost [USD/kWh]; N: rated cycles at depth d [frac]. A cycle of depth d
    discharges d·E, so N cycles deliver N·d·E before the energy part (c_E·E) is replaced: the
    rating E cancels. Counted on discharge only (charge + discharge throughput would be
    c_E / (2 N d) per MWh of each). [USD/MWh]

    Examples
    --------
    >>> degradation_usd_per_mwh(400.0, 6000, 0.8)   # LFP: 400 USD/kWh, 6000 cycles at 80 %
    83.33333333333333
    """
    return 1000.0 * float(cost_usd_per_kwh) / (float(cycle_life) * float(cycle_depth_frac))


#: Largest degradation cost a storage section accepts (its schema bound). [USD/MWh]
MAX_DEGRADATION_USD_PER_MWH = 1e6


def _derived_degradation(cost_usd_per_kwh, cycle_life, cycle_depth_frac, where: str) -> float:
    """:func:`degradation_usd_per_mwh`, refused (naming the keys it comes from) where it is
    past what ``degradation_usd_per_mwh`` accepts. [USD/MWh]"""
    try:
        v = degradation_usd_per_mwh(cost_usd_per_kwh, cycle_life, cycle_depth_frac)
    except (TypeError, ValueError, ZeroDivisionError):
        return math.nan     # a malformed key: the schema names it
    if v > MAX_DEGRADATION_USD_PER_MWH:
        need = 1000.0 * float(cost_usd_per_kwh) / (MAX_DEGRADATION_USD_PER_MWH * float(cycle_depth_frac))
        raise ScenarioError(
            f"{where}.cycle_life = {float(cycle_life):g} cycles (at cycle_depth_frac = "
            f"{float(cycle_depth_frac):g}, cost_usd_per_kwh = {float(cost_usd_per_kwh):g} USD/kWh) "
            f"prices each MWh discharged at {v:.3g} USD (1000 cost_usd_per_kwh / (cycle_life x "
            f"cycle_depth_frac)), past the {MAX_DEGRADATION_USD_PER_MWH:g} USD/MWh "
            f"degradation_usd_per_mwh accepts: cycle_life must be at least {need:.3g} cycles "
            f"(or set degradation_usd_per_mwh)")
    return v


def _fill(section: dict, tech: StorageTechnology, label: str, where: str = "storage") -> tuple[dict, dict[str, str]]:
    """The section with the technology's values under the keys it does not set, and where each
    filled key came from."""
    out, notes = dict(section), {}
    for k in FILLED_KEYS:
        if k not in out:
            out[k] = getattr(tech, k)
            notes[k] = f"from technology {tech.name} ({label})"
    if "degradation_usd_per_mwh" not in out:
        deg = _derived_degradation(out["cost_usd_per_kwh"], out["cycle_life"], out["cycle_depth_frac"], where)
        if math.isnan(deg):
            return out, notes
        out["degradation_usd_per_mwh"] = deg
        notes["degradation_usd_per_mwh"] = ("derived as 1000 cost_usd_per_kwh / (cycle_life x "
                                            "cycle_depth_frac)")
    return out, notes


def apply_technologies(data: dict, source: str) -> tuple[dict, dict[str, dict[str, str]],
                                                         dict[str, StorageTechnology]]:
    """Fill each storage section's defaults from its ``technology``.

    Parameters
    ----------
    data : dict
        Raw scenario (overrides applied, paths absolute).
    source : str
        Name of the scenario for messages.

    Returns
    -------
    (dict, dict, dict)
        The scenario with the filled keys, per section ``{key: where it came from}``, and the
        technologies read, by their reference (``technology`` / ``technologies`` string): the
        scenario's :class:`~facility.config.resolved.Library` takes them, so each file is read
        once.

    Raises
    ------
    ScenarioError
        An unknown technology, a malformed file, or a section that sets both ``technology``
        and ``technologies``.
    """
    out, provenance, loaded = dict(data), {}, {}
    for sec in STORAGE_SECTIONS:
        section = data.get(sec)
        if not isinstance(section, dict):
            continue
        tech = section.get("technology")
        techs = section.get("technologies")
        if tech is not None and techs is not None:
            raise ScenarioError(f"{source}: {sec}: set either technology (one) or technologies "
                                f"(candidates the optimizer chooses among), not both")
        if techs is not None:
            if not isinstance(techs, list) or not techs or not all(isinstance(t, str) for t in techs):
                raise ScenarioError(f"{source}: {sec}.technologies = {techs!r}: a list of at least "
                                    f"one technology name (see `facility models`)")
            if len(set(techs)) != len(techs):
                raise ScenarioError(f"{source}: {sec}.technologies lists a technology twice: {techs!r}")
            seen: dict[str, str] = {}
            for t in techs:  # an unknown name fails here, with the list of names
                loaded[t] = load_technology(t, key=f"{source}: {sec}.technologies")
                name = loaded[t].name
                if name in seen:   # one unit key <section>.<name> for two files: refused
                    raise ScenarioError(
                        f"{source}: {sec}.technologies lists two technologies named {name!r}: "
                        f"{technology_label(seen[name])} and {technology_label(t)} (each candidate "
                        f"becomes the unit {sec}.<name>, keyed by name in unit_p_rated_mw and "
                        f"sizing.json); give each file its own name = \"...\"")
                seen[name] = t
            continue
        if tech is None:
            continue
        if not isinstance(tech, str):
            raise ScenarioError(f"{source}: {sec}.technology = {tech!r}: a technology name or a .toml path")
        t = loaded[tech] = load_technology(tech, key=f"{source}: {sec}.technology")
        out[sec], provenance[sec] = _fill(section, t, technology_label(tech), f"{source}: {sec}")
    return out, provenance, loaded


def unit_configs(name: str, cfg) -> dict:
    """The units of a storage section: ``{name: cfg}``, or with candidate ``technologies``
    one config per candidate, ``{"<name>.<technology>": cfg'}``.

    Each unit's config is the section's with the candidate's values under every key of
    :data:`FILLED_KEYS` the section does not set itself (and its derived degradation cost);
    its ratings are extendable between 0 and the section's ``max_*`` (the section's ``min_*``
    apply to the sum over its units, not to each: a unit may be left out). A fixed hybrid
    (``extendable = false``) takes each unit's ratings from ``unit_p_rated_mw`` /
    ``unit_e_rated_mwh`` (keyed by technology name).
    """
    techs = getattr(cfg, "technologies", None)
    if not techs:
        return {name: cfg}
    set_keys = cfg.model_fields_set
    out = {}
    for t_name in techs:
        tech = load_technology(t_name, key=f"{name}.technologies")
        upd = {k: getattr(tech, k) for k in FILLED_KEYS if k not in set_keys}
        if "degradation_usd_per_mwh" not in set_keys:
            upd["degradation_usd_per_mwh"] = _derived_degradation(
                upd.get("cost_usd_per_kwh", cfg.cost_usd_per_kwh),
                upd.get("cycle_life", cfg.cycle_life or tech.cycle_life),
                upd.get("cycle_depth_frac", cfg.cycle_depth_frac), name)
        upd.update(technology=t_name, technologies=None, min_p_rated_mw=0.0, min_e_rated_mwh=0.0,
                   unit_p_rated_mw=None, unit_e_rated_mwh=None)
        if not cfg.extendable:
            up, ue = cfg.unit_p_rated_mw or {}, cfg.unit_e_rated_mwh or {}
            upd.update(p_rated_mw=up.get(tech.name, up.get(t_name)), e_rated_mwh=ue.get(tech.name, ue.get(t_name)))
        out[f"{name}.{tech.name}"] = cfg.model_copy(update=upd)
    return out


def section_of(unit: str) -> str:
    """The scenario section a storage unit belongs to: ``bess.supercap`` -> ``bess``."""
    return unit.split(".", 1)[0]


def unit_technology_names(cfg) -> list[str]:
    """The unit keys of a hybrid section: its technologies' names (a path's file stem)."""
    return [load_technology(t, key="technologies").name for t in (cfg.technologies or [])]


def annuity_lifetime_years(cfg, optimize) -> float:
    """Years the capex of a storage (unit) is annualized over.

    ``optimize.lifetime_years`` where the scenario sets it; else the storage's
    ``calendar_life_years`` (its technology's) where known; else
    :data:`~facility.config.operation.DEFAULT_LIFETIME_YEARS`. The cycle life is not taken
    here: the throughput cost
    (``degradation_usd_per_mwh``) already charges the replacement that cycling causes, so a
    lifetime cut short by cycling would count that wear twice. [year]
    """
    cal = getattr(cfg, "calendar_life_years", None)
    if optimize.lifetime_years is not None or cal is None:
        return optimize.lifetime_or_default_years
    return float(cal)


def capital_recovery_factor(discount_rate_frac: float, lifetime_years: float) -> float:
    r"""The annuity of 1 USD of capex. [1/year]

    .. math::  \mathrm{CRF} = \frac{r (1+r)^n}{(1+r)^n - 1}\ (r > 0),\quad 1/n\ (r = 0)

    Examples
    --------
    >>> round(capital_recovery_factor(0.07, 15), 6)
    0.109795
    """
    r, n = float(discount_rate_frac), float(lifetime_years)
    return 1.0 / n if r == 0 else r * (1 + r) ** n / ((1 + r) ** n - 1)
