"""A scenario ready for the layers: loaded, checked against every domain, its library names
resolved once.

:func:`load_scenario` and :func:`scenario_from_dict` are :mod:`facility.config`'s schema
validation (:func:`facility.config.load.parse_scenario`) followed by :func:`resolve`: each
domain library entry loaded once, then every check (:mod:`facility.scenario.checks`: the
configuration's, then the domains' own ``checks`` modules, then the preconditions of the
stages of a run) raising one :class:`~facility.errors.ScenarioError` that lists every problem,
and the entries attached to ``scenario.library``. :mod:`facility.scenario.resources` estimates
a run's memory and time before it starts. The package sits above :mod:`facility.config` and
the domain packages, below :mod:`facility.cosim`, :mod:`facility.sizing` and
:mod:`facility.run`.
"""

from facility.scenario.checks import scenario_warnings, trace_summaries
from facility.scenario.resolve import load_scenario, resolve, scenario_from_dict

__all__ = ["load_scenario", "resolve", "scenario_from_dict", "scenario_warnings", "trace_summaries"]
