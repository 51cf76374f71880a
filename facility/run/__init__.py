"""The orchestrator of ``facility run``: :func:`run_scenario` sizes an extendable storage first
(:mod:`facility.sizing`) and co-simulates the design (:mod:`facility.cosim`). The package
imports both; neither imports it (only the CLI and the sweep workers do)."""

from facility.run.orchestrator import run_scenario

__all__ = ["run_scenario"]
