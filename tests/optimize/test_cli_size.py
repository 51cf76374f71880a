"""`facility size` exit codes: 0 with sizing.json, 3 with a diagnosis when the limits cannot be met."""

import json

import pytest

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
    dur = f"{e / p * 3600:.3g} s" if e / p < 0.1 else f"{e / p:.3g} h"
    # the section names no technology: the line says its figures are the scenario's own
    assert first.startswith(f"design: bess (own figures, no technology) {p:.4g} MW / {e:.4g} MWh, {dur}; "
                            f"annual cost ")
    assert f"{js['cost']['total_usd_per_year']:,.0f} USD/yr" in first
    assert first.endswith("verified by perfect-foresight dispatch (controller.kind = 'optimal'): compliant yes")
    html = (tmp_path / "out" / "report.html").read_text()
    head = html[html.index("<h1>"):html.index("Compliant with the utility spec")]
    assert "<h2>Design</h2>" in head and f"{p:.4g}" in head and "Verified by <b>perfect-foresight dispatch (controller.kind = &#x27;optimal&#x27;)</b>" in head


def test_size_cli_exit_3_with_diagnosis(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=0.01))
    assert main(["size", str(f), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert "max_window_swing_mw" in err and "MW" in err


def test_size_sizes_through_the_network(tmp_path, capsys):
    """The LP sees the network's losses (sequential LP on the PCC power the power flow gives):
    the verification run meets the swing limit the LP sized for in one size-and-verify round,
    with the LP's PCC power within the stated tolerance of the power flow's, and the design is
    the one the verification network carries (the BESS transformer rated for the sized P)."""
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert js["verified"] is True and metrics["compliance"]["max_window_swing_mw"] is True
    assert metrics["pcc"]["max_window_swing_mw"] <= 0.2 + 1e-9
    assert js["verify_runs"] == 1 and js["limit_margin_history"] == [0.0] and js["margin_loop"] is False
    loss = js["losses"]
    assert loss["converged"] and loss["residuals_mw"][-1] <= loss["tol_mw"] == pytest.approx(0.2e-3)
    assert 1.0 < loss["gain_mw_per_mw"] < 1.05 and 1 <= loss["rounds"] <= 5
    assert js["verified_by"] == "optimal" and "perfect-foresight dispatch" in out.splitlines()[0]
    assert js["objective_usd_per_year"] == pytest.approx(js["cost"]["total_usd_per_year"])
    assert "last resort" not in out


def test_size_exit_3_with_a_computed_margin_when_the_loss_rounds_run_out(tmp_path, capsys):
    """One loss round (no convergence) and no margin round: the verification breaks the swing
    limit by what the first linearization missed; exit 3 with the margin that excess calls for,
    and following it the verification passes (the margin loop, the last resort)."""
    import re

    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0))
    one = ["--set", "optimize.max_verify_runs=1", "--set", "optimize.max_loss_rounds=1", "--set", "optimize.loss_tol_frac=1e-4"]
    rc = main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots", *one])
    err = capsys.readouterr().err
    assert rc == 3
    m = re.search(r"--set optimize\.limit_margin_frac=([0-9.]+)", err)
    assert m and "max_window_swing_mw" in err and (tmp_path / "out" / "sizing.json").is_file()
    margin = float(m.group(1))
    assert 0.01 < margin < 0.9
    rc = main(["size", str(f), "--out", str(tmp_path / "out2"), "--no-plots", *one,
               "--set", f"optimize.limit_margin_frac={margin}"])
    assert rc == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "out2" / "sizing.json").read_text())["verified"] is True


def test_size_never_exits_0_with_a_controller_that_breaks_the_limits(tmp_path, capsys):
    """With another controller than 'optimal' the verification runs that controller; where it
    breaks a limit for every design the search tries, exit 3 naming the controller, the limit
    and the factors tried (sizing.json written with verified = false)."""
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(pmax=100.0).replace('kind = "optimal"', 'kind = "moving_average"\nwindow_s = 5.0'))
    rc = main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots", "--set", "optimize.max_resize_runs=2"])
    err = capsys.readouterr().err
    assert rc == 3
    assert "controller.kind = 'moving_average'" in err and "max_window_swing_mw" in err and "bess P x1, E x1; bess P x" in err
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    assert js["verified"] is False and js["verified_by"] == "moving_average"
    tried = js["resize"]["tried"]
    assert tried[0]["scale"] == 1.0 and tried[1]["scale"] == pytest.approx(1.5)
    # what ran out grew (by 1.5), the rest stayed; both ran out: one at a time (P when level)
    sat = tried[0]["saturated"]["bess"]
    gp, ge = sat["power"] > 0, sat["soc"] > 0
    want = {(True, True): (1.5, 1.0), (True, False): (1.5, 1.0), (False, True): (1.0, 1.5),
            (False, False): (1.5, 1.5)}[(gp, ge)]
    assert (tried[1]["p_scale"]["bess"], tried[1]["e_scale"]["bess"]) == pytest.approx(want)
    assert js["foresight"]["bess"]["p_rated_mw_opt"] > 0
