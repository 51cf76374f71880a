"""PNG plots of a run (matplotlib, Agg backend), each quantity drawn against its limit.

* ``power.png``: PCC power, raw and mitigated (GPU-controls engagement shaded);
* ``limits.png``: the quantities whose maxima are the spec metrics, per instant, against the
  limits that are set: rolling-window swing (max − min of P on [t − window_s, t]), ramp up /
  down (largest rise / fall within the trailing ``ramp_window_s``, divided by it) and the
  60 s swing of the per-minute ramp; so the peak of each curve is the metric of
  ``metrics.json`` and a curve above its dashed line is a violation;
* ``zoom.png``: a few iterations;
* ``spectrum.png``: single-sided FFT amplitude on an axis that covers the spec band, the band
  shaded, the FFT-bin cap (``max_band_peak_mw``, extra ``bands``) drawn over the band, the
  part above the Nyquist frequency of ``dt_s`` marked as not resolved;
* ``storage.png``: per storage, power with ±p_rated and the network's headroom, and SoC with
  its bounds, as lines (min / max per bin on long horizons, so slow changes stay visible);
* ``electrical.png``: PCC / MV / LV voltages against their bands and every equipment loading
  against its limit;
* ``grid_impact.png`` (``[grid_impact]`` enabled): the PCC spectrum under the grid-side
  models' response curves, and the shaft torque at the worst torsional mode
  (:mod:`facility.report.grid_impact_plots`).

Long series are reduced to per-bin minimum and maximum (:func:`envelope`), never subsampled,
so fast swings are not aliased away.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from facility.metrics import rolling_min_max, spectrum, window_steps  # noqa: E402
from facility.report.grid_impact_plots import plot_grid_impact  # noqa: E402
from facility.report.ride_through_plot import plot_ride_through  # noqa: E402

if TYPE_CHECKING:
    from facility.cosim.results import Results

__all__ = ["envelope", "write_plots", "rolling_swing_mw", "rolling_ramp_mw_per_s", "spectrum_axis_hz"]

_MAX_POINTS = 4000
_LIMIT = dict(color="k", ls="--", lw=1.1)


def envelope(t: np.ndarray, y: np.ndarray, n_bins: int = _MAX_POINTS // 2):
    """Min/max envelope of a long series for plotting (no aliasing of fast swings).

    Returns ``(t, lo, hi)`` with one point per bin; short series come back unchanged.
    """
    if y.size <= 2 * n_bins:
        return t, y, y
    n = (y.size // n_bins) * n_bins
    yy = y[:n].reshape(n_bins, -1)
    tt = t[:n].reshape(n_bins, -1)
    return tt.mean(axis=1), yy.min(axis=1), yy.max(axis=1)


def rolling_swing_mw(p_mw: np.ndarray, dt_s: float, window_s: float) -> np.ndarray:
    """max − min of P over the trailing window at every step; its maximum is
    :func:`facility.metrics.max_window_swing_mw`. [MW]"""
    lo, hi = rolling_min_max(np.asarray(p_mw, dtype=float), window_steps(window_s, dt_s))
    return hi - lo


def rolling_ramp_mw_per_s(p_mw: np.ndarray, dt_s: float, window_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Largest rise and fall into every step within the trailing ``window_s``, divided by it;
    their maxima are the ramp metrics of :func:`facility.metrics.max_ramp_mw_per_s`. [MW/s]"""
    p = np.asarray(p_mw, dtype=float)
    lo, hi = rolling_min_max(p, window_steps(window_s, dt_s))
    return (p - lo) / window_s, (hi - p) / window_s


def _line(ax, t, y, label, color, lw=0.9, n_bins=_MAX_POINTS // 2, ls="-", mode="band"):
    """A series as a line. On long horizons, ``mode`` "band": its per-bin min and max as two
    thin lines with the band between them lightly filled (a slowly varying series stays a
    visible line); "max" / "min": only the per-bin maximum / minimum (for quantities whose
    peak is what a limit bounds)."""
    tt, lo, hi = envelope(t, np.asarray(y, dtype=float), n_bins)
    if lo is hi:
        ax.plot(tt, lo, color=color, lw=lw, ls=ls, label=label)
    elif mode == "max":
        ax.plot(tt, hi, color=color, lw=lw, ls=ls, label=f"{label} (max per bin)")
    elif mode == "min":
        ax.plot(tt, lo, color=color, lw=lw, ls=ls, label=f"{label} (min per bin)")
    else:
        ax.fill_between(tt, lo, hi, color=color, alpha=0.25, lw=0)
        ax.plot(tt, hi, color=color, lw=lw * 0.8, ls=ls, label=f"{label} (min/max per bin)")
        ax.plot(tt, lo, color=color, lw=lw * 0.8, ls=ls)


def _limit_line(ax, value, label, color="k"):
    if value is not None:
        ax.axhline(value, **{**_LIMIT, "color": color}, label=label)


def _style(ax, ylabel: str, title: str | None = None, log_grid: bool = False) -> None:
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    # beside the axes, never over the data (``loc="best"`` still covers a dense series)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7)
    ax.grid(alpha=0.3, which="both" if log_grid else "major")


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _finish(fig, ax, path: Path, title: str, xlabel: str, ylabel: str, log_grid: bool = False) -> None:
    """Label, legend, grid, save as PNG and close one figure."""
    ax.set_xlabel(xlabel)
    _style(ax, ylabel, title, log_grid)
    _save(fig, path)


def _zoom_slice(res: "Results") -> slice:
    ts = res.timeseries
    dt = res.scenario.time.dt_s
    horizon = res.scenario.time.horizon_s
    periods = [j.period_s or 1.0 for j in res.scenario.jobs]
    span = min(horizon, max(10.0, 5 * max(periods)))
    start = min(max(0.0, 0.25 * horizon), horizon - span)
    i0 = int(start / dt)
    return slice(i0, min(len(ts), i0 + int(span / dt) + 1))


def _n_bins(res: "Results") -> int:
    # envelope bins of at least two iterations, so the band shows the swing, not stripes
    period = max(j.period_s or 1.0 for j in res.scenario.jobs)
    return int(np.clip(res.scenario.time.horizon_s / (2.0 * period), 50, _MAX_POINTS // 2))


def _plot_power(res, t, raw, pcc, n_bins, out) -> tuple[str, str]:
    ts = res.timeseries
    fig, ax = plt.subplots(figsize=(10, 4))
    _line(ax, t, raw, "raw PCC", "tab:red", n_bins=n_bins)
    _line(ax, t, pcc, "PCC (mitigated)", "tab:blue", lw=1.1, n_bins=n_bins)
    if "gpu_engaged" in ts and ts["gpu_engaged"].any() and res.scenario.controller.codesign:
        eng = ts["gpu_engaged"].to_numpy()
        ax.fill_between(t, 0, 1, where=eng, transform=ax.get_xaxis_transform(), color="tab:orange",
                        alpha=0.12, lw=0, label="GPU controls engaged")
    _finish(fig, ax, out / "power.png", "Power at the point of common coupling: raw vs mitigated",
            "time [s]", "power [MW]")
    return ("power.png", "PCC power over the horizon, raw (every mitigation off) and mitigated.")


def _zoom_to_limit(ax, limit, curves) -> None:
    """Scale the y axis to the limit and the mitigated curve (the last), so the comparison that
    matters is readable; a raw curve far above goes off scale with a note of its peak."""
    if limit is None:
        return
    top = 1.35 * max(limit, float(np.max(curves[-1])))
    ax.set_ylim(0.0, top)
    peak = float(np.max(curves[0]))
    if peak > top:
        ax.text(0.99, 0.97, f"raw PCC off scale (peak {peak:.4g} MW)", transform=ax.transAxes, ha="right",
                va="top", fontsize=8, color="tab:red")


def _plot_limits(res, t, raw, pcc, n_bins, out) -> tuple[str, str]:
    spec, dt = res.scenario.spec, res.scenario.time.dt_s
    panels = ["swing", "ramp"] + (["minute"] if spec.max_ramp_mw_per_min is not None else [])
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 2.9 * len(panels)), sharex=True, squeeze=False)
    axes = axes[:, 0]
    for ax, what in zip(axes, panels):
        if what == "swing":
            curves = [rolling_swing_mw(y, dt, spec.window_s) for y in (raw, pcc)]
            for y, label, c in zip(curves, ("raw PCC", "PCC"), ("tab:red", "tab:blue")):
                _line(ax, t, y, label, c, n_bins=n_bins, mode="max")
            _limit_line(ax, spec.max_window_swing_mw, f"max_window_swing_mw = {spec.max_window_swing_mw:g} MW"
                        if spec.max_window_swing_mw is not None else None)
            _zoom_to_limit(ax, spec.max_window_swing_mw, curves)
            _style(ax, f"swing over {spec.window_s:g} s [MW]",
                   f"Rolling-window swing: max − min of P on [t − {spec.window_s:g} s, t]")
        elif what == "ramp":
            up, down = rolling_ramp_mw_per_s(pcc, dt, spec.ramp_window_s)
            _line(ax, t, up, "PCC ramp up", "tab:blue", n_bins=n_bins, mode="max")
            _line(ax, t, -down, "PCC ramp down (drawn negative)", "tab:cyan", n_bins=n_bins, mode="min")
            if spec.max_ramp_up_mw_per_s is not None:
                _limit_line(ax, spec.max_ramp_up_mw_per_s, f"max_ramp_up_mw_per_s = {spec.max_ramp_up_mw_per_s:g}")
            if spec.max_ramp_down_mw_per_s is not None:
                _limit_line(ax, -spec.max_ramp_down_mw_per_s,
                            f"max_ramp_down_mw_per_s = {spec.max_ramp_down_mw_per_s:g} (drawn negative)", "0.35")
            _style(ax, "ramp [MW/s]", f"Ramp: largest rise / fall into t within {spec.ramp_window_s:g} s, "
                                      f"divided by {spec.ramp_window_s:g} s")
        else:
            curves = [rolling_swing_mw(y, dt, 60.0) for y in (raw, pcc)]
            for y, label, c in zip(curves, ("raw PCC", "PCC"), ("tab:red", "tab:blue")):
                _line(ax, t, y, label, c, n_bins=n_bins, mode="max")
            _limit_line(ax, spec.max_ramp_mw_per_min, f"max_ramp_mw_per_min = {spec.max_ramp_mw_per_min:g} MW")
            _zoom_to_limit(ax, spec.max_ramp_mw_per_min, curves)
            _style(ax, "change within 60 s [MW]", "Per-minute ramp: largest rise or fall within any 60 s")
    if spec.max_dynamic_range_mw is not None:
        dr = float(pcc.max() - pcc.min())
        axes[0].text(0.01, 0.97, f"dynamic range {dr:.4g} MW (max_dynamic_range_mw = {spec.max_dynamic_range_mw:g})",
                     transform=axes[0].transAxes, va="top", fontsize=8)
    axes[-1].set_xlabel("time [s]")
    _save(fig, out / "limits.png")
    return ("limits.png", "The spec quantities per instant (their peaks are the metrics) against the limits "
                          "that are set (dashed): rolling-window swing, ramp up/down and per-minute ramp.")


def spectrum_axis_hz(spec, dt_s: float, f_first_hz: float) -> tuple[float, float]:
    """Frequency axis of the spectrum plot: from the first bin (or below the band) to past
    every spec band's upper edge, even above the Nyquist frequency 1 / (2 dt_s). [Hz]"""
    top = max([spec.band_max_hz] + [b.max_hz for b in spec.bands])
    return min(f_first_hz, spec.band_min_hz / 2), max(0.5 / dt_s, 1.5 * top)


def _plot_spectrum(res, raw, pcc, out) -> tuple[str, str]:
    spec, dt = res.scenario.spec, res.scenario.time.dt_s
    nyq = 0.5 / dt
    fig, ax = plt.subplots(figsize=(10, 4))
    f_lo = None
    for y, label, color in ((raw, "raw PCC", "tab:red"), (pcc, "PCC (mitigated)", "tab:blue")):
        f, amp, _ = spectrum(y, dt)
        keep = f > 0
        f_lo = f[keep][0] if keep.any() else spec.band_min_hz / 10
        a = amp[keep]
        # bins at round-off level (a square wave's even harmonics) are left out, not floored
        a = np.where(a > 1e-9 * max(float(a.max(initial=0.0)), 1e-12), a, np.nan)
        ax.loglog(f[keep], a, color=color, lw=0.7, label=label)
    bands = [(spec.band_min_hz, spec.band_max_hz, spec.max_band_peak_mw, "max_band_peak_mw")]
    bands += [(b.min_hz, b.max_hz, b.max_peak_mw, f"band {b.name}") for b in spec.bands]
    f_lo, f_hi = spectrum_axis_hz(spec, dt, f_lo)
    band_limited = has_band_limit(spec)
    if band_limited:   # shaded only where a limit applies to it
        ax.axvspan(spec.band_min_hz, spec.band_max_hz, color="tab:orange", alpha=0.15,
                   label=f"spec band {spec.band_min_hz:g}–{spec.band_max_hz:g} Hz")
    for k, (lo, hi, cap, name) in enumerate(bands):
        if cap is not None:
            ax.hlines(cap, lo, hi, colors="k" if k == 0 else f"C{k + 3}", linestyles="--", lw=1.3,
                      label=f"{name} = {cap:g} MW ({lo:g}–{hi:g} Hz)")
    if f_hi > nyq:
        ax.axvspan(nyq, f_hi, color="0.5", alpha=0.25, hatch="//", lw=0,
                   label=f"not resolved at dt_s = {dt:g} s (above {nyq:g} Hz)")
    ax.set_xlim(f_lo, f_hi)
    if spec.max_band_energy_frac is not None:
        e = res.metrics["pcc"]["band_energy_frac"]
        ax.text(0.01, 0.03, f"PCC band energy share {e:.3g} (max_band_energy_frac = {spec.max_band_energy_frac:g})",
                transform=ax.transAxes, fontsize=8)
    _finish(fig, ax, out / "spectrum.png", "Spectrum of PCC power (single-sided amplitude)",
            "frequency [Hz]", "FFT-bin amplitude [MW]", log_grid=True)
    caps = spec.max_band_peak_mw is not None or bool(spec.bands)
    return ("spectrum.png", "Single-sided FFT amplitude of the PCC power"
                            + ("; the spec band shaded" if band_limited else " (the spec sets no band limit)")
                            + (", the FFT-bin cap dashed over its band." if caps else
                               ("; no FFT-bin cap is set." if band_limited else ".")))


def has_band_limit(spec) -> bool:
    """Whether a limit applies to the spec band ``band_min_hz``–``band_max_hz`` (its energy
    share or its FFT-bin peak); only then does the spectrum plot shade it."""
    return spec.max_band_energy_frac is not None or spec.max_band_peak_mw is not None


def _storage_bounds(res, name: str) -> tuple[float, float, float]:
    """(p_rated_mw, min_soc_frac incl. the UPS reserve, max_soc_frac) of a storage."""
    cfg = res.scenario.storage_units().get(name)
    m = res.metrics.get("storage", {}).get(name, {})
    p_rated = m.get("p_rated_mw", getattr(cfg, "p_rated_mw", None))
    lo = (cfg.min_soc_frac + float(getattr(cfg, "reserve_frac", 0.0))) if cfg is not None else None
    return p_rated, lo, (cfg.max_soc_frac if cfg is not None else None)


def _plot_storage(res, t, n_bins, out) -> tuple[str, str] | None:
    ts = res.timeseries
    names = [c[len("soc_"):-len("_frac")] for c in ts.columns if c.startswith("soc_")]
    if not names:
        return None
    el = res.metrics.get("electrical", {})
    load = ts["p_load_mw"].to_numpy()
    fig, axes = plt.subplots(len(names), 2, figsize=(12, 3.0 * len(names)), sharex=True, squeeze=False)
    for row, name in enumerate(names):
        c = f"C{row}"
        p_rated, soc_lo, soc_hi = _storage_bounds(res, name)
        ax = axes[row, 0]
        _line(ax, t, ts[f"p_{name}_mw"].to_numpy(), f"{name} power", c, n_bins=n_bins)
        if p_rated is not None:
            ax.axhline(p_rated, **_LIMIT, label=f"±p_rated_mw = {p_rated:.4g} MW")
            ax.axhline(-p_rated, **_LIMIT)
        sec = name.split(".", 1)[0]     # a hybrid section's unit: its section's headroom
        cap = [el.get("site_capacity_mw")] + ([el.get("feeder_capacity_mw")] if sec in ("rack_storage", "ups") else [])
        cap = [x for x in cap if x is not None]
        if cap and res.scenario.grid.limit_storage and sec != "bess":
            head = min(cap) - load
            if np.min(head) < 1.5 * (p_rated or np.inf):
                _line(ax, t, head, "network headroom for charging", "0.35", lw=1.0, n_bins=n_bins, ls=":",
                      mode="min")
        ax.axhline(0.0, color="0.6", lw=0.5)
        if p_rated:
            ax.set_ylim(-1.15 * p_rated, 1.15 * p_rated)
        _style(ax, "power [MW]\n(+ = charging)", f"{name}: power")
        ax = axes[row, 1]
        _line(ax, t, ts[f"soc_{name}_frac"].to_numpy(), f"{name} SoC", c, n_bins=n_bins)
        if soc_lo is not None:
            ax.axhline(soc_lo, **_LIMIT, label=f"SoC bounds {soc_lo:g}–{soc_hi:g}")
            ax.axhline(soc_hi, **_LIMIT)
        ax.set_ylim(-0.02, 1.02)
        _style(ax, "state of charge [frac]", f"{name}: state of charge")
    for ax in axes[-1]:
        ax.set_xlabel("time [s]")
    _save(fig, out / "storage.png")
    return ("storage.png", "Power and state of charge of each storage against its rating, SoC bounds and "
                           "the network's headroom.")


def _plot_electrical(res, t, n_bins, out) -> tuple[str, str] | None:
    ts, g = res.timeseries, res.scenario.grid
    if not g.enabled or "vm_pcc_pu" not in ts:
        return None
    fig, axes = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    ax = axes[0]
    for col, label, c, mode in (("vm_pcc_pu", "PCC", "tab:blue", "min"),
                                ("vm_min_mv_pu", "lowest PCC/MV", "tab:purple", "min"),
                                ("vm_min_lv_pu", "lowest LV (UPS input)", "tab:red", "min"),
                                ("vm_max_lv_pu", "highest LV", "tab:orange", "max")):
        if col in ts:
            _line(ax, t, ts[col].to_numpy(), label, c, n_bins=n_bins, mode=mode)
    ax.axhline(g.min_vm_pu, **_LIMIT, label=f"PCC/MV band {g.min_vm_pu:g}–{g.max_vm_pu:g} pu")
    ax.axhline(g.max_vm_pu, **_LIMIT)
    ax.axhline(g.min_lv_vm_pu, **{**_LIMIT, "color": "tab:red", "ls": ":"},
               label=f"LV band {g.min_lv_vm_pu:g}–{g.max_lv_vm_pu:g} pu")
    ax.axhline(g.max_lv_vm_pu, **{**_LIMIT, "color": "tab:red", "ls": ":"})
    _style(ax, "voltage [pu]", "Voltages against their bands")
    ax = axes[1]
    for col, label, c in (("sub_trafo_loading_percent", "substation transformer", "tab:blue"),
                          ("lv_trafo_loading_percent", "feeder transformer (worst)", "tab:red"),
                          ("bess_trafo_loading_percent", "BESS transformer", "tab:green"),
                          ("ups_loading_percent", "UPS (worst)", "tab:orange")):
        if col in ts and (col != "bess_trafo_loading_percent" or ts[col].any()):
            _line(ax, t, ts[col].to_numpy(), label, c, n_bins=n_bins, mode="max")
    ax.axhline(g.max_trafo_loading_percent, **_LIMIT,
               label=f"max_trafo_loading_percent = {g.max_trafo_loading_percent:g} %")
    if g.max_ups_loading_percent != g.max_trafo_loading_percent:
        ax.axhline(g.max_ups_loading_percent, **{**_LIMIT, "color": "tab:orange"},
                   label=f"max_ups_loading_percent = {g.max_ups_loading_percent:g} %")
    ax.set_xlabel("time [s]")
    _style(ax, "loading [%]", "Equipment loading against its limit")
    _save(fig, out / "electrical.png")
    return ("electrical.png", "PCC, MV and LV voltages against their bands and every equipment loading against "
                              "its limit (grid.min_vm_pu … max_ups_loading_percent).")


def write_plots(res: "Results", out: Path) -> list[tuple[str, str]]:
    """Write the PNGs into ``out``; return ``[(file name, caption), ...]``."""
    ts = res.timeseries
    t = ts["t_s"].to_numpy()
    raw = ts["p_raw_pcc_mw"].to_numpy()
    pcc = ts["p_pcc_mw"].to_numpy()
    n_bins = _n_bins(res)
    images = [_plot_power(res, t, raw, pcc, n_bins, out), _plot_limits(res, t, raw, pcc, n_bins, out)]

    sl = _zoom_slice(res)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(t[sl], raw[sl], color="tab:red", lw=0.9, label="raw PCC")
    ax.plot(t[sl], ts["p_load_mw"].to_numpy()[sl], color="tab:green", lw=0.8, ls="--",
            label="site load after GPU controls (before network losses)")
    ax.plot(t[sl], pcc[sl], color="tab:blue", lw=1.2, label="PCC (mitigated)")
    _finish(fig, ax, out / "zoom.png", "Zoom on a few iterations", "time [s]", "power [MW]")
    images.append(("zoom.png", "A few iterations: raw PCC, site load after GPU controls and mitigated PCC."))

    images.append(_plot_spectrum(res, raw, pcc, out))
    for extra in (_plot_storage(res, t, n_bins, out), _plot_electrical(res, t, n_bins, out),
                  plot_ride_through(res, out)):
        if extra is not None:
            images.append(extra)
    if "grid_impact" in res.metrics:
        images.append(plot_grid_impact(res, raw, pcc, out))
    return images
