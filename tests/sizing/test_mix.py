"""The mix through the whole tool (facility.sizing.mix): scenario levers -> LP -> GPU plan realized by
the simulator's GPU controls, the annual cost and the verification in sizing.json."""

import json

import numpy as np
import pytest

from facility.cli import main
from facility.scenario import load_scenario
from facility.errors import ScenarioError
from facility.sizing.mix import held_mask
from facility.sizing.pipeline import size_scenario

SCENARIO = """
schema_version = 1
name = "mix_square"
[time]
horizon_s = 60
dt_s = 0.05
[[jobs]]
name = "train"
n_gpus = 50000
gpu = "gb200"
workload = "square"
period_s = 2.0
compute_frac = 0.7
p_low_frac = 0.3
start_s = -60
[site]
non_gpu_frac = 0.0
pue = 1.0
[rack_storage]
enabled = true
extendable = true
max_p_rated_mw = 200.0
max_e_rated_mwh = 1.0
eff_charge_frac = 0.97
eff_discharge_frac = 0.97
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 2000.0
[spec]
window_s = 5.0
max_window_swing_mw = 10.0
[grid]
enabled = false
[controller]
kind = "optimal"   # the LP's lever plan replayed: these tests check its realization
[optimize]
annualize = true
lifetime_years = 10
levers = ["storage", "floor"]
"""


def scenario(tmp_path, *overrides):
    f = tmp_path / "mix.toml"
    f.write_text(SCENARIO)
    return f, load_scenario(f, list(overrides))


def test_size_cli_floor_lever_realized_by_the_gpu_floor(tmp_path, capsys):
    # 60 MW at TDP, 18 MW in communication: a 10 MW swing needs the low phase at 50 MW, F = 5/6
    f, _ = scenario(tmp_path)
    out = tmp_path / "out"
    assert main(["size", str(f), "--out", str(out), "--no-plots",
                 "--set", "optimize.energy_price_usd_per_mwh=0.01",
                 "--set", "rack_storage.cost_usd_per_kw=10000"]) == 0
    text = capsys.readouterr().out
    assert "GPU levers: train: floor 0.833 x TDP" in text and "USD/yr" in text
    js = json.loads((out / "sizing.json").read_text())
    assert js["levers"]["train"]["floor_frac"] == pytest.approx(5 / 6, abs=1e-9)
    assert js["mix"]["storages"]["rack_storage"]["p_rated_mw"] == pytest.approx(0.0, abs=1e-6)
    assert js["verification"]["compliant"] and "train: GPU floor 0.8333 x TDP" in js["verification"]["realized_by"]
    # the floor burns (5/6 - 0.3) x 60 MW in 30 % of the time, all year, at 0.01 USD/MWh
    burn_mwh_y = (5 / 6 - 0.3) * 60.0 * 0.3 * 8760
    assert js["mix"]["jobs"]["train"]["burned_mwh_per_year"] == pytest.approx(burn_mwh_y, rel=1e-6)
    assert js["cost"]["total_usd_per_year"] == pytest.approx(0.01 * burn_mwh_y, rel=1e-6)
    m = json.loads((out / "metrics.json").read_text())
    assert m["pcc"]["max_window_swing_mw"] == pytest.approx(10.0, abs=1e-6)
    assert "Cost of the design" in (out / "report.html").read_text()


def test_burn_lever_with_a_lagging_cooling_plant_matches_the_simulator(tmp_path):
    _, s = scenario(tmp_path, 'optimize.levers=["storage","burn"]', "site.cooling_tau_s=20",
                    "site.pue=1.25", "site.non_gpu_frac=0.2", "optimize.energy_price_usd_per_mwh=0.01",
                    "rack_storage.cost_usd_per_kw=10000")
    sol, res = size_scenario(s, plots=False)
    ts = res.timeseries
    lossless = ts["p_load_mw"].to_numpy() + ts["p_rack_storage_mw"].to_numpy()
    np.testing.assert_allclose(sol.p_pcc_mw, lossless, atol=1e-8)
    assert sol.levers["train"]["burn_mw"].max() > 1.0 and res.compliant
    assert res.sizing["verification"]["realized_by"][-1] == "train: planned burn (dummy load)"


def test_cap_lever_slowdown_as_the_simulator_measures_it(tmp_path):
    # storage dear, slowdown cheap: the cap clips the compute phase to 18 + 10 MW
    _, s = scenario(tmp_path, 'optimize.levers=["storage","cap"]', "optimize.slowdown_usd_per_gpu_h=0.001",
                    "rack_storage.cost_usd_per_kw=10000")
    sol, res = size_scenario(s, plots=False)
    cap = sol.levers["train"]["cap_frac"]
    assert cap == pytest.approx(28.0 / 60.0, abs=1e-9)
    assert res.sizing["mix"]["jobs"]["train"]["slowdown_frac"] == pytest.approx(
        res.metrics["training"]["slowdown_frac"], rel=1e-9)
    assert res.metrics["training"]["slowdown_frac"] == pytest.approx(0.7 * ((1 / cap) ** 0.5 - 1), rel=1e-6)
    assert res.compliant and res.sizing["cost"]["slowdown_usd_per_year"] > 0


def test_levers_that_the_lp_cannot_represent_are_refused(tmp_path):
    _, s = scenario(tmp_path, "gpu_smoothing.enabled=true", "gpu_smoothing.ramp_up_w_per_s=1000")
    with pytest.raises(ScenarioError, match="ramp_up_w_per_s"):
        size_scenario(s, plots=False)
    _, s = scenario(tmp_path, "optimize.annualize=false")
    with pytest.raises(ScenarioError, match="annualize"):
        size_scenario(s, plots=False)
    _, s = scenario(tmp_path, 'optimize.levers=["floor"]')
    with pytest.raises(ScenarioError, match="extendable"):
        size_scenario(s, plots=False)


def test_held_mask_follows_the_stop_delay():
    running = np.array([[False, True, True, False, False, False, True, False]])
    np.testing.assert_array_equal(held_mask(running, 2.0, 1.0),
                                  [[False, True, True, True, True, False, True, True]])
    np.testing.assert_array_equal(held_mask(running, 0.0, 1.0), running)
