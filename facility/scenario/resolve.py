"""Resolve a scenario once: the domain checks, then the domain's library entries.

See :mod:`facility.config.resolved` for the two steps and :class:`~facility.config.resolved.Library`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from facility.config import load as config_load
from facility.config.load import config_library
from facility.config.schema import Scenario
from facility.electrical.library import load_trafo_type, load_ups_type
from facility.grid_impact.library import load_mode_set, load_shaft

__all__ = ["resolve", "load_scenario", "scenario_from_dict"]


def resolve(scenario: Scenario, source: str = "<scenario>") -> Scenario:
    """The scenario with every library entry it names on ``scenario.library``.

    Idempotent: a scenario already resolved is returned as is. One built in code (without a
    loader) gets its configuration entries first (:func:`facility.config.load.config_library`).

    Parameters
    ----------
    scenario : Scenario
    source : str
        Name of the scenario in messages.

    Returns
    -------
    Scenario
        The same object, its library completed.
    """
    lib = scenario._library
    if lib is not None and lib.domains:
        return scenario
    if lib is None:
        lib = config_library(scenario)
    g = scenario.grid
    gi = scenario.grid_impact
    on = gi.enabled
    scenario._library = lib.with_domains(
        trafo=load_trafo_type(g.trafo_type) if g.trafo_type else None,
        lv_trafo=(load_trafo_type(g.lv_trafo_type, key="grid.lv_trafo_type")
                  if g.lv_trafo_type else None),
        ups=load_ups_type(g.ups_type) if g.ups_type else None,
        shaft=load_shaft(gi.shaft_model, gi.mech_damping_ratio) if on else None,
        mode_set=load_mode_set(gi.mode_set) if on else None,
    )
    return scenario


def scenario_from_dict(data: dict, source: str = "<scenario>", base_dir: Path | None = None,
                       check: bool = True, overrides: list[tuple[str, str]] | None = None) -> Scenario:
    """:func:`facility.config.load.scenario_from_dict`, then :func:`resolve`."""
    s = config_load.scenario_from_dict(data, source=source, base_dir=base_dir, check=check,
                                       overrides=overrides)
    return resolve(s, source)


def load_scenario(path: str | Path, overrides: Iterable[str] | None = None, check: bool = True) -> Scenario:
    """:func:`facility.config.load.load_scenario`, then :func:`resolve`."""
    s = config_load.load_scenario(path, overrides=overrides, check=check)
    return resolve(s, str(path))
