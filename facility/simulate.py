"""The orchestrator of ``facility run``: :func:`run_scenario` runs a scenario and returns :class:`Results`.

One formulation for dispatch and sizing: a scenario with an extendable storage is sized first
(:func:`facility.sizing.size_scenario`, what ``facility size`` does) and the sized design is
simulated; any other scenario is a fixed design, simulated by
:func:`facility.cosim.simulate_design` (the co-simulation chain, docs/architecture.md).

This module sits above both :mod:`facility.cosim` and :mod:`facility.sizing`; nothing in the
package but the CLI and the sweep workers imports it. The names that lived here before the
co-simulation moved to :mod:`facility.cosim` are re-exported, so
``from facility.simulate import generate_trace`` (or ``Results``, ``feeder_peaks``, ...) keeps
working.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping

import numpy as np

from facility.config.schema import Scenario
from facility.cosim import (feeder_peaks, generate_trace, gpu_controls_active, network_caps, simulate_design,
                            with_network_caps)
from facility.results import Results

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
    scenario : Scenario
        Validated scenario.
    out_dir : str or pathlib.Path, optional
        When given, write metrics.json, timeseries.parquet, report.html + PNGs,
        scenario.resolved.toml and manifest.json there (atomically). It must be new, empty or
        an earlier facility result (replaced); anything else raises ScenarioError before the
        simulation (:mod:`facility.report.outdir`).
    progress : bool
        Show a progress bar over the stages.
    ratings : mapping, optional
        ``{storage: {"p_rated_mw": ..., "e_rated_mwh": ...}}`` overriding the scenario's
        ratings (a sized design); a hybrid section's units by unit name
        (``bess.supercap``).
    plan : mapping, optional
        Perfect-foresight storage dispatch ``{storage unit: p_mw (T,)}`` for
        ``controller.kind = "optimal"``; computed with :func:`facility.optimize.solve_dispatch`
        when missing.
    sizing : dict, optional
        sizing.json content to carry into the results and report.
    plots : bool
        Write PNG plots with the report.
    gpu_plan : facility.gpu.planned.GpuPlan, optional
        Per-job floor, cap and planned burn of a mix design (:func:`facility.mix.realize`),
        applied by the GPU controls.

    Returns
    -------
    Results
    """
    if ratings is None and any(c.extendable for c in scenario.storages().values()):
        if out_dir is not None:  # refuse a target that may not be replaced before sizing
            from facility.report.outdir import check_out_dir

            check_out_dir(out_dir, force=True, kinds=("run", "size"))
        # one formulation for dispatch and sizing: an extendable storage is sized first, then
        # the simulation runs the sized design (what `facility size` does, without its files)
        log.info("%s: extendable storage -> sizing it before the simulation", scenario.name)
        from facility.sizing import size_scenario

        _, res = size_scenario(scenario, out_dir=out_dir, progress=progress, plots=plots,
                               require_compliant=False)
        return res
    return simulate_design(scenario, out_dir=out_dir, progress=progress, ratings=ratings, plan=plan,
                           sizing=sizing, plots=plots, gpu_plan=gpu_plan)
