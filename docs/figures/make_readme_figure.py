"""The README's picture: raw vs mitigated PCC power of the bundled default run.

Runs ``scenarios/default.toml`` as shipped (20,000 GB200 GPUs, rack storage under the
moving-average controller) and plots the site power without mitigation (``p_site_mw``, what the
grid would see) against the PCC power with it (``p_pcc_mw``), first 30 s of the run::

    python docs/figures/make_readme_figure.py       # writes docs/figures/readme_pcc_power.png
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from facility.scenario import load_scenario
from facility.run.orchestrator import run_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "readme_pcc_power.png"
SHOWN_S = 30.0


def main() -> None:
    res = run_scenario(load_scenario(ROOT / "scenarios" / "default.toml"), plots=False)
    ts = res.timeseries
    part = ts[ts["t_s"] <= SHOWN_S]
    fig, ax = plt.subplots(figsize=(9, 3.2), dpi=110)
    ax.plot(part["t_s"], part["p_site_mw"], lw=0.6, color="tab:red", label="raw (no mitigation)")
    ax.plot(part["t_s"], part["p_pcc_mw"], lw=1.2, color="tab:blue",
            label="mitigated (rack storage, moving-average controller)")
    ax.set_xlabel("time [s]")
    ax.set_ylabel("power at the PCC [MW]")
    swing = res.metrics["pcc"].get("max_window_swing_mw")
    ax.set_title("scenarios/default.toml: 20,000 GB200 GPUs, one pre-training job"
                 + (f" — window swing {swing:.2f} MW, compliant: {res.compliant}" if swing is not None else ""),
                 fontsize=9)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(OUT)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
