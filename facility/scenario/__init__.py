"""A scenario ready for the layers: loaded, checked against every domain, its library names
resolved once.

:func:`load_scenario` and :func:`scenario_from_dict` are :mod:`facility.config`'s (the schema
and the checks that need only it) followed by :func:`resolve` (the checks that need a domain,
then the domain's library entries on ``scenario.library``). The package sits above
:mod:`facility.config` and the domain packages, below :mod:`facility.cosim`,
:mod:`facility.sizing` and :mod:`facility.run`.
"""

from facility.scenario.resolve import load_scenario, resolve, scenario_from_dict

__all__ = ["load_scenario", "resolve", "scenario_from_dict"]
