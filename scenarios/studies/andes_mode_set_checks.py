"""Every bundled mode set derived from ANDES against ANDES's own time domain.

For each set: its case, PCC bus and observed generator (from the file's [derived] record); a
±50 MW square wave at 0.5 Hz on the PCC load for 30 s (10 ms steps); the observed generator's
power FFT bins at 0.5 / 1.5 / 2.5 Hz over 10-30 s (10 whole periods) and its peak swing there,
from ANDES and from the set's rows summed (``frequency_response(f, "mw")``, periodic steady
state). Prints a markdown table (docs/grid_impact.md). Needs ANDES; ~1-3 min per set.

    python scenarios/studies/andes_mode_set_checks.py [SET ...]
"""

from __future__ import annotations

import sys

import numpy as np

from facility.grid_impact import load_mode_set
from facility.grid_impact.dynamics.case import load_case
from facility.grid_impact.dynamics.replay import simulate_input

AMP_MW, F_HZ, T_END_S, DT_S, SKIP_S = 50.0, 0.5, 30.0, 0.01, 10.0
FREQS = (0.5, 1.5, 2.5)


def square(t):
    return AMP_MW * np.where((t * F_HZ) % 1.0 < 0.5, 1.0, -1.0)


def bins(y, dt):
    y = y - y.mean()
    a = np.abs(np.fft.rfft(y)) * 2 / y.size
    f = np.fft.rfftfreq(y.size, dt)
    return [float(a[np.argmin(np.abs(f - fk))]) for fk in FREQS]


def check(name: str) -> list[str]:
    ms = load_mode_set(name)
    rec = ms.record
    c = load_case(rec["case"], rec["pcc_bus"], rec["observed_generator"])
    t_in = np.arange(0.0, T_END_S + 1e-9, 1e-3)
    sim = simulate_input(c, t_in, square(t_in), DT_S)
    tg = np.arange(SKIP_S, T_END_S - 1e-9, DT_S)
    pe = np.interp(tg, sim["t_s"], sim["pe_mw"])
    n = tg.size
    h = ms.frequency_response(np.fft.rfftfreq(n, DT_S), "mw").sum(axis=0)
    y = np.fft.irfft(np.fft.rfft(square(tg - SKIP_S)) * h, n)
    rows = []
    for label, a, b in [(f"bin {fk:g} Hz", x, z) for fk, x, z in zip(FREQS, bins(pe, DT_S), bins(y, DT_S))] + [
            ("peak swing", float(np.max(np.abs(pe - pe.mean()))), float(np.max(np.abs(y - y.mean()))))]:
        rows.append(f"| {name} | {rec['case']} bus {rec['pcc_bus']}, gen {rec['observed_generator']} | {label} "
                    f"| {a:.2f} | {b:.2f} | {100 * (b / a - 1):+.1f} % |")
    print(f"{name}: ANDES {sim['wall_s']:.0f} s wall", file=sys.stderr)
    return rows


def main(names):
    print("| set | case, input, observed | G power | ANDES [MW] | set [MW] | gap |")
    print("|---|---|---|---|---|---|")
    for name in names:
        for r in check(name):
            print(r, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["kundur_two_area", "ieee39", "wecc179"])
