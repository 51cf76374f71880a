"""Report panel of a run with ``[[grid_events]]``: the PCC voltage against the spec's ride-through
curve, the PCC power with and without the events, and the UPS battery."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    from facility.cosim.results import Results

__all__ = ["curve_boundary", "plot_ride_through"]


def curve_boundary(rt) -> tuple[np.ndarray, np.ndarray]:
    """The curve as a step line from a sag's start: time [s] and the voltage [pu] down to which
    the load must stay connected until then (0 first, ``recovery_vm_pu`` after the longest band)."""
    edges = list(rt.band_max_vm_pu[1:]) + [0.0]
    pairs = sorted(zip(rt.band_min_ride_s, edges))  # (time, lower edge), by time
    t, v = [0.0], [0.0]
    level = 0.0
    for ride, _ in pairs:
        # up to `ride`, every band whose time is >= ride still binds: the lowest such edge
        level = min(e for r, e in pairs if r >= ride)
        t += [t[-1], ride]
        v += [level, level]
    t += [t[-1], t[-1] * 1.5 + 0.5]
    v += [rt.recovery_vm_pu, rt.recovery_vm_pu]
    return np.asarray(t[1:]), np.asarray(v[1:])


def plot_ride_through(res: "Results", out: Path) -> tuple[str, str] | None:
    """Write ``ride_through.png``; None for a run without grid events."""
    ts = res.timeseries
    sc = res.scenario
    if "vm_event_pu" not in ts or not sc.grid_events:
        return None
    t = ts["t_s"].to_numpy()
    dt = sc.time.dt_s
    starts = [ev.start_s for ev in sc.grid_events]
    low = np.flatnonzero(ts["vm_event_pu"].to_numpy() < 1.0)
    on = np.flatnonzero(ts["ups_on_battery"].to_numpy() | (ts["p_ups_supply_mw"].to_numpy() > 0))
    last = max([t[low[-1]] if low.size else 0.0] + [t[on[-1]] if on.size else 0.0])
    t0, t1 = max(0.0, min(starts) - 2.0), min(t[-1], last + 5.0)
    sl = slice(int(t0 / dt), int(t1 / dt) + 1)
    fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
    ax = axes[0]
    ax.plot(t[sl], ts["vm_event_pu"].to_numpy()[sl], color="tab:blue", lw=1.2, label="PCC voltage (grid events)")
    rt = sc.spec.ride_through
    if rt is not None:
        ct, cv = curve_boundary(rt)
        for i, s in enumerate(res.metrics.get("ride_through", {}).get("sags", {}).values()):
            ax.plot(s["start_s"] + ct, cv, color="k", ls="--", lw=1.0,
                    label="ride-through curve: stay connected above it" if i == 0 else None)
    ax.set_ylim(-0.03, 1.08)
    ax.set_ylabel("voltage [pu]")
    ax.set_title("Voltage against the ride-through curve")
    ax = axes[1]
    ref = ts["p_ref_pcc_mw"].to_numpy()
    ax.plot(t[sl], ref[sl], color="0.5", lw=0.9, label="PCC without the events")
    ax.plot(t[sl], ts["p_pcc_mw"].to_numpy()[sl], color="tab:red", lw=1.2, label="PCC with the events")
    if rt is not None and rt.recovery_frac is not None:
        ax.plot(t[sl], rt.recovery_frac * ref[sl], color="k", ls=":", lw=0.9,
                label=f"recovery target {rt.recovery_frac:g} x (within {rt.max_recovery_s:g} s)")
    ax.set_ylabel("power [MW]")
    ax.set_title("PCC power through the events and after")
    ax = axes[2]
    if "p_ups_mw" in ts:
        ax.plot(t[sl], ts["p_ups_mw"].to_numpy()[sl], color="tab:green", lw=1.1, label="UPS battery power (+ = charging)")
    ax.plot(t[sl], -ts["p_it_lost_mw"].to_numpy()[sl], color="tab:purple", lw=1.1, label="IT load lost (negative)")
    ax.set_ylabel("power [MW]")
    ax.set_xlabel("time [s]")
    ax.set_title("UPS battery")
    if "soc_ups_frac" in ts:
        ax2 = ax.twinx()
        ax2.plot(t[sl], ts["soc_ups_frac"].to_numpy()[sl], color="tab:orange", lw=1.0, ls="--", label="UPS SoC")
        ax2.set_ylabel("state of charge [frac]")
        ax2.legend(loc="lower right", fontsize=8)
    for a in axes:
        a.grid(alpha=0.3)
        a.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "ride_through.png", dpi=110)
    plt.close(fig)
    return ("ride_through.png", "Grid events: the PCC voltage against the spec's ride-through curve (dashed, from "
                                "each sag's start), the PCC power with and without the events (dotted: the "
                                "recovery target) and the UPS battery's power, state of charge and lost IT load.")
