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
import sys
from typing import Callable, Mapping

__version__ = "0.1.0"


def lazy_face(package: str, where: Mapping[str, str]) -> tuple[Callable, Callable]:
    """The PEP 562 hooks of a package face whose names load on first use.

    ``__getattr__, __dir__ = lazy_face(__name__, {"name": "module", ...})`` in a package's
    ``__init__.py``: ``package.name`` imports ``package.module`` the first time it is asked for
    and keeps the value on the package. Used where a light path of the CLI imports a package
    whose names pull in heavy modules (pandapower, Pyomo, numba, matplotlib, pandas).
    """
    def __getattr__(name: str):
        if name in where:
            value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__


#: the face's names and the module each comes from (they import pandapower and Pyomo: loaded
#: on first use for the CLI's start-up time)
_FACE = {
    "load_scenario": "scenario",
    "scenario_from_dict": "scenario",
    "resolve": "scenario",
    "run_scenario": "run",
    "size_scenario": "sizing",
    "simulate_design": "cosim",
    "Results": "cosim",
    "ScenarioError": "errors",
}

__all__ = ["__version__", "lazy_face", *_FACE]

__getattr__, __dir__ = lazy_face(__name__, _FACE)
