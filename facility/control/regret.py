"""Regret against perfect foresight: how far a controller run is from the ``optimal`` plan.

The ``optimal`` controller runs the perfect-foresight dispatch of
:func:`facility.optimize.solve_dispatch` on the same site (same load, ratings, spec). A
closed-loop controller knows less; its regret is measured on what the site pays and risks:

* **energy**: the energy overhead of both runs (``energy.energy_overhead_frac``: corrected
  for the energy left in or taken from storage at the end, docs/contract.md), their ratio
  and difference, and the same for the uncorrected overhead (``pcc_mwh / raw_mwh - 1``);
* **limit margins**: ``1 - metric / limit`` for every set limit (negative = violated), for
  both, and the optimal's margin minus the controller's (positive = the controller is
  closer to the limit);
* **storage throughput**: discharge throughput per storage and its ratio to the optimal's
  (wear: equivalent full cycles scale with it).

:func:`regret_metrics` is the pure comparison of two metrics trees; :func:`regret_vs_optimal`
runs the optimal controller for a finished run and compares.
"""

from __future__ import annotations

import numpy as np

from facility import metrics as fm

__all__ = ["regret_metrics", "regret_vs_optimal", "optimal_variant"]


def regret_metrics(metrics: dict, optimal: dict, spec) -> dict:
    """Compare a run's metrics with the optimal run's on the same site.

    Parameters
    ----------
    metrics, optimal : dict
        ``Results.metrics`` of the controller run and of the ``optimal`` run.
    spec : SpecConfig
        The limits (for the margins).

    Returns
    -------
    dict
        Every leaf a number or bool (``metrics.json`` layout): ``energy_overhead_frac``,
        ``optimal_energy_overhead_frac``, ``energy_overhead_ratio`` (left out when the
        optimal's is not positive), ``energy_overhead_excess_frac``, the ``*_uncorrected_*``
        versions, ``storage_net_charge_mwh`` (both), ``margin`` / ``optimal_margin`` /
        ``margin_regret`` per limit and their minima, ``throughput_mwh`` /
        ``optimal_throughput_mwh`` / ``throughput_ratio`` per storage, ``compliant`` and
        ``optimal_compliant``.
    """
    e, e_o = metrics["energy"], optimal["energy"]
    ovh, ovh_o = float(e["energy_overhead_frac"]), float(e_o["energy_overhead_frac"])
    unc = float(e.get("energy_overhead_uncorrected_frac", ovh))
    unc_o = float(e_o.get("energy_overhead_uncorrected_frac", ovh_o))
    mar = fm.compliance_margins(metrics["pcc"], spec)
    mar_o = fm.compliance_margins(optimal["pcc"], spec)
    thr = {n: float(v["throughput_mwh"]) for n, v in metrics.get("storage", {}).items()}
    thr_o = {n: float(v["throughput_mwh"]) for n, v in optimal.get("storage", {}).items()}
    nan = float("nan")
    out = {
        "energy_overhead_frac": ovh,
        "optimal_energy_overhead_frac": ovh_o,
        "energy_overhead_ratio": ovh / ovh_o if ovh_o > 0 else nan,
        "energy_overhead_excess_frac": ovh - ovh_o,
        "energy_overhead_uncorrected_frac": unc,
        "optimal_energy_overhead_uncorrected_frac": unc_o,
        "energy_overhead_uncorrected_ratio": unc / unc_o if unc_o > 0 else nan,
        "storage_net_charge_mwh": float(e.get("storage_net_charge_mwh", 0.0)),
        "optimal_storage_net_charge_mwh": float(e_o.get("storage_net_charge_mwh", 0.0)),
        "margin": mar,
        "optimal_margin": mar_o,
        "margin_regret": {k: mar_o[k] - mar[k] for k in mar if k in mar_o},
        "min_margin": min(mar.values()) if mar else nan,
        "optimal_min_margin": min(mar_o.values()) if mar_o else nan,
        "throughput_mwh": thr,
        "optimal_throughput_mwh": thr_o,
        "throughput_ratio": {n: thr[n] / thr_o[n] if thr_o.get(n, 0) > 0 else nan
                             for n in thr if n in thr_o},
        "compliant": bool(metrics["compliance"]["compliant"]),
        "optimal_compliant": bool(optimal["compliance"]["compliant"]),
    }
    return _drop_nan(out)


def _drop_nan(d: dict) -> dict:
    """Leave out undefined ratios (metrics.json leaves are finite numbers or bools)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out[k] = _drop_nan(v)
        elif isinstance(v, bool) or np.isfinite(v):
            out[k] = v
    return out


def optimal_variant(scenario, storage_metrics: dict | None = None):
    """The same scenario under the ``optimal`` controller, with the ratings the run had
    (a sized design keeps its sizing). Returns ``(scenario, ratings)``."""
    sc = scenario.model_copy(update={"controller": scenario.controller.model_copy(
        update={"kind": "optimal", "report_regret": False})})
    ratings = None
    if storage_metrics:
        ratings = {n: {"p_rated_mw": float(v["p_rated_mw"]), "e_rated_mwh": float(v["e_rated_mwh"])}
                   for n, v in storage_metrics.items()}
    return sc, ratings


def regret_vs_optimal(results, optimal=None, run_scenario=None) -> dict:
    """Regret of a finished run against the ``optimal`` controller on the same site.

    Parameters
    ----------
    results : facility.run.orchestrator.Results
        The controller run.
    optimal : facility.run.orchestrator.Results, optional
        The optimal run; solved and simulated here when not given (one LP over the whole
        horizon: slow on long fine-grained horizons).
    run_scenario : callable, optional
        The orchestrator that simulates the optimal run when ``optimal`` is not given
        (:func:`facility.cosim.simulate_design`, which passes itself: this module does not import
        the co-simulation that calls it).

    Returns
    -------
    dict
        :func:`regret_metrics`.
    """
    if optimal is None:
        if run_scenario is None:
            raise TypeError("regret_vs_optimal needs the optimal run or run_scenario to simulate it")
        sc, ratings = optimal_variant(results.scenario, results.metrics.get("storage"))
        optimal = run_scenario(sc, ratings=ratings, plots=False)
    return regret_metrics(results.metrics, optimal.metrics, results.scenario.spec)
