"""facility: co-simulator for the power of AI-training datacenters.

Layers (like pvlib): pure numpy/pandas functions (``facility.workload``, ``facility.gpu``,
``facility.metrics``, ``facility.storage``) -> thin objects -> one orchestrator
(:func:`facility.run.orchestrator.run_scenario`) returning a documented :class:`facility.cosim.results.Results`.
Pyomo lives only in ``facility.optimize``; pandapower only in ``facility.electrical``.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
