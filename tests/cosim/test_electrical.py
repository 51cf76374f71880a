"""Electrical limits end to end: two feeders, a checkpoint the UPS battery charges into.

The issue's defect: the storage behind the UPSs went to the feeders in proportion to their
load, so during the big job's checkpoint the small job's feeder took most of the charging and
its transformer ran at several hundred percent, unreported. Now the storage goes where there
is headroom, the controllers stay within it, and a run that breaks a limit says so.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from facility.scenario import scenario_from_dict
from facility.config.load import apply_overrides
from facility.electrical.limits import violation_lines
from facility.run.orchestrator import run_scenario
from tests.invariants import check_invariants

TWO_FEEDERS = {
    "schema_version": 1, "name": "two_feeders", "seed": 3,
    "time": {"horizon_s": 30.0, "dt_s": 0.05},
    "jobs": [{"name": "big", "n_gpus": 20000, "gpu": "gb200", "workload": "square", "period_s": 2.0,
              "compute_frac": 0.7, "p_low_frac": 0.3, "checkpoint_every_s": 15, "checkpoint_s": 8},
             {"name": "small", "n_gpus": 2000, "gpu": "h100", "workload": "square", "period_s": 1.0,
              "compute_frac": 0.8, "p_low_frac": 0.3}],
    "ups": {"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 5.0},
    # the controller wants the UPS battery at 90 %: it charges as hard as it is let
    "controller": {"kind": "moving_average", "window_s": 30.0, "soc_target_frac": 0.9, "soc_gain_per_s": 0.005},
    "spec": {"window_s": 5.0, "max_window_swing_mw": 10.0},
}


def two_feeders(*overrides):
    return scenario_from_dict(apply_overrides(TWO_FEEDERS, list(overrides)), "two_feeders")


@pytest.fixture(scope="module")
def limited():
    return run_scenario(two_feeders())


@pytest.fixture(scope="module")
def unlimited():
    return run_scenario(two_feeders("grid.limit_storage=false"))


def test_storage_stays_within_what_the_network_carries(limited):
    res = limited
    check_invariants(res)
    el, comp = res.metrics["electrical"], res.metrics["electrical_compliance"]
    assert comp["compliant"] is True
    assert el["max_lv_trafo_loading_percent"] <= 100.0 and el["max_ups_loading_percent"] <= 100.0
    assert el["max_sub_trafo_loading_percent"] <= 100.0 and el["min_vm_lv_pu"] >= 0.9
    # it was the network that stopped the UPS battery, and the run says when
    sat = [e for e in res.events if e["kind"] == "storage_saturated" and e["storage"] == "ups"]
    assert sat and sat[0]["limit"] == "network"
    ts = res.timeseries
    headroom = min(el["feeder_capacity_mw"], el["site_capacity_mw"]) - ts["p_load_mw"]
    assert np.all(ts["p_ups_mw"] <= np.maximum(headroom, 0.0) + 1e-9)


def test_metric_and_column_names(limited):
    el, ts = limited.metrics["electrical"], limited.timeseries
    for k in ("min_vm_pu", "max_vm_pu", "max_trafo_loading_percent", "losses_mwh",
              "max_sub_trafo_loading_percent", "max_lv_trafo_loading_percent", "max_ups_loading_percent"):
        assert k in el, k
    # max_trafo_loading_percent is the largest of every transformer, per step and overall
    parts = ts[["sub_trafo_loading_percent", "lv_trafo_loading_percent", "bess_trafo_loading_percent"]].max(axis=1)
    np.testing.assert_allclose(ts["trafo_loading_percent"], parts)
    assert el["max_trafo_loading_percent"] == pytest.approx(ts["trafo_loading_percent"].max())
    assert el["max_lv_trafo_loading_percent"] == pytest.approx(ts["lv_trafo_loading_percent"].max())
    assert el["min_vm_pu"] <= el["min_vm_lv_pu"] + 1e-12 and el["min_vm_pu"] <= el["min_vm_mv_pu"] + 1e-12


def test_a_violation_is_a_row_an_event_and_a_warning(unlimited, tmp_path):
    res = unlimited
    check_invariants(res)
    comp = res.metrics["electrical_compliance"]
    assert comp["compliant"] is False and comp["max_lv_trafo_loading_percent"] is False
    assert comp["violation_s"]["max_lv_trafo_loading_percent"] > 1.0
    # the spec compliance is about the utility's limits only: unaffected by the overload
    assert set(res.metrics["compliance"]) == {"max_window_swing_mw", "all_decided", "compliant", "margins"}
    assert set(res.metrics["compliance"]["margins"]) == {"max_window_swing_mw"}
    ev = [e for e in res.events if e["kind"] == "electrical_limit"]
    lv = [e for e in ev if e["limit"] == "max_lv_trafo_loading_percent"]
    assert lv and lv[0]["end_s"] > lv[0]["t_s"] and lv[0]["worst"] > 100.0
    assert "grid.max_trafo_loading_percent = 100 %" in lv[0]["detail"]
    lines = violation_lines(res.metrics, res.scenario.grid)
    assert any(line.startswith("feeder transformer loading") for line in lines)
    from facility.report import write_outputs

    write_outputs(res, tmp_path / "out", plots=False)
    page = (tmp_path / "out" / "report.html").read_text()
    assert "Electrical limits violated" in page and "feeder transformer loading" in page


def test_cli_warns_at_the_end(tmp_path, capsys):
    from facility.cli import main

    f = tmp_path / "s.toml"
    import tomli_w

    f.write_bytes(tomli_w.dumps(TWO_FEEDERS).encode())
    rc = main(["run", str(f), "--out", str(tmp_path / "o"), "--no-plots", "--set", "grid.limit_storage=false",
               "--set", "time.horizon_s=10"])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"warning: electrical limits violated .*feeder transformer loading \d+(\.\d+)? % > 100 %", out)


def test_report_plots_and_formats(limited, tmp_path):
    from facility.report import write_outputs

    write_outputs(limited, tmp_path / "out", plots=True)
    out = tmp_path / "out"
    for png in ("power.png", "limits.png", "spectrum.png", "storage.png", "electrical.png"):
        assert (out / png).stat().st_size > 10_000, png
    page = (out / "report.html").read_text()
    assert "<h2>Electrical limits</h2>" in page
    assert not re.search(r"\d\.\d+e[+-]\d\d", page)  # no 3.16879e+06
    # saturated: yes is a warning (amber), never green
    row = re.search(r"<tr[^>]*><td[^>]*>saturated</td>(.*?)</tr>", page).group(0)
    assert 'class="ok"' not in row and 'class="warn">yes' in row
