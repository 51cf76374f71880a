"""Held-out check of the bundled ``kundur_two_area`` mode set against ANDES's time domain.

A ±50 MW, 0.5 Hz square wave on a constant-power load at bus 7 of ANDES's ``kundur_full``
case; G1's electrical power from ANDES (40 s at 10 ms, FFT over 10-40 s: 15 whole periods)
against ``load_mode_set("kundur_two_area").frequency_response(f, "mw")`` summed over its rows,
applied to the same square wave (periodic steady state). Prints the table of
docs/grid_impact.md. Needs ANDES (``pip install 'facility[grid]'``); ~30-60 s.

    python scenarios/studies/andes_kundur_square.py
"""

from __future__ import annotations

import numpy as np

from facility.grid_impact import load_mode_set
from facility.grid_impact.dynamics.case import load_case
from facility.grid_impact.dynamics.replay import simulate_input

AMP_MW, F_HZ, T_END_S, DT_S, SKIP_S = 50.0, 0.5, 40.0, 0.01, 10.0


def square(t):
    return AMP_MW * np.where((t * F_HZ) % 1.0 < 0.5, 1.0, -1.0)


def bins(y, dt, freqs):
    y = y - y.mean()
    a = np.abs(np.fft.rfft(y)) * 2 / y.size
    f = np.fft.rfftfreq(y.size, dt)
    return [float(a[np.argmin(np.abs(f - fk))]) for fk in freqs]


def main():
    freqs = (0.5, 1.5, 2.5)
    c = load_case("kundur/kundur_full.xlsx", 7, "1")
    t_in = np.arange(0.0, T_END_S + 1e-9, 1e-3)
    sim = simulate_input(c, t_in, square(t_in), DT_S)
    tg = np.arange(SKIP_S, T_END_S - 1e-9, DT_S)
    pe = np.interp(tg, sim["t_s"], sim["pe_mw"])
    a_andes = bins(pe, DT_S, freqs)
    peak_andes = float(np.max(np.abs(pe - pe.mean())))
    # the mode set: periodic steady state of the same square wave
    ms = load_mode_set("kundur_two_area")
    n = tg.size
    x = np.fft.rfft(square(tg - SKIP_S))
    h = ms.frequency_response(np.fft.rfftfreq(n, DT_S), "mw").sum(axis=0)
    y = np.fft.irfft(x * h, n)
    a_modes = bins(y, DT_S, freqs)
    peak_modes = float(np.max(np.abs(y - y.mean())))
    print(f"ANDES time domain: {sim['wall_s']:.1f} s wall")
    print("| quantity | ANDES time domain [MW] | kundur_two_area [MW] | gap |")
    print("|---|---|---|---|")
    for fk, a, b in zip(freqs, a_andes, a_modes):
        print(f"| G1 Pe bin {fk:g} Hz | {a:.2f} | {b:.2f} | {100 * (b / a - 1):+.1f} % |")
    print(f"| G1 Pe peak swing | {peak_andes:.2f} | {peak_modes:.2f} | {100 * (peak_modes / peak_andes - 1):+.1f} % |")
    for m in ms.modes:
        print(f"mode {m.name}: {m.f_hz:.3f} Hz, zeta {100 * m.damping_ratio:.2f} %")
    return a_andes, a_modes, peak_andes, peak_modes


if __name__ == "__main__":
    main()
