"""A report that reads right: recovered controller events are not worded as failures, every
unit names its technology (or that it has none), one duration unit per report, and each
limit's margin (value, limit, margin, unit) in metrics.json, the report and the CLI line."""

import json

import pytest

from facility.scenario import scenario_from_dict
from facility.metrics import limit_margins, margin_of, margins_text
from facility.report.design import NO_TECHNOLOGY, design_units, duration_unit, technology_rows
from facility.report.events import RECOVERABLE, event_text, events_summary

SLACK = {"t_s": 12.0, "kind": "mpc_slack",
         "detail": "no plan over this horizon kept every limit's hard row (load history or storage): "
                   "planned with penalized slacks, the least violation"}
FAILURE_WORDS = ("cannot be met", "fail", "violat")


def test_a_recovered_event_in_a_compliant_run_says_what_happened_and_that_it_held():
    text = event_text(SLACK, compliant=True)
    assert "penalized slacks" in text and text.endswith("the limits held (the run is compliant)")
    assert not any(w in text.lower() for w in FAILURE_WORDS)
    # in a run that is not compliant it points at the table of what did not hold
    assert "see the compliance table" in event_text(SLACK, compliant=False)
    # an event that is not a controller's recovery keeps its own detail
    other = {"t_s": 1.0, "kind": "grid_event", "detail": "sag to 0.5 pu"}
    assert event_text(other, compliant=True) == "sag to 0.5 pu"
    fallback = {"t_s": 3.0, "kind": "mpc_fallback", "detail": "the filter controller takes this re-plan "
                                                             "interval (late: the re-plan took 2 s, deadline 1 s)"}
    assert "(late: the re-plan took 2 s, deadline 1 s)" in event_text(fallback, compliant=True)


def test_events_summary_counts_the_recovered_events_by_kind():
    events = [SLACK, dict(SLACK, t_s=20.0), {"t_s": 30.0, "kind": "mpc_descent", "detail": "x"},
              {"t_s": 0.0, "kind": "warning", "detail": "y"}]
    s = events_summary(events, compliant=True)
    assert s.startswith("Controller events: 2 mpc_slack, 1 mpc_descent;") and "every limit held" in s
    assert "not compliant" in events_summary(events, compliant=False)
    assert events_summary([{"kind": "warning"}], compliant=True) == ""
    assert set(RECOVERABLE) >= {"mpc_slack", "mpc_descent", "mpc_fallback", "mpc_soc_band_dropped"}


def test_every_design_row_names_a_technology_its_cost_year_and_unverified_figures():
    s = scenario_from_dict({"jobs": [{"n_gpus": 1000}],
                            "rack_storage": {"enabled": True, "p_rated_mw": 1.0, "e_rated_mwh": 0.01,
                                             "cost_usd_per_kw": 100.0},
                            "bess": {"enabled": True, "technologies": ["supercap", "lfp_1h"],
                                     "unit_p_rated_mw": {"supercap": 2.0, "lfp_1h": 2.0},
                                     "unit_e_rated_mwh": {"supercap": 0.02, "lfp_1h": 2.0}}})
    sizing = {"rack_storage": {"p_rated_mw_opt": 1.0, "e_rated_mwh_opt": 0.01},
              "bess": {"supercap": {"p_rated_mw_opt": 2.0, "e_rated_mwh_opt": 0.02},
                       "lfp_1h": {"p_rated_mw_opt": 2.0, "e_rated_mwh_opt": 2.0}}}
    units = design_units(sizing, s)
    rows = {t["name"]: t for t in technology_rows(units, s)}
    assert rows["rack_storage"]["technology"] == NO_TECHNOLOGY and rows["rack_storage"]["unverified"] is None
    assert rows["bess.supercap"]["technology"] == "supercap" and rows["bess.supercap"]["cost_year"] == 2008
    assert rows["bess.lfp_1h"]["cost_year"] == 2022 and "cycle_life" in rows["bess.lfp_1h"]["unverified"]
    # sizing.json as size writes it: one flat entry per unit, "<storage>.<technology>"
    flat = {"bess.supercap": sizing["bess"]["supercap"], "bess.lfp_1h": sizing["bess"]["lfp_1h"]}
    assert {u["name"]: u["technology"] for u in design_units(flat, s)} == {"bess.supercap": "supercap",
                                                                          "bess.lfp_1h": "lfp_1h"}
    # one duration unit for all: 36 s and 3,600 s, never "36 s" beside "1 h"
    assert duration_unit(u["duration_h"] for u in units) == ("s", 3600.0)


def test_a_design_row_takes_its_technology_from_the_scenarios_library(tmp_path):
    """A hybrid unit of a technology given by path (``bess.mine``): its row finds the file's
    technology on ``scenario.library`` by the unit's reference, not by a library look-up of "mine"."""
    from facility.config.technology import load_technology

    (tmp_path / "mine.toml").write_text("\n".join(
        f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"'
        for k, v in load_technology("supercap").model_dump().items() if k not in ("name", "marks")))
    s = scenario_from_dict({"jobs": [{"n_gpus": 1000}],
                            "bess": {"enabled": True, "technologies": ["lfp_1h", "./mine.toml"],
                                     "unit_p_rated_mw": {"lfp_1h": 2.0, "mine": 2.0},
                                     "unit_e_rated_mwh": {"lfp_1h": 2.0, "mine": 0.02}}}, base_dir=tmp_path)
    sizing = {u: {"p_rated_mw_opt": 2.0, "e_rated_mwh_opt": 0.02} for u in s.storage_units()}
    rows = {t["name"]: t for t in technology_rows(design_units(sizing, s), s)}
    assert rows["bess.mine"]["technology"] == "mine" and rows["bess.mine"]["cost_year"] == 2008
    # a file of one's own without [marks]: every figure unverified (not "the scenario's")
    assert "cost_usd_per_kwh" in rows["bess.mine"]["unverified"]
    assert rows["bess.lfp_1h"]["cost_year"] == 2022 and "cycle_life" in rows["bess.lfp_1h"]["unverified"]


def test_limit_margins_in_the_limits_unit():
    from facility.config.schema import SpecBand, SpecConfig

    spec = SpecConfig(max_window_swing_mw=10.0, max_ramp_mw_per_min=20.0,
                      bands=[SpecBand(name="low", min_hz=0.1, max_hz=5.0, max_peak_mw=1.0)])
    metrics = {"pcc": {"max_window_swing_mw": 9.5, "max_ramp_mw_per_min": 21.0, "band_peaks_mw": {"low": 0.25}},
               "compliance": {"max_window_swing_mw": True, "max_ramp_mw_per_min": False, "band_low": True,
                              "all_decided": True, "compliant": False}}
    m = limit_margins(metrics, spec)
    assert m["max_window_swing_mw"] == {"value_mw": 9.5, "limit_mw": 10.0, "margin_mw": 0.5}
    assert m["max_ramp_mw_per_min"] == {"value_mw_per_min": 21.0, "limit_mw_per_min": 20.0,
                                        "margin_mw_per_min": -1.0}     # violated by 1 MW/min
    assert margin_of(m["band_low"]) == (0.25, 1.0, 0.75, "MW")
    metrics["compliance"]["margins"] = m
    assert "max_ramp_mw_per_min 21 of 20 MW/min (margin -1 MW/min)" in margins_text(metrics["compliance"])


def test_a_run_carries_the_margins_in_metrics_report_and_cli(tmp_path, tiny_scenario_dict, capsys):
    import tomli_w

    from facility.cli import main

    f = tmp_path / "tiny.toml"
    tiny_scenario_dict["time"]["horizon_s"] = 10.0
    f.write_text(tomli_w.dumps(tiny_scenario_dict))
    assert main(["run", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    m = json.loads((tmp_path / "out" / "metrics.json").read_text())
    comp = m["compliance"]
    entry = comp["margins"]["max_window_swing_mw"]
    assert isinstance(comp["max_window_swing_mw"], bool) and comp["compliant"] == comp["max_window_swing_mw"]
    assert entry["value_mw"] == pytest.approx(m["pcc"]["max_window_swing_mw"]) and entry["limit_mw"] == 1.0
    assert entry["margin_mw"] == pytest.approx(1.0 - entry["value_mw"])
    assert f"max_window_swing_mw {entry['value_mw']:.4g} of 1 MW (margin {entry['margin_mw']:.3g} MW)" in out
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<th>unit</th><th>limit value</th><th>raw</th><th>pcc</th><th>margin</th>" in html
