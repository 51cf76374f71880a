"""facility: co-simulator for the power of AI-training datacenters.

Layers (like pvlib): pure numpy/pandas functions (``facility.workload``, ``facility.gpu``,
``facility.metrics``, ``facility.storage``) -> thin objects -> one orchestrator
(:func:`facility.run.run_scenario`) returning a documented :class:`facility.cosim.Results`.
Pyomo lives only in ``facility.optimize``; pandapower only in ``facility.electrical``.
The module map and the rule each package keeps: docs/architecture.md.

The package face: ``from facility import load_scenario, run_scenario, size_scenario, Results``.
They are loaded on first use (PEP 562), because ``python -m facility`` imports this module
first and its start-up (``--help``, ``validate``) should not pay for pandapower and Pyomo.
"""

import importlib

__version__ = "0.1.0"

#: the face's names and the module each comes from
_FACE = {
    "load_scenario": "facility.scenario",
    "scenario_from_dict": "facility.scenario",
    "resolve": "facility.scenario",
    "run_scenario": "facility.run",
    "size_scenario": "facility.sizing",
    "simulate_design": "facility.cosim",
    "Results": "facility.cosim",
    "ScenarioError": "facility.errors",
}

__all__ = ["__version__", *_FACE]


def __getattr__(name: str):
    # lazy: the CLI's start-up time (the face's modules import pandapower and Pyomo)
    if name in _FACE:
        value = getattr(importlib.import_module(_FACE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'facility' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_FACE))
