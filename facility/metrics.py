"""Metrics of a power time series, the energy account, and compliance with a utility spec.

The definitions are the public contract (docs/contract.md); they are restated here.

Every power function takes a uniformly sampled power series ``p_mw`` [MW] with step ``dt_s`` [s] and
compares instants inside the horizon only (nothing is assumed about P before t = 0). The
definitions do not depend on ``dt_s`` (``tests/test_metrics.py`` shows it):

* ``max_ramp_up_mw_per_s`` = max over t1 < t2 ≤ t1 + τ of (P(t2) − P(t1)) / τ, τ =
  ``spec.ramp_window_s``; ``max_ramp_down_mw_per_s`` the same for falls, reported positive.
* ``max_ramp_mw_per_min`` = the largest rise or fall of P within any 60 s window. [MW]
* ``max_window_swing_mw`` = max over t of (max − min of P on [t − window_s, t]). [MW]
* ``band_energy_frac`` = share of the AC energy of P (spectrum of P − mean P) in
  [band_min_hz, band_max_hz]; ``band_peak_mw`` = largest single-sided FFT-bin amplitude in
  that band; ``dominant_freq_hz`` = frequency of the largest bin at or above band_min_hz.
* ``dynamic_range_mw`` = max − min of P over the horizon (the paper's dynamic power range).

On the sample grid a window of τ seconds spans ``k = floor(τ / dt_s)`` steps, i.e. the
samples ``P[j-k] … P[j]``.

Energy account (``metrics.json`` → ``energy``, :func:`energy_metrics`), every sample held for
one step (:func:`energy_mwh`):

* ``raw_mwh`` = energy at the PCC with every mitigation off; ``pcc_mwh`` = energy at the PCC.
* ``storage_net_charge_mwh`` = Σ_s ΔE_s, ΔE_s = E_s(end) − E_s(0) the change of storage s's
  *stored* energy over the horizon (+ = it ended fuller). [MWh]
* ``storage_restore_mwh`` = Σ_s R_s, the AC energy at the storage terminals that brings every
  storage back to its initial stored energy, at its own efficiencies:
  R_s = −ΔE_s / η_c,s when ΔE_s < 0 (the grid must recharge what the run took from the
  initial charge, paying the charging loss), R_s = −ΔE_s · η_d,s when ΔE_s > 0 (the surplus is
  worth what it can deliver back, after the discharging loss). A full round trip of the
  energy the storage lent thus costs 1/(η_c η_d) of it. Network losses of the refill are
  not included. [MWh]
* ``pcc_restored_mwh`` = ``pcc_mwh`` + ``storage_restore_mwh``: the PCC energy of the same run
  had every storage ended where it started. [MWh]
* ``energy_overhead_frac`` = ``pcc_restored_mwh`` / ``raw_mwh`` − 1: burned GPU floor and
  firefly energy, storage conversion and self-discharge losses, the UPS path and the network
  losses' change — never energy borrowed from a storage's initial charge (a run that ends with
  its storages emptier is charged for refilling them, one that ends fuller is credited what
  the surplus can return). Negative only when less energy is really drawn (a power cap). [frac]
* ``energy_overhead_uncorrected_frac`` = ``pcc_mwh`` / ``raw_mwh`` − 1, the figure without the
  storage correction; the two agree when every storage ends at its initial SoC (what the
  optimizer's default ``terminal_soc = "at_least_initial"`` asks for). [frac]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from facility.config.schema import SpecConfig

__all__ = [
    "COMPLIANCE_ABS_TOL",
    "window_steps",
    "rolling_min_max",
    "max_ramp_mw_per_s",
    "max_ramp_mw_per_min",
    "max_window_swing_mw",
    "dynamic_range_mw",
    "spectrum",
    "band_energy_frac",
    "band_peak_mw",
    "dominant_freq_hz",
    "energy_mwh",
    "storage_restore_mwh",
    "energy_metrics",
    "power_metrics",
    "compliance",
]

#: Absolute tolerance of every compliance comparison, so that a limit met with equality by the
#: optimizer is not failed by floating-point rounding. [MW, MW/s, frac]
COMPLIANCE_ABS_TOL = 1e-6


def window_steps(window_s: float, dt_s: float) -> int:
    """Number of steps k a window of ``window_s`` spans on a grid of ``dt_s``: floor(window/dt).

    Parameters
    ----------
    window_s : float
        Window length. [s]
    dt_s : float
        Time step. [s]

    Returns
    -------
    int
        k ≥ 1 (a window shorter than one step still compares neighbouring samples).
    """
    return max(1, int(np.floor(window_s / dt_s + 1e-9)))


def rolling_min_max(p_mw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Trailing minimum and maximum of P over the samples ``P[j-k] … P[j]`` (clipped at 0).

    O(N) regardless of k (pandas' monotone-deque rolling extrema).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Rolling minimum and maximum, both shape (N,). [MW]
    """
    s = pd.Series(np.asarray(p_mw, dtype=float))
    r = s.rolling(k + 1, min_periods=1)
    return r.min().to_numpy(), r.max().to_numpy()


def max_ramp_mw_per_s(p_mw: np.ndarray, dt_s: float, window_s: float = 1.0) -> tuple[float, float]:
    """Largest rise and fall of P within any window τ, divided by τ.

    Notes
    -----
    up = max_{t1 < t2 ≤ t1 + τ} (P(t2) − P(t1)) / τ,
    down = max_{t1 < t2 ≤ t1 + τ} (P(t1) − P(t2)) / τ. Not a lag difference P(t) − P(t − τ),
    which is blind to oscillations at multiples of 1/τ.

    Parameters
    ----------
    p_mw : array-like
        Power. [MW]
    dt_s : float
        Time step. [s]
    window_s : float
        τ, ``spec.ramp_window_s``. [s]

    Returns
    -------
    (float, float)
        Ramp up and ramp down, both ≥ 0. [MW/s]
    """
    p = np.asarray(p_mw, dtype=float)
    if p.size < 2:
        return 0.0, 0.0
    lo, hi = rolling_min_max(p, window_steps(window_s, dt_s))
    return float(np.max(p - lo)) / window_s, float(np.max(hi - p)) / window_s


def max_window_swing_mw(p_mw: np.ndarray, dt_s: float, window_s: float) -> float:
    """max over t of (max − min of P on [t − window_s, t]), inside the horizon. [MW]"""
    p = np.asarray(p_mw, dtype=float)
    if p.size < 2:
        return 0.0
    lo, hi = rolling_min_max(p, window_steps(window_s, dt_s))
    return float(np.max(hi - lo))


def max_ramp_mw_per_min(p_mw: np.ndarray, dt_s: float) -> float:
    """Largest rise or fall of P within any 60 s window. [MW]

    Equal to :func:`max_window_swing_mw` with a 60 s window: any two instants at most 60 s
    apart lie in one trailing window, and a window's max − min is such a pair.
    """
    return max_window_swing_mw(p_mw, dt_s, 60.0)


def dynamic_range_mw(p_mw: np.ndarray) -> float:
    """max − min of P over the horizon. [MW]"""
    p = np.asarray(p_mw, dtype=float)
    return float(p.max() - p.min()) if p.size else 0.0


def spectrum(p_mw: np.ndarray, dt_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Single-sided spectrum of P − mean(P).

    Returns
    -------
    f_hz : numpy.ndarray
        Bin frequencies k / (N dt). [Hz]
    amp_mw : numpy.ndarray
        Single-sided amplitude: 2|X_k|/N (|X_k|/N at DC and Nyquist); a sinusoid of amplitude A
        on a bin reads A. [MW]
    energy : numpy.ndarray
        Share of the AC energy in each bin (sums to 1 unless P is constant). [frac]
    """
    p = np.asarray(p_mw, dtype=float)
    n = p.size
    x = np.fft.rfft(p - p.mean())
    f = np.fft.rfftfreq(n, dt_s)
    mag2 = np.abs(x) ** 2
    weight = np.full(mag2.shape, 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[-1] = 1.0
    amp = np.sqrt(mag2) * weight / n
    e = mag2 * weight
    e[0] = 0.0
    total = e.sum()
    energy = e / total if total > 0 else np.zeros_like(e)
    return f, amp, energy


def _band_mask(f_hz: np.ndarray, min_hz: float, max_hz: float) -> np.ndarray:
    return (f_hz >= min_hz - 1e-12) & (f_hz <= max_hz + 1e-12)


def _peak_in(f_hz: np.ndarray, amp_mw: np.ndarray, min_hz: float, max_hz: float) -> float:
    m = _band_mask(f_hz, min_hz, max_hz)
    return float(amp_mw[m].max()) if m.any() else 0.0


def _dominant(f_hz: np.ndarray, amp_mw: np.ndarray, min_hz: float) -> float:
    m = f_hz >= min_hz - 1e-12
    if not m.any() or amp_mw[m].max() <= 0:
        return 0.0
    return float(f_hz[m][np.argmax(amp_mw[m])])


def band_energy_frac(p_mw: np.ndarray, dt_s: float, min_hz: float, max_hz: float) -> float:
    """Share of the AC energy of P in [min_hz, max_hz]. [frac]"""
    f, _, energy = spectrum(p_mw, dt_s)
    return float(energy[_band_mask(f, min_hz, max_hz)].sum())


def band_peak_mw(p_mw: np.ndarray, dt_s: float, min_hz: float, max_hz: float) -> float:
    """Largest single-sided FFT-bin amplitude in [min_hz, max_hz] (the paper's FFT-bin monitor). [MW]"""
    f, amp, _ = spectrum(p_mw, dt_s)
    return _peak_in(f, amp, min_hz, max_hz)


def dominant_freq_hz(p_mw: np.ndarray, dt_s: float, min_hz: float = 0.1) -> float:
    """Frequency of the largest spectral bin at or above ``min_hz`` (0 for a constant P). [Hz]"""
    f, amp, _ = spectrum(p_mw, dt_s)
    return _dominant(f, amp, min_hz)


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


#: spec limit key -> metric key it bounds.
_LIMITS = {
    "max_ramp_up_mw_per_s": "max_ramp_up_mw_per_s",
    "max_ramp_down_mw_per_s": "max_ramp_down_mw_per_s",
    "max_ramp_mw_per_min": "max_ramp_mw_per_min",
    "max_window_swing_mw": "max_window_swing_mw",
    "max_band_energy_frac": "band_energy_frac",
    "max_band_peak_mw": "band_peak_mw",
    "max_dynamic_range_mw": "dynamic_range_mw",
}


def compliance(pcc: dict, spec: "SpecConfig", undecided=()) -> dict:
    """One bool per spec limit that is set and decided (keyed by the limit's name),
    ``all_decided`` and ``compliant``.

    A limit holds when metric ≤ limit + :data:`COMPLIANCE_ABS_TOL`. Extra spectral bands give
    rows ``band_<name>``. A limit named in ``undecided`` (one the data cannot decide, e.g. a
    window swing under a 1-s-averaged trace) is not a row: ``all_decided`` is then false and
    ``compliant`` speaks for the decided rows only (:func:`verdict_text` says both).
    """
    skip = set(undecided)
    rows: dict[str, bool] = {}
    for limit_key, metric_key in _LIMITS.items():
        limit = getattr(spec, limit_key)
        if limit is not None and limit_key not in skip:
            rows[limit_key] = bool(pcc[metric_key] <= limit + COMPLIANCE_ABS_TOL)
    for b in spec.bands:
        if f"band_{b.name}" not in skip:
            rows[f"band_{b.name}"] = bool(pcc["band_peaks_mw"][b.name] <= b.max_peak_mw + COMPLIANCE_ABS_TOL)
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
    out = {}
    for limit_key, metric_key in _LIMITS.items():
        limit = getattr(spec, limit_key)
        if limit is not None and limit_key not in skip:
            out[limit_key] = 1.0 - pcc[metric_key] / limit
    for b in spec.bands:
        if f"band_{b.name}" not in skip:
            out[f"band_{b.name}"] = 1.0 - pcc["band_peaks_mw"][b.name] / b.max_peak_mw
    return out


#: The unit of each spec limit, as the suffix of its ``compliance.margins`` keys.
LIMIT_UNITS = {"max_ramp_up_mw_per_s": "mw_per_s", "max_ramp_down_mw_per_s": "mw_per_s",
               "max_ramp_mw_per_min": "mw_per_min", "max_window_swing_mw": "mw",
               "max_band_energy_frac": "frac", "max_band_peak_mw": "mw", "max_dynamic_range_mw": "mw"}
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
    pcc = metrics["pcc"]
    out = {}
    for limit_key, metric_key in _LIMITS.items():
        if limit_key in rows:
            out[limit_key] = _margin_entry(pcc[metric_key], getattr(spec, limit_key), LIMIT_UNITS[limit_key])
    for b in spec.bands:
        if f"band_{b.name}" in rows:
            out[f"band_{b.name}"] = _margin_entry(pcc["band_peaks_mw"][b.name], b.max_peak_mw, "mw")
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


__all__ += ["compliance_margins", "VERDICT_KEYS", "limit_rows", "verdict_text", "limit_margins",
            "margin_of", "margins_text", "LIMIT_UNITS"]
