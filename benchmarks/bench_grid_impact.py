"""Benchmark: every grid-impact metric of 1 h at 10 ms against a per-step time-domain simulation.

Case: a ~100 MW stochastic GB200 training job (iteration period 1.0 s, start/stop ramps,
checkpoints), 1 h at 10 ms = 360,000 steps of site power; the IEEE First Benchmark shaft
(five torsional modes, ζ = 0.001) with the generator taking 30 % of the oscillation and the
reduced western-US mode set (five modes).

- ``facility_s``: :func:`facility.grid_impact.grid_impact_metrics` on the whole hour (best of
  3): the torque of every shaft section, each torsional mode's share of it, each mode's
  generator-power and frequency response, rainflow fatigue of every section, bin peaks.
- ``baseline_s``: the same responses (shaft sections and the modes' MW and Hz outputs) by a
  per-step Python loop of the models discretized with a first-order hold
  (``scipy.signal.cont2discrete``), x ← A_d x + B_d u each step; timed on the first
  ``SLICE_STEPS`` steps and scaled linearly to 360,000 (constant cost per step). The loop
  computes responses only, no per-mode split and no fatigue, so the ratio understates the
  speed-up.
- Check: after the loop's start-up transient has decayed (``SETTLE_S``), its torque swing
  (max − min) in every section on the slice agrees with the FFT response's on the same steps
  (``peak_rel_diff``, largest relative difference; both read the power as linear between
  samples); the benchmark fails above 1 %.

Prints one JSON line: ``{"name", "steps", "baseline_s", "facility_s", "ratio", "peak_rel_diff"}``.
Run: ``python benchmarks/bench_grid_impact.py``.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy import signal

from facility.scenario import scenario_from_dict
from facility.config.grid_impact import GridImpactConfig
from facility.grid_impact import build_model, grid_impact_metrics, load_section_models
from facility.grid_impact.metrics import hold_factor
from facility.workload import default_n_feeders, generate_load, site_power

HORIZON_S = 3600.0
DT_S = 0.01
SLICE_STEPS = 36_000
SETTLE_S = 150.0

SCENARIO = {
    "name": "bench_grid_impact",
    "seed": 7,
    "time": {"horizon_s": HORIZON_S, "dt_s": DT_S},
    "jobs": [{"name": "pretrain", "n_gpus": 53_400, "gpu": "gb200", "workload": "stochastic",
              "period_s": 1.0, "compute_frac": 0.7, "p_low_frac": 0.3, "start_s": -60.0,
              "stop_s": 3500.0, "ramp_s": 30.0, "checkpoint_every_s": 600.0, "checkpoint_s": 20.0}],
    "site": {"non_gpu_frac": 0.3, "pue": 1.2, "cooling_tau_s": 30.0},
}


def site_mw() -> np.ndarray:
    """Site power of the case. [MW]"""
    sc = scenario_from_dict(SCENARIO)
    prof = generate_load(sc)
    return site_power(prof, prof.p_gpu_w, sc.site, default_n_feeders(sc)).p_site_mw


def loop_responses(p_mw: np.ndarray, model, dt_s: float) -> np.ndarray:
    """Per-step loop of the shaft and the modes (the baseline): section torques [pu] (S, T)."""
    a, b, c, d = model.shaft.state_space()
    sys_s = signal.cont2discrete((a, b * model.torque_per_mw, c, d), dt_s, method="foh")
    mods = [signal.cont2discrete(model.modes.state_space(i, out), dt_s, method="foh")
            for i in range(len(model.modes.modes)) for out in ("mw", "hz")]
    u = p_mw - p_mw.mean()
    ad, bd, cd, dd = (np.asarray(m) for m in sys_s[:4])
    xs = np.zeros(ad.shape[0])
    xm = [np.zeros(m[0].shape[0]) for m in mods]
    torque = np.empty((cd.shape[0], u.size))
    for t in range(u.size):
        torque[:, t] = cd @ xs + dd[:, 0] * u[t]
        xs = ad @ xs + bd[:, 0] * u[t]
        for j, m in enumerate(mods):
            _ = m[2] @ xm[j] + m[3][:, 0] * u[t]
            xm[j] = m[0] @ xm[j] + m[1][:, 0] * u[t]
    return torque


def main() -> int:
    p = site_mw()
    n = p.size
    cfg = GridImpactConfig(enabled=True, generator_share_frac=0.3)
    model = build_model(cfg, *load_section_models(cfg))
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        out = grid_impact_metrics(p, DT_S, model)
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    torque_loop = loop_responses(p[:SLICE_STEPS], model, DT_S)
    base = (time.perf_counter() - t0) * n / SLICE_STEPS
    # the FFT response on the same steps: the slice's own mean is the loop's input offset,
    # which the (zero-DC-gain) torque of a free shaft passes as a constant; compare swings
    x = np.fft.rfft(p - p.mean())
    f = np.fft.rfftfreq(n, DT_S)
    ht = model.torque_response(f) * hold_factor(f, DT_S)
    torque_fft = np.fft.irfft(x[None, :] * ht, n, axis=1)[:, :SLICE_STEPS]
    k0 = int(SETTLE_S / DT_S)
    sw_loop = np.ptp(torque_loop[:, k0:], axis=1)
    sw_fft = np.ptp(torque_fft[:, k0:], axis=1)
    diff = float(np.max(np.abs(sw_loop - sw_fft) / sw_fft))
    line = {"name": "grid_impact", "steps": n, "baseline_s": round(base, 3), "facility_s": round(best, 3),
            "ratio": round(base / best, 1), "peak_rel_diff": round(diff, 4),
            "peak_torque_pu": round(out["shaft"]["peak_torque_pu"], 5),
            "mode_total_peak_mw": round(out["modes"]["total"]["peak_mw"], 3)}
    print(json.dumps(line))
    return 0 if diff < 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
