"""End-to-end co-simulation: closed forms, invariants after every run, dt independence."""

from __future__ import annotations

import numpy as np
import pytest

from facility.config import load_scenario, scenario_from_dict
from facility.config.load import apply_overrides
from facility.simulate import run_scenario
from tests.conftest import SCENARIOS
from tests.invariants import check_invariants


def square_site(dt=0.01, extra=()):
    d = {
        "schema_version": 1, "name": "sq", "seed": 0,
        "time": {"horizon_s": 30.0, "dt_s": dt},
        "jobs": [{"name": "j", "n_gpus": 10_000, "gpu": "h100", "workload": "square",
                  "period_s": 2.0, "compute_frac": 0.75, "p_low_frac": 0.25}],
        "site": {"non_gpu_frac": 0.35, "pue": 1.2, "cooling_tau_s": 0.0},
        "grid": {"enabled": False},
        "spec": {"window_s": 5.0, "max_window_swing_mw": 5.0, "band_min_hz": 0.1, "band_max_hz": 20.0},
    }
    return scenario_from_dict(apply_overrides(d, list(extra)), "sq")


def test_square_wave_closed_form_without_network():
    res = run_scenario(square_site())
    check_invariants(res)
    scale = 10_000 * 700 / 1e6 * 1.35 * 1.2  # MW at full TDP
    hi, lo = scale, 0.25 * scale
    m = res.metrics["pcc"]
    assert m["p_max_mw"] == pytest.approx(hi, rel=1e-9)
    assert m["p_min_mw"] == pytest.approx(lo, rel=1e-9)
    assert m["p_mean_mw"] == pytest.approx(0.75 * hi + 0.25 * lo, rel=1e-9)
    assert m["max_window_swing_mw"] == pytest.approx(hi - lo, rel=1e-9)
    assert m["max_ramp_up_mw_per_s"] == pytest.approx(hi - lo, rel=1e-9)  # step within tau = 1 s
    assert m["dominant_freq_hz"] == pytest.approx(0.5)
    assert res.metrics["compliance"]["max_window_swing_mw"] is False
    assert res.metrics["energy"]["energy_overhead_frac"] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res.timeseries["p_pcc_mw"], res.timeseries["p_site_mw"])


def test_metrics_do_not_depend_on_dt_end_to_end():
    a = run_scenario(square_site(0.01)).metrics["pcc"]
    b = run_scenario(square_site(0.05)).metrics["pcc"]
    for k in ("p_mean_mw", "p_max_mw", "p_min_mw", "max_window_swing_mw", "max_ramp_up_mw_per_s",
              "max_ramp_down_mw_per_s", "max_ramp_mw_per_min", "dominant_freq_hz"):
        assert b[k] == pytest.approx(a[k], rel=1e-9), k


@pytest.mark.parametrize("name", ["default", "square_wave_rack_storage", "gpu_smoothing_floor"])
def test_bundled_scenarios_run_with_invariants(name):
    s = load_scenario(SCENARIOS / f"{name}.toml", ["time.horizon_s=30"])
    res = run_scenario(s)
    check_invariants(res)
    assert res.metrics["raw"]["max_window_swing_mw"] > 0
