"""Regret against perfect foresight: how far a controller run is from the ``optimal`` plan.

The ``optimal`` controller runs the perfect-foresight dispatch of
:func:`facility.optimize.solve_dispatch` on the same site (same load, ratings, spec). A
closed-loop controller knows less; its regret is measured on what the site pays and risks:

* **energy**: the energy overhead of both runs (``energy.energy_overhead_frac``), their
  ratio and difference, and the same corrected for the energy left in (or taken from)
  storage at the end: ``(pcc_mwh - dE_stored) / raw_mwh - 1`` with
  ``dE_stored = sum over storages of (SoC_end - SoC_0) * e_rated`` (a run that ends with
  fuller storage has not burned that energy);
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

__all__ = ["stored_energy_change_mwh", "regret_metrics", "regret_vs_optimal", "optimal_variant"]


def stored_energy_change_mwh(soc_frac: dict, storage_metrics: dict, initial_soc_frac: dict) -> float:
    """Energy stored at the end minus at the start, all storages. [MWh]

    Parameters
    ----------
    soc_frac : dict of name -> array (T,)
        SoC at the end of each step. [frac]
    storage_metrics : dict
        ``metrics['storage']`` (for ``e_rated_mwh``).
    initial_soc_frac : dict of name -> float
        SoC before step 0. [frac]
    """
    total = 0.0
    for n, s in soc_frac.items():
        s = np.asarray(s, dtype=float)
        if s.size and n in storage_metrics:
            total += (float(s[-1]) - float(initial_soc_frac[n])) * float(storage_metrics[n]["e_rated_mwh"])
    return total


def _adjusted_overhead(metrics: dict, d_stored_mwh: float) -> float:
    e = metrics["energy"]
    raw = e["raw_mwh"]
    return (e["pcc_mwh"] - d_stored_mwh) / raw - 1.0 if raw > 0 else 0.0


def regret_metrics(metrics: dict, optimal: dict, spec, *, d_stored_mwh: float = 0.0,
                   optimal_d_stored_mwh: float = 0.0) -> dict:
    """Compare a run's metrics with the optimal run's on the same site.

    Parameters
    ----------
    metrics, optimal : dict
        ``Results.metrics`` of the controller run and of the ``optimal`` run.
    spec : SpecConfig
        The limits (for the margins).
    d_stored_mwh, optimal_d_stored_mwh : float
        Energy left in storage at the end of each run (:func:`stored_energy_change_mwh`). [MWh]

    Returns
    -------
    dict
        Every leaf a number or bool (``metrics.json`` layout): ``energy_overhead_frac``,
        ``optimal_energy_overhead_frac``, ``energy_overhead_ratio`` (left out when the
        optimal's is not positive), ``energy_overhead_excess_frac``, the ``*_adj_frac`` versions corrected
        for stored energy, ``stored_energy_change_mwh`` (both), ``margin`` /
        ``optimal_margin`` / ``margin_regret`` per limit and their minima, ``throughput_mwh`` /
        ``optimal_throughput_mwh`` / ``throughput_ratio`` per storage, ``compliant`` and
        ``optimal_compliant``.
    """
    ovh = float(metrics["energy"]["energy_overhead_frac"])
    ovh_o = float(optimal["energy"]["energy_overhead_frac"])
    adj = _adjusted_overhead(metrics, d_stored_mwh)
    adj_o = _adjusted_overhead(optimal, optimal_d_stored_mwh)
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
        "energy_overhead_adj_frac": adj,
        "optimal_energy_overhead_adj_frac": adj_o,
        "energy_overhead_adj_ratio": adj / adj_o if adj_o > 0 else nan,
        "stored_energy_change_mwh": float(d_stored_mwh),
        "optimal_stored_energy_change_mwh": float(optimal_d_stored_mwh),
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


def regret_vs_optimal(results, optimal=None) -> dict:
    """Regret of a finished run against the ``optimal`` controller on the same site.

    Parameters
    ----------
    results : facility.simulate.Results
        The controller run.
    optimal : facility.simulate.Results, optional
        The optimal run; solved and simulated here when not given (one LP over the whole
        horizon: slow on long fine-grained horizons).

    Returns
    -------
    dict
        :func:`regret_metrics`.
    """
    from facility.simulate import run_scenario

    if optimal is None:
        sc, ratings = optimal_variant(results.scenario, results.metrics.get("storage"))
        optimal = run_scenario(sc, ratings=ratings, plots=False)
    return regret_metrics(results.metrics, optimal.metrics, results.scenario.spec,
                          d_stored_mwh=_stored(results), optimal_d_stored_mwh=_stored(optimal))


def _stored(res) -> float:
    ts = res.timeseries
    sto = res.metrics.get("storage", {})
    socs = {n: ts[f"soc_{n}_frac"].to_numpy() for n in sto if f"soc_{n}_frac" in ts}
    init = {n: getattr(res.scenario, n).initial_soc_frac for n in socs}
    return stored_energy_change_mwh(socs, sto, init)
