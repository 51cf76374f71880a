"""PNG plots of a run (matplotlib, Agg backend): power, zoom, spectrum, state of charge."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from facility.metrics import spectrum  # noqa: E402

if TYPE_CHECKING:
    from facility.results import Results

__all__ = ["envelope", "write_plots"]

_MAX_POINTS = 4000


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


def _plot_series(ax, t, y, label, color, alpha=0.35, n_bins=_MAX_POINTS // 2):
    tt, lo, hi = envelope(t, y, n_bins)
    if lo is hi:
        ax.plot(tt, y, color=color, lw=0.8, label=label)
    else:
        ax.fill_between(tt, lo, hi, color=color, alpha=alpha, lw=0, label=f"{label} (min–max)")


def _finish(fig, ax, path: Path, title: str, xlabel: str, ylabel: str, log_grid: bool = False) -> None:
    """Label, legend, grid, save as PNG and close one figure."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3, which="both" if log_grid else "major")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _zoom_slice(res: "Results") -> slice:
    ts = res.timeseries
    dt = res.scenario.time.dt_s
    horizon = res.scenario.time.horizon_s
    periods = [j.period_s or 1.0 for j in res.scenario.jobs]
    span = min(horizon, max(10.0, 5 * max(periods)))
    start = min(max(0.0, 0.25 * horizon), horizon - span)
    i0 = int(start / dt)
    return slice(i0, min(len(ts), i0 + int(span / dt) + 1))


def write_plots(res: "Results", out: Path) -> list[tuple[str, str]]:
    """Write the PNGs into ``out``; return ``[(file name, caption), ...]``."""
    ts = res.timeseries
    t = ts["t_s"].to_numpy()
    raw = ts["p_raw_pcc_mw"].to_numpy()
    pcc = ts["p_pcc_mw"].to_numpy()
    spec = res.scenario.spec
    images = []
    # envelope bins of at least two iterations, so the band shows the swing, not stripes
    period = max(j.period_s or 1.0 for j in res.scenario.jobs)
    n_bins = int(np.clip(res.scenario.time.horizon_s / (2.0 * period), 50, _MAX_POINTS // 2))

    fig, ax = plt.subplots(figsize=(10, 4))
    _plot_series(ax, t, raw, "raw PCC", "tab:red", n_bins=n_bins)
    _plot_series(ax, t, pcc, "PCC (mitigated)", "tab:blue", alpha=0.6, n_bins=n_bins)
    if "gpu_engaged" in ts and ts["gpu_engaged"].any() and res.scenario.controller.codesign:
        eng = ts["gpu_engaged"].to_numpy()
        ax.fill_between(t, 0, 1, where=eng, transform=ax.get_xaxis_transform(), color="tab:orange",
                        alpha=0.12, lw=0, label="GPU controls engaged")
    _finish(fig, ax, out / "power.png", "Power at the point of common coupling: raw vs mitigated",
            "time [s]", "power [MW]")
    images.append(("power.png", "PCC power over the horizon, raw (every mitigation off) and mitigated."))

    sl = _zoom_slice(res)
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.plot(t[sl], raw[sl], color="tab:red", lw=0.9, label="raw PCC")
    ax.plot(t[sl], ts["p_load_mw"].to_numpy()[sl], color="tab:green", lw=0.8, ls="--", label="site load after GPU controls (before network losses)")
    ax.plot(t[sl], pcc[sl], color="tab:blue", lw=1.2, label="PCC (mitigated)")
    _finish(fig, ax, out / "zoom.png", "Zoom on a few iterations", "time [s]", "power [MW]")
    images.append(("zoom.png", "A few iterations: raw PCC, site load after GPU controls and mitigated PCC."))

    dt = res.scenario.time.dt_s
    fig, ax = plt.subplots(figsize=(10, 4))
    for y, label, color in ((raw, "raw PCC", "tab:red"), (pcc, "PCC (mitigated)", "tab:blue")):
        f, amp, _ = spectrum(y, dt)
        keep = f > 0
        ax.loglog(f[keep], np.maximum(amp[keep], 1e-6), color=color, lw=0.7, label=label)
    ax.axvspan(spec.band_min_hz, min(spec.band_max_hz, 0.5 / dt), color="tab:orange", alpha=0.15,
               label=f"spec band {spec.band_min_hz:g}–{spec.band_max_hz:g} Hz")
    if spec.max_band_peak_mw:
        ax.axhline(spec.max_band_peak_mw, color="k", ls=":", lw=1, label="max_band_peak_mw")
    _finish(fig, ax, out / "spectrum.png", "Spectrum of PCC power (single-sided amplitude)",
            "frequency [Hz]", "FFT-bin amplitude [MW]", log_grid=True)
    images.append(("spectrum.png", "Single-sided FFT amplitude of the PCC power with the spec band shaded."))

    soc_cols = [c for c in ts.columns if c.startswith("soc_")]
    if soc_cols:
        fig, axes = plt.subplots(2, 1, figsize=(10, 5.5), sharex=True)
        for c in soc_cols:
            name = c[len("soc_"):-len("_frac")]
            tt, lo, hi = envelope(t, ts[c].to_numpy())
            axes[0].fill_between(tt, lo, hi, alpha=0.5, lw=0.5, label=name)
            tt, lo, hi = envelope(t, ts[f"p_{name}_mw"].to_numpy())
            axes[1].fill_between(tt, lo, hi, alpha=0.5, lw=0.5, label=name)
        axes[0].set_ylabel("state of charge [frac]")
        axes[1].set_ylabel("storage power [MW]\n(+ = charging)")
        axes[1].set_xlabel("time [s]")
        for a in axes:
            a.grid(alpha=0.3)
            a.legend(loc="best", fontsize=8)
        axes[0].set_title("Storage state of charge and power")
        fig.tight_layout()
        fig.savefig(out / "storage.png", dpi=110)
        plt.close(fig)
        images.append(("storage.png", "State of charge and power of each storage."))
    return images
