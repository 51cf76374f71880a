"""facility size with a [grid_impact] limit: the verified design meets it, and a tighter limit
takes more storage. A 0.8 s iteration (1.25 Hz) next to the single machine's 1.2 Hz mode."""

import numpy as np
import pytest

from facility.scenario import load_scenario
from facility.grid_impact import load_mode_set
from facility.grid_impact.lp import LpSpec, lp_spec
from facility.grid_impact.modal import mode_response
from facility.optimize.model.spectral import bin_limits, has_spectral_limits
from facility.sizing.pipeline import size_scenario

SCENARIO = """
schema_version = 1
name = "gi_size"
[time]
horizon_s = 8
dt_s = 0.02
[[jobs]]
name = "train"
n_gpus = 10000
gpu = "gb200"
workload = "square"
period_s = 0.8
compute_frac = 0.6
p_low_frac = 0.3
start_s = -60
[site]
non_gpu_frac = 0.0
pue = 1.0
[rack_storage]
enabled = true
extendable = true
max_p_rated_mw = 50.0
max_e_rated_mwh = 1.0
eff_charge_frac = 0.97
eff_discharge_frac = 0.97
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 2000.0
[grid]
enabled = false
[controller]
kind = "optimal"
[grid_impact]
enabled = true
mode_set = "smib_example"
generator_share_frac = 0.5
"""


def scenario(tmp_path, *overrides):
    f = tmp_path / "gi.toml"
    f.write_text(SCENARIO)
    return load_scenario(f, list(overrides))


def test_lp_spec_caps_the_bins(tmp_path):
    s = scenario(tmp_path, "grid_impact.max_mode_response_mw=5")
    spec = lp_spec(s)
    assert isinstance(spec, LpSpec) and has_spectral_limits(spec)
    assert spec.window_s == s.spec.window_s           # the spec's keys pass through
    lim = bin_limits(spec, 400, 0.02)
    assert set(lim.family) == {"grid_impact"}
    # at the mode the cap is the limit over the resonant gain k / (2 zeta)
    mode = load_mode_set("smib_example").modes[0]
    i = np.argmin(np.abs(lim.k / 8.0 - mode.f_hz))
    f_k = lim.k[i] / 8.0
    gain = mode.gain_mw_per_mw * abs(mode_response(np.array([f_k]), mode.f_hz, mode.damping_ratio)[0])
    assert lim.limit_mw[i] == pytest.approx(5.0 / (gain * np.sinc(f_k * 0.02) ** 2))
    import pickle  # the strategies that solve in subprocesses pickle the spec

    again = pickle.loads(pickle.dumps(spec))
    np.testing.assert_array_equal(again.bin_caps_mw(np.array([1.2, 15.7]), 0.02),
                                  spec.bin_caps_mw(np.array([1.2, 15.7]), 0.02))
    plain = scenario(tmp_path)
    assert lp_spec(plain) is plain.spec                # no limit: the spec itself


def test_size_meets_the_limit_and_tighter_takes_more_storage(tmp_path):
    raw = None
    sized = {}
    for limit in (20.0, 12.0):
        sol, res = size_scenario(scenario(tmp_path, f"grid_impact.max_mode_response_mw={limit}"), plots=False)
        gi = res.metrics["grid_impact"]
        raw = gi["raw"]["mode_bin_peak_mw"]
        assert res.metrics["compliance"]["grid_impact_max_mode_response_mw"]
        assert gi["mode_bin_peak_mw"] <= limit + 1e-6
        assert res.sizing["verified"]
        sized[limit] = res.sizing["rack_storage"]["p_rated_mw_opt"]
    assert raw > 20.0                      # the raw site breaks both limits
    assert sized[12.0] > sized[20.0] > 0.0
