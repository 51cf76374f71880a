"""A cheap stand-in for :func:`facility.run.orchestrator.run_scenario` with the same metrics layout.

For tests and the overhead benchmark of the sweep engine: it builds an ideal square-wave
site power from the scenario's first job, lifts its low phase to the GPU floor, shaves the
swing with an ideal storage, and evaluates the real metric functions
(:func:`facility.metrics.power_metrics`, :func:`facility.metrics.compliance`) on it. It is
not a physical model; never use its numbers for a study.

Two control tokens in ``scenario.description`` drive tests: ``synthetic:fail`` raises a
:class:`~facility.errors.ScenarioError`, ``synthetic:sleep=<s>`` sleeps ``<s>`` seconds
(a case with real work to interrupt).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np

from facility import metrics as fm
from facility.config.schema import Scenario
from facility.errors import ScenarioError
from facility.report.io import write_json
from facility.scenario import resolve

__all__ = ["synthetic_case", "SYNTHETIC_SCENARIO_TOML"]

#: A small scenario (TOML text with a ``{description}`` field for the control tokens) that
#: the synthetic case function runs fast; shared by the sweep tests and bench_sweep.py.
SYNTHETIC_SCENARIO_TOML = """
schema_version = 1
name = "synthetic_sweep"
description = "{description}"
[time]
horizon_s = 10.0
dt_s = 0.02
[[jobs]]
name = "job"
n_gpus = 1000
gpu = "gb200"
period_s = 2.0
compute_frac = 0.7
p_low_frac = 0.2
[gpu_smoothing]
enabled = true
floor_frac = 0.2
[rack_storage]
enabled = true
p_rated_mw = 1.0
e_rated_mwh = 0.0
cost_usd_per_kw = 100.0
cost_usd_per_kwh = 500.0
[controller]
kind = "moving_average"
[spec]
window_s = 5.0
max_window_swing_mw = 0.5
"""

_SLEEP = re.compile(r"synthetic:sleep=([0-9.eE+-]+)")


def synthetic_case(scenario: Scenario, out_dir: Path | None = None, mode: str = "run") -> dict:
    """Metrics of the ideal square-wave site (see the module docstring).

    Parameters
    ----------
    scenario : Scenario
        Uses jobs[0] (n_gpus, gpu, period_s, compute_frac, p_low_frac), site (non_gpu_frac,
        pue), gpu_smoothing.floor_frac, the enabled storages' ratings and efficiencies, spec.
    out_dir : pathlib.Path, optional
        When given, ``metrics.json`` is written there.
    mode : str
        ``run`` or ``size`` (size adds a ``sizing`` block echoing the ratings).

    Returns
    -------
    dict
        The nested metrics (raw, pcc, energy, storage, compliance[, sizing]).
    """
    scenario = resolve(scenario)     # as run_scenario: one built in code gets its library
    desc = scenario.description
    if "synthetic:fail" in desc:
        raise ScenarioError(f"{scenario.name}: synthetic failure requested (description = {desc!r})")
    m = _SLEEP.search(desc)
    if m:
        time.sleep(float(m.group(1)))
    job = scenario.jobs[0]
    gpu = scenario.library.gpu(job.gpu)
    scale_mw = job.n_gpus * gpu.tdp_w * (1 + scenario.site.non_gpu_frac) * scenario.site.pue / 1e6
    p_low = job.p_low_frac if job.p_low_frac is not None else 0.2
    duty = job.compute_frac if job.compute_frac is not None else 0.7
    period = job.period_s if job.period_s is not None else 1.0
    floor = scenario.gpu_smoothing.floor_frac if scenario.gpu_smoothing.enabled else 0.0
    lo = max(p_low, floor)
    swing_mw = (1.0 - lo) * scale_mw
    e_mwh = sum((s.e_rated_mwh or 0.0) for s in scenario.storages().values())
    p_mw = sum((s.p_rated_mw or 0.0) for s in scenario.storages().values())
    # ideal storage: a half-swing p over the low phase needs p·(1−D)·T/3600 MWh
    need_mwh = 0.5 * swing_mw * (1 - duty) * period / 3600.0
    shave = min(1.0, e_mwh / need_mwh if need_mwh > 0 else 1.0, 2 * p_mw / swing_mw if swing_mw > 0 else 1.0)
    pcc_swing = swing_mw * (1.0 - shave)

    dt = scenario.time.dt_s
    t = np.arange(int(round(scenario.time.horizon_s / dt))) * dt
    high = (t % period) < duty * period
    raw = scale_mw * np.where(high, 1.0, p_low)
    delta = swing_mw - pcc_swing  # moved by storage: high phase −δ(1−D), low phase +δD (mean kept)
    pcc = np.where(high, scale_mw - delta * (1 - duty), scale_mw * lo + delta * duty)
    eff = np.prod([s.eff_charge_frac * s.eff_discharge_frac for s in scenario.storages().values()] or [1.0])
    raw_mwh = fm.energy_mwh(raw, dt)
    thru_mwh = delta * duty * (1 - duty) * scenario.time.horizon_s / 3600.0
    pcc_mwh = fm.energy_mwh(pcc, dt) + thru_mwh * (1 - eff)
    metrics = {
        "raw": fm.power_metrics(raw, dt, scenario.spec),
        "pcc": fm.power_metrics(pcc, dt, scenario.spec),
        # the ideal storage keeps its mean (it ends where it started): no net charge to correct
        "energy": fm.energy_metrics(raw_mwh, pcc_mwh),
        "storage": {n: {"p_rated_mw": float(s.p_rated_mw or 0.0), "e_rated_mwh": float(s.e_rated_mwh or 0.0),
                        "throughput_mwh": thru_mwh}
                    for n, s in scenario.storages().items()},
    }
    metrics["compliance"] = fm.compliance(metrics["pcc"], scenario.spec)
    if mode == "size":
        metrics["sizing"] = {n: {"p_rated_mw_opt": v["p_rated_mw"], "e_rated_mwh_opt": v["e_rated_mwh"]}
                             for n, v in metrics["storage"].items()}
    if out_dir is not None:
        write_json(Path(out_dir) / "metrics.json", metrics)
    return metrics
