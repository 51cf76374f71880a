"""``grid_impact.png``: the PCC spectrum with the grid-side models' response curves over it,
and the shaft torque at the worst torsional mode (runs with ``[grid_impact]`` enabled).

Top: single-sided FFT amplitude of the raw and the mitigated PCC power [MW] (left axis); on
the right axis each electromechanical mode's gain |H_i(f)| to the observed generator's power
[MW per MW] (the 8 largest), for a set derived from a dynamic model the generator's whole
response (modes + rest), and the largest shaft-section torque per MW at the PCC [pu per GW, pu
of the generator's MVA base], so the bins that excite a mode are the ones under its peak; the
torsional modes dotted, the torsional band's lower edge dashed. Bottom: the torque of the
section the worst torsional mode loads most, its torsional band, that mode's share of it and the
quasi-static part, over a few seconds around the mode's peak.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from facility.grid_impact.metrics import build_model, hold_factor, section_torque  # noqa: E402
from facility.metrics import spectrum  # noqa: E402

__all__ = ["plot_grid_impact"]


def plot_grid_impact(res, raw: np.ndarray, pcc: np.ndarray, out: Path) -> tuple[str, str]:
    """Write ``grid_impact.png``; return (file name, caption)."""
    dt = res.scenario.time.dt_s
    model = build_model(res.scenario.grid_impact, res.scenario.library.shaft, res.scenario.library.mode_set)
    gi = res.metrics["grid_impact"]
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(10, 7.5))
    for y, label, color in ((raw, "raw PCC", "tab:red"), (pcc, "PCC (mitigated)", "tab:blue")):
        f, amp, _ = spectrum(y, dt)
        keep = f > 0
        a = np.where(amp[keep] > 1e-9 * max(float(amp.max(initial=0.0)), 1e-12), amp[keep], np.nan)
        ax.loglog(f[keep], a, color=color, lw=0.6, alpha=0.8, label=label)
    ax.set_xlabel("frequency [Hz]")
    ax.set_ylabel("FFT-bin amplitude [MW]")
    ax.grid(alpha=0.3, which="both")
    fg = np.geomspace(max(f[1], 0.02), 0.5 / dt, 3000)
    hold = hold_factor(fg, dt)
    rax = ax.twinx()
    rows = model.modes.frequency_response(fg, "mw")
    nm = len(model.modes.modes)
    top = sorted(np.argsort(-np.abs(rows[:nm]).max(axis=1))[:8])      # the 8 largest (wecc179 has 28)
    for i in top:
        m = model.modes.modes[i]
        h = np.abs(rows[i]) * hold
        rax.loglog(fg, h, color=f"C{i + 2}", lw=1.0, ls="--", label=f"mode {m.name} ({m.f_hz:.3g} Hz) [MW/MW]")
    if model.modes.rest is not None:   # a derived set: the generator's whole response, modes + rest
        rax.loglog(fg, np.abs(rows.sum(axis=0)) * hold, color="tab:green", lw=1.4,
                   label="observed generator, whole response [MW/MW]")
    ht = np.abs(model.torque_response(fg)).max(axis=0) * hold * 1e3
    rax.loglog(fg, ht, color="k", lw=1.0, label=f"shaft torque, worst section [pu/GW] ({model.shaft.name})")
    for fr in model.shaft.torsional_modes_hz():
        ax.axvline(fr, color="0.4", ls=":", lw=0.8)
    ax.axvline(model.band_min_hz, color="0.2", ls="--", lw=0.8)
    rax.set_ylabel("response per MW at the PCC")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = rax.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=6, loc="lower left")
    ax.set_title("PCC spectrum and the grid-side response curves (torsional modes dotted, torsional band "
                 "from the dashed line)", fontsize=10)

    modes = gi["shaft"]["modes"]
    worst = max(modes, key=lambda k: modes[k]["peak_torque_pu"])
    r = int(worst.removeprefix("mode")) - 1
    s = int(modes[worst]["worst_section_index"])
    tr = section_torque(pcc, dt, model, s, r)
    tt = section_torque(pcc, dt, model, s)
    tq = section_torque(pcc, dt, model, s, part="quasi_static")
    t = res.timeseries["t_s"].to_numpy()
    k = int(np.argmax(np.abs(tr)))
    half = max(int(1.5 / dt), int(3.0 / modes[worst]["f_hz"] / dt))
    sl = slice(max(0, k - half), min(t.size, k + half + 1))
    sec = model.shaft.sections[s]
    ax2.plot(t[sl], tq[sl], color="tab:olive", lw=0.8, label=f"{sec} quasi-static (< {model.band_min_hz:.3g} Hz)")
    ax2.plot(t[sl], tt[sl], color="0.5", lw=0.8, label=f"{sec} torsional band")
    ax2.plot(t[sl], tr[sl], color="tab:purple", lw=1.1, label=f"{sec}, {worst} ({modes[worst]['f_hz']:.2f} Hz)")
    lim = res.scenario.grid_impact.max_shaft_torque_pu
    if lim is not None:
        ax2.axhline(lim, color="k", ls="--", lw=1.0, label=f"max_shaft_torque_pu = {lim:g} (per-bin limit)")
        ax2.axhline(-lim, color="k", ls="--", lw=1.0)
    ax2.set_xlabel("time [s]")
    ax2.set_ylabel("section torque (oscillating part) [pu of S_rated]")
    ax2.set_title("Shaft torque at the worst torsional mode, around its peak", fontsize=10)
    ax2.legend(fontsize=7, loc="best")
    ax2.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "grid_impact.png", dpi=110)
    plt.close(fig)
    return ("grid_impact.png", "PCC spectrum with each electromechanical mode's gain and the shaft's "
                               "torque per MW over it; the torque of the worst torsional mode around its peak "
                               "(torsional band and quasi-static part).")
