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


def test_size_output_and_report_lead_with_the_design(tmp_path, capsys):
    """The first line of `size` and the report's first block: P, E, duration, annual cost and
    the controller that verified the design, read from sizing.json."""
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    p, e = js["bess"]["p_rated_mw_opt"], js["bess"]["e_rated_mwh_opt"]
    assert first.startswith(f"design: bess {p:.4g} MW / {e:.4g} MWh, {e / p:.3g} h; annual cost ")
    assert f"{js['cost']['total_usd_per_year']:,.0f} USD/yr" in first
    assert first.endswith("verified by controller 'optimal': compliant yes")
    html = (tmp_path / "out" / "report.html").read_text()
    head = html[html.index("<h1>"):html.index("Compliant with the utility spec")]
    assert "<h2>Design</h2>" in head and f"{p:.4g}" in head and "Verified by controller <b>optimal</b>" in head


def test_size_cli_exit_3_with_diagnosis(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=0.01))
    assert main(["size", str(f), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "max_window_swing_mw" in err and "MW" in err


def test_size_verifies_what_it_sized_for(tmp_path, capsys):
    """The lossless LP meets the swing limit on the site power; the verification adds network
    and UPS losses. `size` re-sizes with the margin those losses call for until the
    verification run meets the limit, and reports the rounds."""
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert js["verified"] is True and metrics["compliance"]["max_window_swing_mw"] is True
    assert metrics["pcc"]["max_window_swing_mw"] <= 0.2 + 1e-6
    hist = js["limit_margin_history"]
    assert js["verify_runs"] == len(hist) >= 2 and hist[0] == 0.0
    assert all(b > a for a, b in zip(hist, hist[1:])) and js["limit_margin_frac"] == hist[-1]
    assert f"verified after {len(hist)} size-and-verify rounds" in out


def test_size_exit_3_with_a_computed_margin_when_rounds_run_out(tmp_path, capsys):
    import re

    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    rc = main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots", "--set", "optimize.max_verify_runs=1"])
    err = capsys.readouterr().err
    assert rc == 3
    m = re.search(r"--set optimize\.limit_margin_frac=([0-9.]+)", err)
    assert m and "max_window_swing_mw" in err and (tmp_path / "out" / "sizing.json").is_file()
    margin = float(m.group(1))
    assert 0.05 < margin < 0.9
    # the advice is what the losses call for: following it once, the verification passes
    rc = main(["size", str(f), "--out", str(tmp_path / "out2"), "--no-plots", "--set", "optimize.max_verify_runs=1",
               "--set", f"optimize.limit_margin_frac={margin}"])
    assert rc == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "out2" / "sizing.json").read_text())["verified"] is True


def test_size_with_a_closed_loop_controller_verifies_once(tmp_path, capsys):
    """With another controller than 'optimal' the verification runs that controller; a limit it
    breaks is not the LP's: one round, verified = false, exit 0 and a note saying so."""
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0).replace('kind = "optimal"', 'kind = "moving_average"\nwindow_s = 5.0'))
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert js["verify_runs"] == 1 and js["limit_margin_history"] == [0.0]
    # a 5 s moving average on a 4 s iteration leaves most of the swing: the controller fails
    assert js["verified"] is False and metrics["compliance"]["compliant"] is False
    assert "controller.kind = 'moving_average', not the LP's dispatch" in capsys.readouterr().out
