"""The orchestrator of ``facility run``: :func:`run_scenario` runs a scenario and returns :class:`Results`.

One formulation for dispatch and sizing: a scenario with an extendable storage is sized first
(:func:`facility.sizing.size_scenario`, what ``facility size`` does) and the sized design is
simulated; any other scenario is a fixed design, simulated by
:func:`facility.cosim.simulate_design` (the co-simulation chain, docs/architecture.md).

This module sits above both :mod:`facility.cosim.design` and :mod:`facility.sizing.pipeline` and
may import them, :mod:`facility.scenario` (the entry's resolve) and
:mod:`facility.report.outdir`; nothing in the package but the CLI and the sweep workers imports it. The names that lived here before the
co-simulation moved to :mod:`facility.cosim.design` are re-exported, so
``from facility.run.orchestrator import generate_trace`` (or ``Results``, ``feeder_peaks``, ...) keeps
working.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

import numpy as np

from facility.config.schema import Scenario
from facility.cosim.design import (feeder_peaks, generate_trace, gpu_controls_active, network_caps,
                                   simulate_design, with_network_caps)
from facility.cosim.results import Results
from facility.report.outdir import check_out_dir
from facility.scenario import resolve
from facility.sizing.pipeline import size_scenario

__all__ = ["Results", "run_scenario", "generate_trace", "gpu_controls_active", "network_caps",
           "with_network_caps", "feeder_peaks", "simulate_design"]

log = logging.getLogger(__name__)


def run_scenario(scenario: Scenario, *, out_dir: str | Path | None = None, progress: bool = False,
                 ratings: Mapping[str, Mapping[str, float]] | None = None,
                 plan: Mapping[str, np.ndarray] | None = None, sizing: dict | None = None,
                 plots: bool = True, gpu_plan=None) -> Results:
    """Run the full co-simulation of a scenario, sizing an extendable storage first.

    Without ``ratings``, a scenario with an extendable storage is sized and verified
    (:func:`facility.sizing.size_scenario` with ``require_compliant=False``: the sized design
    is returned even where its verification breaks a limit) and the verification run is the
    result; ``plan``, ``sizing`` and ``gpu_plan`` are then not used. Any other scenario runs as
    given (:func:`facility.cosim.simulate_design`).

    Parameters
    ----------
    scenario, out_dir, progress, ratings, plan, sizing, plots, gpu_plan
        As for :func:`facility.cosim.simulate_design` (``out_dir`` is checked before the
        sizing too).

    Returns
    -------
    Results
    """
    scenario = resolve(scenario)    # once, here: a scenario built in code gets its library
    if ratings is None and any(c.extendable for c in scenario.storages().values()):
        if out_dir is not None:  # refuse a target that may not be replaced before sizing
            check_out_dir(out_dir, force=True, kinds=("run", "size"))
        # one formulation for dispatch and sizing: an extendable storage is sized first, then
        # the simulation runs the sized design (what `facility size` does, without its files)
        log.info("%s: extendable storage -> sizing it before the simulation", scenario.name)
        _, res = size_scenario(scenario, out_dir=out_dir, progress=progress, plots=plots,
                               require_compliant=False)
        return res
    return simulate_design(scenario, out_dir=out_dir, progress=progress, ratings=ratings, plan=plan,
                           sizing=sizing, plots=plots, gpu_plan=gpu_plan)
