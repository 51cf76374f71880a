"""The PCC's power metrics against a utility spec: the rows of ``metrics.json`` →
``compliance``, the verdict and the margins (definitions: :mod:`facility.metrics`). Imports
the two metric modules beside it; the spec only for its type."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

import numpy as np

from facility.metrics.series import (dynamic_range_mw, max_ramp_mw_per_min, max_ramp_mw_per_s,
                                     max_window_swing_mw)
from facility.metrics.spectral import _band_mask, _dominant, _peak_in, spectrum

if TYPE_CHECKING:
    from facility.config.schema import SpecConfig

__all__ = ["COMPLIANCE_ABS_TOL", "LIMIT_METRICS", "UNIT_TEXT", "power_metrics", "compliance", "compliance_margins", "VERDICT_KEYS",
           "limit_rows", "verdict_text", "limit_margins", "margin_of", "margins_text", "LIMIT_UNITS"]

#: optimizer is not failed by floating-point rounding. [MW, MW/s, frac]
COMPLIANCE_ABS_TOL = 1e-6


def power_metrics(p_mw: np.ndarray, dt_s: float, spec: "SpecConfig") -> dict:
    """The ``raw`` / ``pcc`` block of metrics.json for one power series.

    Parameters
    ----------
    p_mw : array-like
        Power. [MW]
    dt_s : float
        Time step. [s]
    spec : SpecConfig
        Supplies ramp_window_s, window_s, band edges and extra bands.

    Returns
    -------
    dict
        p_mean_mw, p_max_mw, p_min_mw, max_ramp_up_mw_per_s, max_ramp_down_mw_per_s,
        max_ramp_mw_per_min, max_window_swing_mw, band_energy_frac, band_peak_mw,
        dominant_freq_hz, dynamic_range_mw and ``band_peaks_mw`` (one entry per spec band).
    """
    p = np.asarray(p_mw, dtype=float)
    up, down = max_ramp_mw_per_s(p, dt_s, spec.ramp_window_s)
    f, amp, energy = spectrum(p, dt_s)
    band = _band_mask(f, spec.band_min_hz, spec.band_max_hz)
    out = {
        "p_mean_mw": float(p.mean()),
        "p_max_mw": float(p.max()),
        "p_min_mw": float(p.min()),
        "max_ramp_up_mw_per_s": up,
        "max_ramp_down_mw_per_s": down,
        "max_ramp_mw_per_min": max_ramp_mw_per_min(p, dt_s),
        "max_window_swing_mw": max_window_swing_mw(p, dt_s, spec.window_s),
        "band_energy_frac": float(energy[band].sum()),
        "band_peak_mw": _peak_in(f, amp, spec.band_min_hz, spec.band_max_hz),
        "dominant_freq_hz": _dominant(f, amp, spec.band_min_hz),
        "dynamic_range_mw": dynamic_range_mw(p),
    }
    if spec.bands:
        out["band_peaks_mw"] = {b.name: _peak_in(f, amp, b.min_hz, b.max_hz) for b in spec.bands}
    return out


#: each spec limit key -> the ``metrics.json`` ``pcc`` metric it bounds
LIMIT_METRICS = {
    "max_ramp_up_mw_per_s": "max_ramp_up_mw_per_s",
    "max_ramp_down_mw_per_s": "max_ramp_down_mw_per_s",
    "max_ramp_mw_per_min": "max_ramp_mw_per_min",
    "max_window_swing_mw": "max_window_swing_mw",
    "max_band_energy_frac": "band_energy_frac",
    "max_band_peak_mw": "band_peak_mw",
    "max_dynamic_range_mw": "dynamic_range_mw",
}

#: The unit of each spec limit, as the suffix of its ``compliance.margins`` keys.
LIMIT_UNITS = {"max_ramp_up_mw_per_s": "mw_per_s", "max_ramp_down_mw_per_s": "mw_per_s",
               "max_ramp_mw_per_min": "mw_per_min", "max_window_swing_mw": "mw",
               "max_band_energy_frac": "frac", "max_band_peak_mw": "mw", "max_dynamic_range_mw": "mw"}


def _limits(pcc: dict, spec: "SpecConfig", keep) -> Iterator[tuple[str, float, float, str]]:
    """``(row, value, limit, unit)`` of every limit of ``spec`` that is set, in row order: the
    :data:`LIMIT_METRICS` in their order, then the extra bands (``band_<name>``, peak in MW);
    only the rows ``keep(row)`` accepts (the value is read only for those)."""
    for limit_key, metric_key in LIMIT_METRICS.items():
        limit = getattr(spec, limit_key)
        if limit is not None and keep(limit_key):
            yield limit_key, pcc[metric_key], limit, LIMIT_UNITS[limit_key]
    for b in spec.bands:
        row = f"band_{b.name}"
        if keep(row):
            yield row, pcc["band_peaks_mw"][b.name], b.max_peak_mw, "mw"


def compliance(pcc: dict, spec: "SpecConfig", undecided=()) -> dict:
    """One bool per spec limit that is set and decided (keyed by the limit's name),
    ``all_decided`` and ``compliant``.

    A limit holds when metric ≤ limit + :data:`COMPLIANCE_ABS_TOL`. Extra spectral bands give
    rows ``band_<name>``. A limit named in ``undecided`` (one the data cannot decide, e.g. a
    window swing under a 1-s-averaged trace) is not a row: ``all_decided`` is then false and
    ``compliant`` speaks for the decided rows only (:func:`verdict_text` says both).
    """
    skip = set(undecided)
    rows: dict[str, bool] = {row: bool(value <= limit + COMPLIANCE_ABS_TOL)
                             for row, value, limit, _ in _limits(pcc, spec, lambda row: row not in skip)}
    ok = all(rows.values())
    rows["all_decided"] = not skip
    rows["compliant"] = ok
    return rows


#: Keys of a ``compliance`` block that are not limit rows (``margins``: :func:`limit_margins`).
VERDICT_KEYS = ("all_decided", "compliant", "margins")


def limit_rows(comp: dict) -> dict:
    """The limit rows of a ``compliance`` block (without ``all_decided`` / ``compliant``)."""
    return {k: v for k, v in comp.items() if k not in VERDICT_KEYS}


def verdict_text(comp: dict, undecided=()) -> str:
    """The verdict in words, as the CLI line and the report header say it.

    ``yes`` / ``no (failing: a, b)``; with limits the data cannot decide, ``cannot judge c``
    beside the decided ones (``yes on a; cannot judge c``), never a bare ``yes``.
    """
    rows = limit_rows(comp)
    failing = [k for k, v in rows.items() if not v]
    und = sorted(undecided)
    if not und:
        return "yes" if comp["compliant"] else f"no (failing: {', '.join(failing)})"
    judge = f"cannot judge {', '.join(und)}"
    if not rows:
        return f"{judge} (no limit the data can decide)"
    if comp["compliant"]:
        return f"yes on {', '.join(rows)}; {judge}"
    return f"no (failing: {', '.join(failing)}); {judge}"


def compliance_margins(pcc: dict, spec: "SpecConfig", undecided=()) -> dict:
    """Relative margin 1 − metric / limit of every set and decided limit (negative = violated). [frac]"""
    skip = set(undecided)
    return {row: 1.0 - value / limit for row, value, limit, _ in _limits(pcc, spec, lambda row: row not in skip)}


#: How a unit suffix reads in text.
UNIT_TEXT = {"mw_per_s": "MW/s", "mw_per_min": "MW/min", "mw": "MW", "frac": "frac", "pu": "pu",
             "per_year": "1/yr"}


def _margin_entry(value: float, limit: float, unit: str) -> dict:
    return {f"value_{unit}": float(value), f"limit_{unit}": float(limit), f"margin_{unit}": float(limit - value)}


def limit_margins(metrics: dict, spec: "SpecConfig", extra: dict | None = None) -> dict:
    """``compliance.margins``: per limit row of ``metrics['compliance']`` that has a number,
    ``{value_<unit>, limit_<unit>, margin_<unit>}`` with margin = limit − value (negative:
    violated by that much) in the limit's unit (:data:`LIMIT_UNITS`; a band's peak in MW).
    ``extra``: further rows ``{row: (value, limit, unit)}`` (the grid-impact limits:
    :func:`facility.cosim.blocks.grid_impact_margins`). Rows without a number (ride-through's
    yes/no) have none.

    Examples
    --------
    >>> _margin_entry(9.5, 10.0, "mw")
    {'value_mw': 9.5, 'limit_mw': 10.0, 'margin_mw': 0.5}
    """
    rows = limit_rows(metrics["compliance"])
    out = {row: _margin_entry(value, limit, unit)
           for row, value, limit, unit in _limits(metrics["pcc"], spec, rows.__contains__)}
    rt, rt_spec = metrics.get("ride_through") or {}, spec.ride_through
    if ("ride_through_max_load_loss_mw" in rows and rt_spec is not None
            and rt_spec.max_load_loss_mw is not None and "max_load_loss_mw" in rt):
        out["ride_through_max_load_loss_mw"] = _margin_entry(rt["max_load_loss_mw"], rt_spec.max_load_loss_mw, "mw")
    for row, (value, limit, unit) in (extra or {}).items():
        if row in rows:
            out[row] = _margin_entry(value, limit, unit)
    return out


def margin_of(entry: dict) -> tuple[float, float, float, str]:
    """``(value, limit, margin, unit text)`` of one ``compliance.margins`` entry."""
    unit = next(k for k in entry if k.startswith("value_"))[len("value_"):]
    return (entry[f"value_{unit}"], entry[f"limit_{unit}"], entry[f"margin_{unit}"],
            UNIT_TEXT.get(unit, unit))


def margins_text(comp: dict) -> str:
    """``max_window_swing_mw 9.98 of 10 MW (margin 0.0185 MW); ...`` of a compliance block
    ("" without margins)."""
    parts = []
    for row, entry in (comp.get("margins") or {}).items():
        v, lim, mg, unit = margin_of(entry)
        parts.append(f"{row} {v:.4g} of {lim:.4g} {unit} (margin {mg:.3g} {unit})")
    return "; ".join(parts)
