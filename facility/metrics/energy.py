"""The energy account of a run (``metrics.json`` → ``energy``; definitions: :mod:`facility.metrics`).
Imports numpy only."""

from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["energy_mwh", "storage_restore_mwh", "energy_metrics"]


def energy_mwh(p_mw: np.ndarray, dt_s: float) -> float:
    """Energy of P over the horizon, each sample held for one step: Σ P·dt / 3600. [MWh]"""
    return float(np.sum(p_mw, dtype=float) * dt_s / 3600.0)


def storage_restore_mwh(delta_e_mwh: float, eff_charge_frac: float, eff_discharge_frac: float) -> float:
    """AC energy at the terminals that returns a storage to its initial stored energy. [MWh]

    Parameters
    ----------
    delta_e_mwh : float
        ΔE = stored energy at the end − at the start. [MWh]
    eff_charge_frac, eff_discharge_frac : float
        η_c and η_d of the storage. [frac]

    Returns
    -------
    float
        −ΔE / η_c for ΔE < 0 (energy to draw to refill it), −ΔE · η_d for ΔE ≥ 0 (a credit:
        what the surplus can deliver back). [MWh]
    """
    d = float(delta_e_mwh)
    return -d / float(eff_charge_frac) if d < 0 else -d * float(eff_discharge_frac)


def energy_metrics(raw_mwh: float, pcc_mwh: float,
                   storages: Mapping[str, tuple[float, float, float]] | None = None) -> dict:
    """The ``energy`` block of metrics.json (definitions in the module docstring).

    Parameters
    ----------
    raw_mwh : float
        PCC energy with every mitigation off. [MWh]
    pcc_mwh : float
        PCC energy. [MWh]
    storages : mapping, optional
        ``{name: (delta_e_mwh [MWh], eff_charge_frac, eff_discharge_frac)}`` of the storages.

    Returns
    -------
    dict
        raw_mwh, pcc_mwh, energy_overhead_frac, energy_overhead_uncorrected_frac,
        storage_net_charge_mwh, storage_restore_mwh, pcc_restored_mwh.
    """
    items = dict(storages or {})
    net = float(sum(d for d, _, _ in items.values()))
    restore = float(sum(storage_restore_mwh(d, ec, ed) for d, ec, ed in items.values()))
    restored = float(pcc_mwh) + restore
    raw = float(raw_mwh)
    return {
        "raw_mwh": raw,
        "pcc_mwh": float(pcc_mwh),
        "energy_overhead_frac": restored / raw - 1.0 if raw > 0 else 0.0,
        "energy_overhead_uncorrected_frac": float(pcc_mwh) / raw - 1.0 if raw > 0 else 0.0,
        "storage_net_charge_mwh": net,
        "storage_restore_mwh": restore,
        "pcc_restored_mwh": restored,
    }
