"""`facility size` exit codes: 0 with sizing.json, 3 with a diagnosis when the limits cannot be met."""

import json

from facility.cli import main

SCENARIO = """
schema_version = 1
name = "tiny_size"
[time]
horizon_s = 120
dt_s = 0.5
[[jobs]]
name = "job"
n_gpus = 2000
gpu = "h100"
workload = "square"
period_s = 4.0
compute_frac = 0.75
p_low_frac = 0.3
start_s = 30
[bess]
enabled = true
extendable = true
max_p_rated_mw = {pmax}
max_e_rated_mwh = 1.0
cost_usd_per_kw = 100.0
cost_usd_per_kwh = 300.0
[spec]
window_s = 5.0
max_window_swing_mw = 0.2
[controller]
kind = "optimal"
"""


def test_size_cli_writes_sizing_json(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    assert main(["size", str(f), "--out", str(tmp_path / "out")]) == 0
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    assert js["bess"]["p_rated_mw_opt"] > 0 and js["solver_status"] == "optimal"
    for key in ("objective_usd", "build_s", "solve_s", "n_variables", "n_constraints"):
        assert key in js
    assert js["method"] in ("full", "periodic")
    assert js["lower_bound_usd"] <= js["objective_usd"] * (1 + 1e-9) and 0 <= js["gap_frac"] <= 1e-4


def test_size_cli_exit_3_with_diagnosis(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=0.01))
    assert main(["size", str(f), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "max_window_swing_mw" in err and "MW" in err
