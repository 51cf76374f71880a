"""The grid-impact section of ``report.html`` and the time-domain replay in it
(``facility grid-replay``, :mod:`facility.grid_impact.dynamics.replay`).

At run time the section lists the mode set, its modes' and its rest's swings and the shaft's
peak; it ends with a marker. ``facility grid-replay`` run on the result folder writes
``grid_replay.{json,csv,png}`` beside it, puts the comparison (ANDES's time domain against the
mode set's prediction: power and speed of the observed generator) at the marker, and adds the
files to the folder's manifest, so the folder stays a facility result.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from facility.report.numbers import fmt_number
from facility.report.outdir import MANIFEST_FILE

__all__ = ["grid_impact_section", "replay_html", "attach_replay", "plot_replay", "REPLAY_BEGIN", "REPLAY_END"]

REPLAY_BEGIN = "<!-- grid-replay -->"
REPLAY_END = "<!-- /grid-replay -->"
REPLAY_FILES = ("grid_replay.json", "grid_replay.csv", "grid_replay.png")


def grid_impact_section(res) -> str:
    """The grid-impact section of a run with ``[grid_impact]`` enabled ('' otherwise)."""
    gi = res.metrics.get("grid_impact")
    if not gi:
        return ""
    cfg = res.scenario.grid_impact
    rows = []
    for name, m in gi["modes"].items():
        if name == "total":
            continue
        f_hz = fmt_number(m["f_hz"]) if "f_hz" in m else ""
        zeta = fmt_number(100 * m["damping_ratio"]) if "damping_ratio" in m else ""
        rows.append(f"<tr><td class='txt'>{html.escape(name)}</td><td>{f_hz}</td>"
                    f"<td>{zeta}</td><td>{fmt_number(m['peak_mw'])}</td>"
                    f"<td>{fmt_number(m['bin_peak_mw'])}</td><td>{fmt_number(m['peak_hz'])}</td></tr>")
    tot = gi["modes"]["total"]
    rows.append(f"<tr><td class='txt'>total</td><td></td><td></td><td>{fmt_number(tot['peak_mw'])}</td>"
                f"<td></td><td>{fmt_number(tot['peak_hz'])}</td></tr>")
    sh = gi["shaft"]
    return ("<h2>Grid impact</h2>"
            f"<p>Mode set <b>{html.escape(cfg.mode_set)}</b>, shaft <b>{html.escape(cfg.shaft_model)}</b>; "
            f"largest PCC swing {fmt_number(gi['dp_peak_mw'])} MW; shaft torque peak "
            f"{fmt_number(sh['peak_torque_pu'])} pu (bin peak {fmt_number(gi['shaft_bin_peak_torque_pu'])} pu). "
            "A derived set's <i>rest</i> is the observed "
            "generator's response outside its electromechanical modes (instantaneous share, governors); "
            "<i>total</i> is its whole swing.</p>"
            "<table><tr><th>mode</th><th>f [Hz]</th><th>ζ [%]</th><th>generator swing peak [MW]</th>"
            "<th>bin peak [MW]</th><th>frequency peak [Hz]</th></tr>" + "".join(rows) + "</table>"
            f"{REPLAY_BEGIN}<p>No time-domain replay yet: <code>facility grid-replay RUN_DIR --case … --bus … "
            f"--observe … --window START:END</code> (needs ANDES) adds it here.</p>{REPLAY_END}")


def replay_html(s: dict) -> str:
    """The replay's block: what was played where, and both responses."""
    rows = [("generator power swing peak [MW]", s["pe_peak_andes_mw"], s["pe_peak_modes_mw"], s["pe_peak_gap_frac"],
             s["pe_rms_gap_frac"]),
            ("generator speed swing peak [pu]", s["speed_peak_andes_pu"], s["speed_peak_modes_pu"],
             s["speed_peak_gap_frac"], s["speed_rms_gap_frac"])]
    if "hz_peak_andes" in s:
        rows.append(("PCC frequency swing peak [Hz]", s["hz_peak_andes"], s["hz_peak_modes"], s["hz_peak_gap_frac"],
                     s["hz_rms_gap_frac"]))
    body = "".join(f"<tr><td class='txt'>{q}</td><td>{fmt_number(a)}</td><td>{fmt_number(b)}</td>"
                   f"<td>{fmt_number(100 * g)}</td><td>{fmt_number(100 * r)}</td></tr>" for q, a, b, g, r in rows)
    return (f"{REPLAY_BEGIN}<h3>Time-domain replay in ANDES</h3>"
            f"<p>{fmt_number(s['window_s'][0])}–{fmt_number(s['window_s'][1])} s of this run's PCC power "
            f"(ΔP = P − P(start), peak {fmt_number(s['dp_peak_mw'])} MW) played as a constant-power load change "
            f"at bus {html.escape(str(s['pcc_bus']))} of <code>{html.escape(str(s['case']))}</code> (ANDES "
            f"{html.escape(str(s['andes_version']))}, {s['n_steps']} steps of {fmt_number(s['step_s'])} s); generator "
            f"{html.escape(str(s['observed_generator']))} observed, against the mode set "
            f"({html.escape(str(s['mode_set']))}) simulated from rest with the same input.</p>"
            "<table><tr><th>quantity</th><th>ANDES</th><th>mode set</th><th>peak gap [%]</th>"
            f"<th>rms gap [% of ANDES's rms]</th></tr>{body}</table>"
            "<figure><img src='grid_replay.png' alt='grid replay'><figcaption>Observed generator's power and "
            f"speed change: ANDES's time domain and the mode set (grid_replay.csv).</figcaption></figure>{REPLAY_END}")


def plot_replay(t_s, dp_mw, pe_andes, pe_modes, w_andes, w_modes, summary: dict, path: Path) -> None:
    """``grid_replay.png``: input, generator power and speed, ANDES against the mode set."""
    # matplotlib (~0.4 s) here, not at the top: report.html's section above is on the path of
    # every report import (facility.report.html), the plot only on ``facility grid-replay``'s
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(10, 7.5), sharex=True)
    ax[0].plot(t_s, dp_mw, color="0.3", lw=0.8)
    ax[0].set_ylabel("ΔP at the PCC [MW]")
    ax[1].plot(t_s, pe_andes, color="tab:blue", lw=1.0, label="ANDES time domain")
    ax[1].plot(t_s, pe_modes, color="tab:orange", lw=1.0, ls="--", label=f"mode set ({summary['mode_set']})")
    ax[1].set_ylabel(f"ΔPe gen {summary['observed_generator']} [MW]")
    ax[1].legend(fontsize=7)
    ax[2].plot(t_s, np.asarray(w_andes) * 1e3, color="tab:blue", lw=1.0)
    ax[2].plot(t_s, np.asarray(w_modes) * 1e3, color="tab:orange", lw=1.0, ls="--")
    ax[2].set_ylabel("Δω [1e-3 pu]")
    ax[2].set_xlabel(f"time from {summary['window_s'][0]:g} s of the run [s]")
    for a in ax:
        a.grid(alpha=0.3)
    ax[0].set_title(f"{summary['case']}, bus {summary['pcc_bus']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def attach_replay(run_dir: Path, summary: dict) -> None:
    """Put the replay into ``run_dir``'s report.html (at the grid-impact section's marker, or
    before ``</body>`` when the report has none) and its files into the manifest."""
    run_dir = Path(run_dir)
    rep = run_dir / "report.html"
    if rep.is_file():
        text = rep.read_text()
        block = replay_html(summary)
        if REPLAY_BEGIN in text and REPLAY_END in text:
            a = text.index(REPLAY_BEGIN)
            b = text.index(REPLAY_END) + len(REPLAY_END)
            text = text[:a] + block + text[b:]
        else:
            text = text.replace("</body>", f"<h2>Grid impact</h2>{block}</body>")
        rep.write_text(text)
    man = run_dir / MANIFEST_FILE
    if man.is_file():
        m = json.loads(man.read_text())
        if isinstance(m.get("files"), list):
            m["files"] = sorted(set(m["files"]) | set(REPLAY_FILES))
            man.write_text(json.dumps(m, indent=2))
