"""Every check of a scenario, in one list: the configuration's, then each domain's.

:func:`scenario_problems` runs the consistency checks (:data:`facility.config.checks.CHECKS`,
then the trace files, the grid, the grid events and the grid-impact models), and on a scenario
they find nothing in, the preconditions of the stages of a run (the load generator's, the
storages', the controller's, the monitor's, the optimizer's size), in the order
:func:`facility.config.checks.check_scenario` listed them before the domain checks moved to
their domains. :func:`scenario_warnings` gathers what the inputs cannot show (no error).

May import: :mod:`facility.config`, :mod:`facility.errors` and the ``checks`` modules of the
domains (:mod:`facility.workload`, :mod:`facility.electrical`, :mod:`facility.grid_impact`,
:mod:`facility.control`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.checks import check_supported, config_problems, raise_problems
from facility.config.plausibility import plausibility_warnings
from facility.config.preconditions import check_monitor, check_sizes, check_storage_run
from facility.config.technology import cost_year_note
from facility.control.checks import check_controller_run
from facility.electrical.checks import check_grid, check_grid_events
from facility.grid_impact.checks import check_grid_impact, grid_impact_warnings
from facility.workload.checks import check_job_timing, check_trace_files, job_traces, trace_summaries
from facility.workload.trace_checks import trace_warnings

if TYPE_CHECKING:
    from facility.config.resolved import Library
    from facility.config.schema import Scenario

__all__ = ["scenario_problems", "check_all", "scenario_warnings", "trace_summaries"]


def scenario_problems(s: "Scenario", lib: "Library") -> list[str]:
    """The problems of every check (``lib``: the library being resolved, its domain entries
    loaded; see :mod:`facility.config.resolved`)."""
    problems = config_problems(s)
    problems += check_trace_files(s, lib)
    problems += check_grid(s, lib)
    problems += check_grid_events(s, lib)
    problems += check_grid_impact(s, lib)
    if problems:
        return problems
    # the run's preconditions, on a scenario that is consistent as written
    return (check_job_timing(s, lib) + check_storage_run(s) + check_controller_run(s)
            + check_monitor(s) + check_sizes(s))


def check_all(s: "Scenario", lib: "Library", source: str = "<scenario>") -> None:
    """Raise one :class:`ScenarioError` listing every problem of :func:`scenario_problems`, each
    line prefixed with ``source``.

    Raises
    ------
    NotSupportedError
        A section whose behaviour is not implemented yet is switched on.
    ScenarioError
        Any check failed.
    """
    check_supported(s, source)
    raise_problems(scenario_problems(s, lib), source)


def scenario_warnings(s: "Scenario") -> list[str]:
    """What the scenario's inputs cannot show (no error): a trace averaged by its sensor under
    limits above ~0.5 Hz, sampling slower than the band limits, poll gaps, a trace shorter than
    the job; and numbers that cannot be what the user meant
    (:mod:`facility.config.plausibility`); storage units whose costs are in different dollar
    years (compared as given, :func:`facility.config.technology.cost_year_note`); torsional
    modes the time step cannot resolve (:func:`facility.grid_impact.checks.grid_impact_warnings`).
    Each names its key. ``run`` logs the plausibility warnings and lists them in events and
    report.html (the report's Design table shows the cost years). ``s``: a resolved scenario.
    """
    out = []
    for key, job, tr in job_traces(s):    # an unreadable trace: reported by the checks
        out.extend(trace_warnings(tr, job, key, s))
    years = cost_year_note({u: getattr(c, "cost_year", None) for u, c in s.storage_units().items()})
    if years:
        out.append(f"storage: {years}")
    return out + plausibility_warnings(s) + grid_impact_warnings(s)
