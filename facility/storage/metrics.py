"""Per-storage metrics (``metrics.json`` → ``storage.<name>``)."""

from __future__ import annotations

import numpy as np

from facility.storage.params import StorageParams
from facility.storage.soc import StorageTrace

__all__ = ["storage_metrics", "storage_metrics_from_series", "discharge_throughput_mwh", "life_metrics"]

S_PER_YEAR = 8760.0 * 3600.0


def life_metrics(equivalent_full_cycles: float, horizon_s: float, cycle_life: float | None,
                 cycle_depth_frac: float = 1.0, calendar_life_years: float | None = None) -> dict:
    r"""Cycling per year and the years to end of life, the horizon's operation repeated all year.

    .. math::  n_{yr} = n_{EFC} \cdot \frac{8760 \cdot 3600}{H},\qquad
               Y = \min\Big(Y_{cal}, \frac{N d}{n_{yr}}\Big)

    n_EFC: equivalent full cycles over the horizon H [s] (discharge throughput / E); N: rated
    cycles at depth d [frac] (N d equivalent full cycles to end of life, the same throughput
    model as the degradation cost, :func:`facility.config.technology.degradation_usd_per_mwh`);
    Y_cal: calendar life [yr].

    Returns
    -------
    dict
        ``equivalent_full_cycles_per_year`` [1/yr] and, when a cycle or calendar life is
        known, ``years_to_end_of_life`` [yr]; with a cycle life also ``cycle_life_used_frac_per_year``
        (share of the rated throughput used per year) [frac/yr].

    Examples
    --------
    >>> life_metrics(1.0, 86400.0, 6000, 0.8, 15.0)["years_to_end_of_life"]   # 1 cycle a day
    13.150684931506849
    """
    per_year = equivalent_full_cycles * S_PER_YEAR / horizon_s if horizon_s > 0 else 0.0
    out = {"equivalent_full_cycles_per_year": float(per_year)}
    years = [] if calendar_life_years is None else [float(calendar_life_years)]
    if cycle_life is not None:
        rated = float(cycle_life) * float(cycle_depth_frac)
        out["cycle_life_used_frac_per_year"] = float(per_year / rated)
        if per_year > 0:
            years.append(rated / per_year)
    if years:
        out["years_to_end_of_life"] = float(min(years))
    return out


def discharge_throughput_mwh(p_mw: np.ndarray, dt_s: float) -> float:
    """Energy delivered by the storage at its terminals: sum of max(-p, 0) * dt. [MWh]"""
    p = np.asarray(p_mw, dtype=float)
    return float(np.maximum(-p, 0.0).sum() * dt_s / 3600.0)


def storage_metrics(trace: StorageTrace, params: StorageParams, dt_s: float) -> dict:
    """Metrics of one storage over the horizon.

    Parameters
    ----------
    trace : StorageTrace
        The storage's simulated power and SoC.
    params : StorageParams
        Its parameters.
    dt_s : float
        Step length. [s]

    Returns
    -------
    dict
        ``p_rated_mw`` [MW], ``e_rated_mwh`` [MWh]; ``min_soc_frac`` / ``max_soc_frac``: the
        lowest / highest SoC of the reported series (SoC at the end of each step) [frac];
        ``throughput_mwh``: discharge throughput, energy delivered at the terminals,
        sum of max(-p, 0) * dt [MWh]; ``equivalent_full_cycles`` = throughput_mwh / e_rated_mwh
        (0 for a storage without energy) [-]; ``delta_e_mwh``: stored energy at the end of the
        last step minus at t = 0, (soc[-1] − initial_soc_frac) · e_rated_mwh [MWh] (the
        energy account of :func:`facility.metrics.energy_metrics` charges it); with a cycle or
        calendar life (a technology) also :func:`life_metrics`.
    """
    soc = np.asarray(trace.soc_frac, dtype=float)
    thr = discharge_throughput_mwh(trace.p_mw, dt_s)
    efc = thr / params.e_rated_mwh if params.e_rated_mwh > 0 else 0.0
    return {
        "p_rated_mw": float(params.p_rated_mw),
        "e_rated_mwh": float(params.e_rated_mwh),
        "min_soc_frac": float(soc.min()) if soc.size else float(params.initial_soc_frac),
        "max_soc_frac": float(soc.max()) if soc.size else float(params.initial_soc_frac),
        "throughput_mwh": thr,
        "equivalent_full_cycles": float(efc),
        "delta_e_mwh": float((soc[-1] - params.initial_soc_frac) * params.e_rated_mwh) if soc.size else 0.0,
        **(life_metrics(efc, soc.size * dt_s, params.cycle_life, params.cycle_depth_frac,
                        params.calendar_life_years)
           if params.cycle_life is not None or params.calendar_life_years is not None else {}),
    }


def storage_metrics_from_series(p_mw: np.ndarray, soc_frac: np.ndarray, params: StorageParams,
                                dt_s: float) -> dict:
    """:func:`storage_metrics` from plain power and SoC series (e.g. timeseries columns)."""
    p = np.asarray(p_mw, dtype=float)
    soc = np.asarray(soc_frac, dtype=float)
    tr = StorageTrace(p_mw=p, soc_frac=soc, e_mwh=soc * params.e_rated_mwh,
                      saturated=np.zeros(p.shape, bool), limit=np.zeros(p.shape, np.int8))
    return storage_metrics(tr, params, dt_s)
