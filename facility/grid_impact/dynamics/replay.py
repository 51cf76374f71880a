"""Time domain in ANDES against a mode set's prediction: a PCC power change played as the load
at a bus of a case (``facility grid-replay``, and the checks of the derived mode sets).

ANDES integrates the full nonlinear DAE (implicit trapezoidal, fixed step) with the PCC load's
constant power set, before each step, to ΔP at the step's end time (ANDES advances ``dae.t``
before it calls the perturbation function; the implicit step solves for that time), linearly
interpolated in the input series (linear between samples, as the metrics' first-order hold).
The mode set's prediction is the linear simulation (``scipy.signal.lsim``, linear between
samples) of the sum of its rows from rest, the same input: both start at the operating point,
so transients are in both.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import signal

from facility.errors import ScenarioError
from facility.grid_impact.dynamics.case import (AndesCase, _quiet, andes_version, load_case,
                                                output_addresses, pcc_power_mw, set_pcc_power_mw)
from facility.grid_impact.dynamics.derive import derive_from_case
from facility.grid_impact.library import list_mode_sets, load_mode_set, mode_set_from_dict, read_mode_set_file
from facility.report.grid_replay import attach_replay, plot_replay

__all__ = ["simulate_input", "predict", "replay_run", "compare"]


def simulate_input(c: AndesCase, t_s: np.ndarray, dp_mw: np.ndarray, step_s: float) -> dict:
    """Run ANDES's time domain with the PCC load at its operating power + ΔP(t).

    Parameters
    ----------
    c : AndesCase
        Freshly loaded (time domain initialized, t = 0).
    t_s, dp_mw : numpy.ndarray
        The input series, from t_s[0] = 0 [s]; ΔP [MW] (+ = more load).
    step_s : float
        Integration step. [s]

    Returns
    -------
    dict
        t_s, pe_mw (the observed generator's electrical power change [MW]), speed_pu (its speed
        change [pu]), hz (the PCC bus frequency change, dθ/dt / 2π by backward differences of its
        angle over each step [Hz]), wall_s.
    """
    ss = c.system
    t_s = np.asarray(t_s, float)
    dp = np.asarray(dp_mw, float)
    p0 = pcc_power_mw(c)
    tds = ss.TDS

    def pert(t, system):
        set_pcc_power_mw(c, p0 + float(np.interp(t, t_s, dp)))

    adr = output_addresses(c)
    pe0, w0_pu, th0 = (float(ss.dae.y[adr["pe"]]) * c.s_base_mva, float(ss.dae.x[adr["omega"]]),
                       float(ss.dae.y[adr["angle"]]))
    tds.config.tf = float(t_s[-1])
    tds.config.tstep = float(step_s)
    tds.config.fixt = 1
    tds.config.shrinkt = 1
    tds.callpert = pert
    w0 = time.perf_counter()
    with _quiet():
        ok = tds.run()
    wall = time.perf_counter() - w0
    if not ok or tds.busted:
        raise ScenarioError(f"ANDES's time domain of {c.case} failed at t = {float(ss.dae.t):.3g} s")
    ts = ss.dae.ts
    t = np.asarray(ts.t, float)
    pe = np.asarray(ts.y[:, adr["pe"]], float) * c.s_base_mva
    w = np.asarray(ts.x[:, adr["omega"]], float)
    th = np.asarray(ts.y[:, adr["angle"]], float) - th0
    t_u, first = np.unique(t, return_index=True)          # ANDES may store a time twice
    rate = np.diff(th[first], prepend=th[first][0]) / np.diff(t_u, prepend=t_u[0] - 1.0)
    hz = np.interp(t, t_u, rate) / (2.0 * np.pi)
    return {"t_s": t, "pe_mw": pe - pe0, "speed_pu": w - w0_pu, "hz": hz, "wall_s": wall}


def predict(mode_set, t_s: np.ndarray, dp_mw: np.ndarray, output: str = "mw") -> np.ndarray:
    """The mode set's response (all rows summed) to ΔP(t) from rest, linear between samples."""
    t_s = np.asarray(t_s, float)
    dt = float(np.median(np.diff(t_s)))
    tu = t_s[0] + dt * np.arange(int(round((t_s[-1] - t_s[0]) / dt)) + 1)   # lsim wants a uniform grid
    dp = np.interp(tu, t_s, np.asarray(dp_mw, float))
    y = np.zeros(tu.size)
    for i in range(len(mode_set.row_names)):
        a, b, cc, d = mode_set.state_space(i, output)
        if a.shape[0] == 0:
            y += float(d[0, 0]) * dp
            continue
        _, yi, _ = signal.lsim((a, b, cc, d), dp, tu - tu[0])
        y += np.asarray(yi, float).ravel()
    return np.interp(t_s, tu, y)


def compare(andes: np.ndarray, modes: np.ndarray) -> dict:
    """Peaks of both and their gap: peak_andes, peak_modes, peak_gap_frac = |peak_modes /
    peak_andes − 1|, rms_gap_frac = rms(modes − andes) / rms(andes)."""
    pa, pm = float(np.max(np.abs(andes))), float(np.max(np.abs(modes)))
    ra = float(np.sqrt(np.mean(andes ** 2)))
    return {"peak_andes": pa, "peak_modes": pm, "peak_gap_frac": abs(pm / pa - 1.0) if pa > 0 else 0.0,
            "rms_gap_frac": float(np.sqrt(np.mean((modes - andes) ** 2))) / ra if ra > 0 else 0.0}


def _read_window(run_dir: Path, window: tuple[float, float]):
    p = Path(run_dir) / "timeseries.parquet"
    if not p.is_file():
        raise ScenarioError(f"{run_dir}: no timeseries.parquet (give a `facility run` or `size` output folder)")
    df = pd.read_parquet(p, columns=["t_s", "p_pcc_mw"])
    t, pcc = df["t_s"].to_numpy(float), df["p_pcc_mw"].to_numpy(float)
    a, b = window
    if a >= t[-1] or b > t[-1] + 1e-9 or a < t[0] - 1e-9:
        raise ScenarioError(f"--window {a:g}:{b:g}: outside the run's {t[0]:g}-{t[-1]:g} s")
    keep = (t >= a - 1e-9) & (t <= b + 1e-9)
    if keep.sum() < 3:
        raise ScenarioError(f"--window {a:g}:{b:g}: fewer than 3 samples of the run")
    return t[keep] - t[keep][0], pcc[keep], float(np.median(np.diff(t)))


def _mode_set(name: str | None, c: AndesCase):
    if name is None:
        return mode_set_from_dict(derive_from_case(c, "derived"))
    if name in list_mode_sets():
        return load_mode_set(name)
    if Path(name).is_file():
        return read_mode_set_file(name)
    raise ScenarioError(f"--mode-set {name!r}: neither a bundled mode set ({', '.join(list_mode_sets())}) "
                        "nor a file")


def replay_run(run_dir, case: str, bus, observe: str, window: tuple[float, float], mode_set: str | None = None,
               step_s: float | None = None, out_dir=None) -> dict:
    """Play ``window`` [s] of a run's PCC power as ΔP(t) = P(t) − P(start) at ``bus`` of ``case``;
    write grid_replay.json (summary), grid_replay.csv (t_s, dp_mw, pe_andes_mw, pe_modes_mw,
    speed_andes_pu, speed_modes_pu, hz_andes, hz_modes: the PCC frequency change) and grid_replay.png to ``out_dir`` (default ``run_dir``,
    whose report.html then shows them). Returns {"summary", "dir"}."""
    run_dir = Path(run_dir)
    t, pcc, dt = _read_window(run_dir, window)
    dp = pcc - pcc[0]
    h = float(step_s) if step_s else float(min(max(dt, 1e-3), 0.02))
    c = load_case(case, bus, observe)
    ms = _mode_set(mode_set, c)
    if mode_set is None:          # the derivation stepped the case: start the time domain afresh
        c = load_case(case, bus, observe)
    sim = simulate_input(c, t, dp, h)
    ts = sim["t_s"]
    dpi = np.interp(ts, t, dp)
    pe_m = predict(ms, ts, dpi, "mw")
    w_m = predict(ms, ts, dpi, "speed")
    hz_m = predict(ms, ts, dpi, "hz")
    summary = {
        "case": case, "pcc_bus": str(bus), "observed_generator": str(observe), "andes_version": andes_version(),
        "mode_set": ms.name if mode_set is not None else "derived from the case now",
        "window_s": [float(window[0]), float(window[1])], "step_s": h, "n_steps": int(round(float(t[-1]) / h)),
        "andes_wall_s": sim["wall_s"], "dp_peak_mw": float(np.max(np.abs(dp))),
        "pe_peak_andes_mw": 0.0, "pe_peak_modes_mw": 0.0, "speed_peak_andes_pu": 0.0, "speed_peak_modes_pu": 0.0,
    }
    pe = compare(sim["pe_mw"], pe_m)
    sp = compare(sim["speed_pu"], w_m)
    fq = compare(sim["hz"], hz_m)
    summary.update(pe_peak_andes_mw=pe["peak_andes"], pe_peak_modes_mw=pe["peak_modes"],
                   pe_peak_gap_frac=pe["peak_gap_frac"], pe_rms_gap_frac=pe["rms_gap_frac"],
                   speed_peak_andes_pu=sp["peak_andes"], speed_peak_modes_pu=sp["peak_modes"],
                   speed_peak_gap_frac=sp["peak_gap_frac"], speed_rms_gap_frac=sp["rms_gap_frac"],
                   hz_peak_andes=fq["peak_andes"], hz_peak_modes=fq["peak_modes"],
                   hz_peak_gap_frac=fq["peak_gap_frac"], hz_rms_gap_frac=fq["rms_gap_frac"])
    out = Path(out_dir) if out_dir is not None else run_dir
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"t_s": ts, "dp_mw": dpi, "pe_andes_mw": sim["pe_mw"], "pe_modes_mw": pe_m,
                  "speed_andes_pu": sim["speed_pu"], "speed_modes_pu": w_m, "hz_andes": sim["hz"],
                  "hz_modes": hz_m}).to_csv(out / "grid_replay.csv", index=False)
    (out / "grid_replay.json").write_text(json.dumps(summary, indent=2))
    plot_replay(ts, dpi, sim["pe_mw"], pe_m, sim["speed_pu"], w_m, summary, out / "grid_replay.png")
    if out.resolve() == run_dir.resolve():
        attach_replay(run_dir, summary)
    return {"summary": summary, "dir": str(out)}
