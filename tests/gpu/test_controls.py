"""apply_gpu_controls: the scenario-level chain, slowdown, wear, unsupported GPUs, bad input."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from facility.scenario import scenario_from_dict
from facility.config.schema import Scenario
from facility.errors import ScenarioError
from facility.gpu import apply_gpu_controls
from tests.gpu.conftest import make_profile, square_wave


def _scenario(**sections) -> Scenario:
    data = {"jobs": [{"name": "train", "n_gpus": 144, "gpu": "gb200"}]}
    data.update(sections)
    return scenario_from_dict(data)


def test_all_off_returns_the_demand(square_profile):
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65})
    res = apply_gpu_controls(square_profile, s, smoothing=False, firefly=False, power_cap=False)
    np.testing.assert_array_equal(res.p_gpu_w, square_profile.p_gpu_w)
    assert not res.engaged.any() and not res.p_burn_w.any()
    assert res.slowdown_frac == {"train": 0.0, "overall": 0.0}


def test_floor_burn_matches_closed_form_and_is_reported(square_profile):
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65})
    res = apply_gpu_controls(square_profile, s)
    p = square_profile.p_gpu_w
    assert res.p_gpu_w.min() == pytest.approx(780.0)
    burn_j = res.p_burn_w[0].sum() * square_profile.dt_s
    assert burn_j == pytest.approx((780.0 - 240.0) * 0.3 * 20.0, rel=1e-9)
    assert res.wear["burn_kwh_per_gpu"] == pytest.approx(burn_j / 3.6e6, rel=1e-9)
    assert res.wear["engaged_frac"] == pytest.approx(0.3, abs=1e-9)
    np.testing.assert_array_equal(res.engaged, p < 780.0)
    assert res.overall_slowdown_frac == 0.0


def test_ramp_limits_give_slowdown_and_burn(square_profile):
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65, "ramp_up_w_per_s": 4200.0,
                                 "ramp_down_w_per_s": 4200.0})
    res = apply_gpu_controls(square_profile, s)
    dt = square_profile.dt_s
    # each iteration: ramp 780 -> 1200 W at 4200 W/s (0.1 s, a multiple of dt): lost compute (420^2 / 2r - 420 dt/2) / 1200
    per_iter = (420.0 ** 2 / (2 * 4200.0) - 420.0 * dt / 2) / 1200.0
    # 20 iterations, the first starts at full power (y[0] = demand)
    assert res.slowdown_detail["train"]["ramp_frac"] == pytest.approx(19 * per_iter / 20.0, rel=1e-9)
    assert res.slowdown_frac["train"] == pytest.approx(res.slowdown_frac["overall"])
    assert np.diff(res.p_gpu_w[0]).max() / dt == pytest.approx(4200.0)


def test_firefly_contention_and_burn(square_profile):
    s = _scenario(firefly={"enabled": True, "trigger_frac": 0.5, "target_frac": 0.8,
                           "latency_s": 0.0, "contention_frac": 0.05})
    res = apply_gpu_controls(square_profile, s)
    assert res.slowdown_frac["train"] == pytest.approx(0.05 * 0.3, rel=1e-9)
    assert res.wear["firefly_kwh_per_gpu"] == pytest.approx((960 - 240) * 0.3 * 20 / 3.6e6)
    assert res.p_gpu_w.min() == pytest.approx(960.0)
    assert any(e["kind"] == "firefly_first_fill" for e in res.events)


def test_power_cap_then_smoothing_chain(square_profile):
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.5},
                  power_cap={"enabled": True, "cap_frac": 0.8, "perf_exponent": 1.0})
    res = apply_gpu_controls(square_profile, s)
    assert res.p_gpu_w.max() == pytest.approx(960.0)
    assert res.p_gpu_w.min() == pytest.approx(600.0)
    assert res.slowdown_detail["train"]["cap_frac"] == pytest.approx(0.7 * 0.25, rel=1e-9)
    # burn is measured against the capped demand
    assert res.p_burn_w.max() == pytest.approx(600.0 - 240.0)


def test_h100_is_left_unsmoothed_and_reported():
    dt = 0.01
    t = np.arange(500) * dt
    p_b, comp = square_wave(t, 1.0, 0.7, 1200.0, 240.0)
    p_h, _ = square_wave(t, 1.0, 0.7, 700.0, 140.0)
    prof = make_profile(np.vstack([p_b, p_h]), dt, compute=np.vstack([comp, comp]),
                        gpus=("gb200", "h100"), jobs=("big", "old"), n_gpus=(72, 288))
    s = scenario_from_dict({"jobs": [{"name": "big", "n_gpus": 72, "gpu": "gb200"},
                                     {"name": "old", "n_gpus": 288, "gpu": "h100"}],
                            "gpu_smoothing": {"enabled": True, "floor_frac": 0.65,
                                              "ramp_up_w_per_s": 3000.0}})
    res = apply_gpu_controls(prof, s)
    np.testing.assert_array_equal(res.p_gpu_w[1], p_h)
    assert res.p_gpu_w[0].min() == pytest.approx(780.0)
    assert res.unsmoothed_jobs == ["old"]
    assert any(e["kind"] == "smoothing_not_supported" and e["job"] == "old" for e in res.events)
    # GPU-weighted overall slowdown: only 'big' slows down
    w = 72 / (72 + 288)
    assert res.slowdown_frac["old"] == 0.0
    assert res.slowdown_frac["overall"] == pytest.approx(w * res.slowdown_frac["big"])


def test_stop_events_and_stop_delay():
    dt = 0.01
    t = np.arange(1000) * dt
    run = t < 5.0 - 1e-9
    p = np.where(run, 1200.0, 150.0)
    prof = make_profile(p, dt, running=run[None], jobs=("train",))
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65, "stop_delay_s": 1.0,
                                 "ramp_down_w_per_s": 1000.0})
    res = apply_gpu_controls(prof, s)
    kinds = {e["kind"]: e["t_s"] for e in res.events}
    assert kinds["stop_delay_start"] == pytest.approx(5.0)
    assert kinds["ramp_down_start"] == pytest.approx(6.0)
    assert kinds["ramp_down_end"] == pytest.approx(6.0 + (780 - 150) / 1000.0 - 0.01, abs=0.011)


@pytest.mark.parametrize("section,needle", [
    ({"gpu_smoothing": {"enabled": True, "floor_frac": 0.95}},
     ["gpu_smoothing.floor_frac", "frac of TDP", "gb200", "0.2 ≤ floor_frac ≤ 0.9"]),
    ({"gpu_smoothing": {"enabled": True, "floor_frac": 0.5, "ramp_down_w_per_s": -100.0}},
     ["gpu_smoothing.ramp_down_w_per_s", "W/s per GPU", "> 0"]),
    ({"firefly": {"enabled": True, "trigger_frac": 0.7, "target_frac": 0.6}},
     ["firefly.target_frac", "frac of TDP", "0.7 ≤ target_frac ≤ 1"]),
    ({"gpu_smoothing": {"enabled": True, "floor_frac": 0.85},
      "power_cap": {"enabled": True, "cap_frac": 0.8}},
     ["gpu_smoothing.floor_frac", "power_cap.cap_frac"]),
    ({"power_cap": {"enabled": True, "cap_frac": 0.1}}, ["power_cap.cap_frac", "idle"]),
    ({"gpu_smoothing": {"enabled": True, "floor_frac": 0.5, "secondary_floor_frac": 0.3}},
     ["activation_window_s"]),
])
def test_bad_settings_name_key_unit_and_range(section, needle):
    with pytest.raises(ScenarioError) as exc:
        _scenario(**section)
    for n in needle:
        assert n in str(exc.value)


def test_unchecked_scenario_still_rejected_by_apply(square_profile):
    s = scenario_from_dict({"jobs": [{"name": "train", "n_gpus": 144, "gpu": "gb200"}],
                            "gpu_smoothing": {"enabled": True, "floor_frac": 0.95}}, check=False)
    with pytest.raises(ScenarioError, match="floor_frac"):
        apply_gpu_controls(square_profile, s)


def test_cli_exits_2_on_floor_above_gpu_max(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[[jobs]]\nname = "a"\nn_gpus = 72\ngpu = "gb200"\n'
                 '[gpu_smoothing]\nenabled = true\nfloor_frac = 0.5\n')
    r = subprocess.run([sys.executable, "-m", "facility", "validate", str(f),
                        "--set", "gpu_smoothing.floor_frac=0.95"], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert "floor_frac" in r.stderr + r.stdout and "0.9" in r.stderr + r.stdout


@pytest.mark.slow
def test_performance_64_groups_360k_steps_smoothing_and_firefly():
    dt = 0.01
    n = 360_000
    t = np.arange(n) * dt
    p, comp = square_wave(t, 1.0, 0.7, 1200.0, 240.0)
    g = 64
    prof = make_profile(np.repeat(p[None], g, 0), dt, compute=np.repeat(comp[None], g, 0),
                        gpus=("gb200",) * g, jobs=("train",) * g)
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65, "ramp_up_w_per_s": 2000.0,
                                 "ramp_down_w_per_s": 2000.0, "stop_delay_s": 2.0},
                  firefly={"enabled": True, "trigger_frac": 0.5, "target_frac": 0.8})
    apply_gpu_controls(prof, s)   # warm up (numba cache)
    t0 = time.perf_counter()
    apply_gpu_controls(prof, s)
    assert time.perf_counter() - t0 < 1.5


def test_secondary_floor_per_gpu_model():
    dt = 0.01
    t = np.arange(800) * dt
    p_g, comp = square_wave(t, 1.0, 0.7, 1200.0, 150.0)
    p_b, _ = square_wave(t, 1.0, 0.7, 1000.0, 125.0)
    prof = make_profile(np.vstack([p_g, p_b]), dt, compute=np.vstack([comp, comp]),
                        gpus=("gb200", "b200"), jobs=("a", "b"))
    s = scenario_from_dict({"jobs": [{"name": "a", "n_gpus": 72, "gpu": "gb200"},
                                     {"name": "b", "n_gpus": 72, "gpu": "b200"}],
                            "gpu_smoothing": {"enabled": True, "floor_frac": 0.8,
                                              "secondary_floor_frac": 0.4,
                                              "activation_window_s": 1.0,
                                              "activation_offset_frac": 0.1}})
    res = apply_gpu_controls(prof, s)
    late = t > 2.0
    # moving average ≈ 0.74 TDP ≥ 0.5 TDP: the secondary floor (40 % of each GPU's TDP) applies
    assert res.p_gpu_w[0, late].min() == pytest.approx(480.0)
    assert res.p_gpu_w[1, late].min() == pytest.approx(400.0)


def test_ramps_only_variant_floor_zero_is_accepted(square_profile):
    # the co-design's fallback: floor 0 = no floor, ramps only (facility.run.orchestrator._ramps_only)
    s = _scenario(gpu_smoothing={"enabled": True, "floor_frac": 0.65, "ramp_up_w_per_s": 4200.0,
                                 "secondary_floor_frac": 0.3, "activation_window_s": 1.0})
    gs = s.gpu_smoothing.model_copy(update={"floor_frac": 0.0, "secondary_floor_frac": None,
                                            "stop_delay_s": 0.0})
    res = apply_gpu_controls(square_profile, s.model_copy(update={"gpu_smoothing": gs}))
    assert res.p_gpu_w.min() == pytest.approx(240.0)
    assert np.diff(res.p_gpu_w[0]).max() / square_profile.dt_s == pytest.approx(4200.0)
