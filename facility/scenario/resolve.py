"""Resolve a scenario once: its library entries loaded, every domain's checks run on them.

See :mod:`facility.config.resolved` for the two steps and :class:`~facility.config.resolved.Library`.
:func:`resolve` loads each domain entry the scenario names once (the transformer and UPS types
of :mod:`facility.electrical.library`, the shaft and mode set of
:mod:`facility.grid_impact.library`), hands them to the checks
(:func:`facility.scenario.checks.check_all`: the configuration's, then the domains') and
attaches them to ``scenario.library``.

May import: :mod:`facility.config`, :mod:`facility.errors`, the domains' ``library`` and
``checks`` modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from facility.config.load import config_library, parse_scenario, require_library, scenario_input
from facility.config.resolved import Library
from facility.config.schema import Scenario
from facility.electrical.library import load_trafo_type, load_ups_type
from facility.errors import ScenarioError
from facility.grid_impact.library import load_mode_set, load_shaft
from facility.scenario.checks import check_all

__all__ = ["resolve", "load_scenario", "scenario_from_dict", "loaded_library"]


def loaded_library(scenario: Scenario) -> Library:
    """The library the checks take: the scenario's configuration entries (the ones its loader
    attached, or read now: :func:`facility.config.load.config_library`) and the domain entries
    it names, each loaded once. One that cannot be loaded is left out (None), the message of
    its :class:`ScenarioError` in ``unresolved`` (the checks report it where they check that
    entry); so is a GPU model (:func:`facility.config.checks.check_jobs` reports it)."""
    lib = scenario._library
    if lib is None:
        lib = config_library(scenario, strict=False)
    g, gi = scenario.grid, scenario.grid_impact
    loaders = {
        "trafo": (lambda: load_trafo_type(g.trafo_type)) if g.trafo_type else None,
        "lv_trafo": ((lambda: load_trafo_type(g.lv_trafo_type, key="grid.lv_trafo_type"))
                     if g.lv_trafo_type else None),
        "ups": (lambda: load_ups_type(g.ups_type)) if g.ups_type else None,
        "shaft": (lambda: load_shaft(gi.shaft_model, gi.mech_damping_ratio)) if gi.enabled else None,
        "mode_set": (lambda: load_mode_set(gi.mode_set)) if gi.enabled else None,
    }
    entries, unresolved = {}, {}
    for name, load in loaders.items():
        if load is None:
            continue
        try:
            entries[name] = load()
        except ScenarioError as exc:
            unresolved[name] = str(exc)
    return lib.with_domains(unresolved=unresolved, **entries)


def resolve(scenario: Scenario, source: str = "<scenario>", check: bool = True) -> Scenario:
    """The scenario with every library entry it names on ``scenario.library``, checked.

    Idempotent: a scenario already resolved is returned as is (not checked again). One built in
    code (without a loader) gets its configuration entries first
    (:func:`facility.config.load.config_library`).

    Parameters
    ----------
    scenario : Scenario
    source : str
        Name of the scenario in messages (each line of a :class:`ScenarioError` starts with it).
    check : bool
        Run every check (:func:`facility.scenario.checks.check_all`: the configuration's, the
        domains', then the preconditions of the stages of a run) before attaching the entries.

    Returns
    -------
    Scenario
        The same object, its library completed.

    Raises
    ------
    ScenarioError
        One error listing every problem the checks found; without the checks, the first entry
        that cannot be loaded.
    """
    if scenario._library is not None and scenario._library.domains:
        return scenario
    lib = loaded_library(scenario)
    if check:
        check_all(scenario, lib, source)
    lib = require_library(scenario, lib, source)   # the configuration's entries first, as loaded
    for msg in lib.unresolved.values():
        raise ScenarioError(f"{source}: {msg}")
    scenario._library = lib
    return scenario


def scenario_from_dict(data: dict, source: str = "<scenario>", base_dir: Path | None = None,
                       check: bool = True, overrides: list[tuple[str, str]] | None = None) -> Scenario:
    """A raw scenario dict validated against the schema (:func:`facility.config.load.parse_scenario`),
    then :func:`resolve`\\ d (every check when ``check``); see
    :func:`facility.config.load.scenario_from_dict` for the parameters."""
    s = parse_scenario(data, source=source, base_dir=base_dir, overrides=overrides)
    return resolve(s, source, check=check)


def load_scenario(path: str | Path, overrides: Iterable[str] | None = None, check: bool = True) -> Scenario:
    """A scenario file read, overridden (:func:`facility.config.load.scenario_input`), validated
    against the schema and :func:`resolve`\\ d (every check when ``check``)."""
    data, options = scenario_input(path, overrides)
    return scenario_from_dict(data, check=check, **options)
