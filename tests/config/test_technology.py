"""The storage technology library and the keys that take their defaults from it."""

import tomllib

import pytest

from facility.config.library import MODELS_DIR
from facility.config.load import dump_scenario_toml
from facility.scenario import scenario_from_dict
from facility.config.technology import (FILLED_KEYS, degradation_usd_per_mwh, list_technologies,
                                        load_technology)
from facility.errors import ScenarioError

BASE = {"jobs": [{"n_gpus": 1000}]}


def _bess(**kw):
    d = {"enabled": True, "extendable": True, "max_p_rated_mw": 10.0, "max_e_rated_mwh": 100.0}
    d.update(kw)
    return scenario_from_dict({**BASE, "bess": d})


def test_library_has_the_promised_technologies_each_with_a_source_and_ordered_bounds():
    names = set(list_technologies())
    assert {"lfp_1h", "lfp_2h", "lfp_4h", "rack_bbu", "supercap", "flywheel"} <= names
    for n in names:
        t = load_technology(n)
        assert t.source and t.min_duration_h <= t.max_duration_h and 1990 <= t.cost_year <= 2100
    # the classes order as their names say: seconds, minutes, hours
    d = {n: load_technology(n).min_duration_h for n in ("supercap", "rack_bbu", "lfp_1h", "lfp_2h", "lfp_4h")}
    assert d["supercap"] < d["rack_bbu"] < d["lfp_1h"] < d["lfp_2h"] < d["lfp_4h"]
    # a supercapacitor's million cycles are cheaper per MWh than a battery's thousands
    deg = {n: degradation_usd_per_mwh(load_technology(n).cost_usd_per_kwh, load_technology(n).cycle_life,
                                      load_technology(n).cycle_depth_frac) for n in ("supercap", "lfp_2h")}
    assert deg["supercap"] < deg["lfp_2h"]


def test_technology_fills_unset_keys_and_the_users_values_win():
    s = _bess(technology="lfp_2h", cost_usd_per_kw=100.0, eff_charge_frac=0.99)
    t = load_technology("lfp_2h")
    b = s.bess
    assert b.cost_usd_per_kw == 100.0 and b.eff_charge_frac == 0.99   # the user's
    assert b.cost_usd_per_kwh == t.cost_usd_per_kwh and b.eff_discharge_frac == t.eff_discharge_frac
    assert (b.min_duration_h, b.max_duration_h) == (t.min_duration_h, t.max_duration_h)
    assert b.cycle_life == t.cycle_life and b.fixed_om_usd_per_kw_year == t.fixed_om_usd_per_kw_year
    # degradation from the energy part's replacement over its rated throughput
    assert b.degradation_usd_per_mwh == pytest.approx(1000 * t.cost_usd_per_kwh / (t.cycle_life * t.cycle_depth_frac))
    # a user's energy cost moves the derived degradation with it
    assert _bess(technology="lfp_2h", cost_usd_per_kwh=200.0).bess.degradation_usd_per_mwh == pytest.approx(
        1000 * 200.0 / (t.cycle_life * t.cycle_depth_frac))


def test_resolved_scenario_says_where_each_key_came_from_and_loads_back_the_same():
    s = _bess(technology="lfp_2h", cost_usd_per_kw=100.0)
    text = dump_scenario_toml(s)
    head = text[text.index("[bess]"):].splitlines()[1:3]
    assert head[0].startswith("# from technology lfp_2h (models/storage/lfp_2h.toml): ")
    filled = head[0].split(": ", 1)[1].split(", ")
    assert "cost_usd_per_kw" not in filled and "cost_usd_per_kwh" in filled
    assert set(filled) == set(FILLED_KEYS) - {"cost_usd_per_kw"}
    assert head[1].startswith("# derived as 1000 cost_usd_per_kwh") and head[1].endswith("degradation_usd_per_mwh")
    again = scenario_from_dict(tomllib.loads(text))
    assert again.bess.model_dump() == s.bess.model_dump()


def test_a_technology_file_given_by_path(tmp_path):
    t = (tmp_path / "mine.toml")
    t.write_text("\n".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"'
                             for k, v in load_technology("supercap").model_dump().items() if k not in ("name", "marks")))
    s = scenario_from_dict({**BASE, "bess": {"enabled": True, "technology": "./mine.toml",
                                             "p_rated_mw": 10.0, "e_rated_mwh": 0.01}}, base_dir=tmp_path)
    assert s.bess.cost_usd_per_kwh == load_technology("supercap").cost_usd_per_kwh
    # a file of one's own without [marks]: every figure unverified, none claimed checked
    mine = load_technology(str(t))
    assert mine.figures_by_mark() == {"verified": [], "unverified": list(FILLED_KEYS)}


def test_every_library_figure_carries_a_mark_and_a_mark_names_a_figure(tmp_path):
    for n in list_technologies():
        data = tomllib.loads((MODELS_DIR / "storage" / f"{n}.toml").read_text())
        assert set(data["marks"]) == set(FILLED_KEYS), n
        assert set(data["marks"].values()) <= {"verified", "unverified"}, n
    bad = tmp_path / "bad.toml"
    bad.write_text((MODELS_DIR / "storage" / "lfp_1h.toml").read_text() + 'cost_usd_per_mw = "verified"\n')
    with pytest.raises(ScenarioError, match="marks names cost_usd_per_mw, not a figure"):
        load_technology(str(bad))


def test_lfp_carries_atb_2024_moderate_2022_and_the_bbu_ocp_rev_1_4():
    """The checked figures (docs/storage.md, "The library")."""
    for n in ("lfp_1h", "lfp_2h", "lfp_4h"):
        t = load_technology(n)
        assert (t.cost_usd_per_kw, t.cost_usd_per_kwh, t.cost_year) == (363.01, 390.93, 2022)
        assert (t.fixed_om_usd_per_kw_year, t.fixed_om_usd_per_kwh_year) == (9.08, 9.77)
        assert t.round_trip_frac == pytest.approx(0.85, abs=2e-3) and t.calendar_life_years == 15
        for k in ("cost_usd_per_kw", "cost_usd_per_kwh", "cost_year", "fixed_om_usd_per_kw_year",
                  "fixed_om_usd_per_kwh_year", "eff_charge_frac", "calendar_life_years"):
            assert t.mark(k) == "verified", (n, k)
        assert t.mark("cycle_life") == "unverified"        # no checked source
    # the ATB-calc 2-h and 4-h overnight costs from the split (1,144.86 and 1,926.72 USD/kW)
    t = load_technology("lfp_2h")
    assert t.cost_usd_per_kw + 2 * t.cost_usd_per_kwh == pytest.approx(1144.86, abs=0.02)
    assert t.cost_usd_per_kw + 4 * t.cost_usd_per_kwh == pytest.approx(1926.72, abs=0.02)
    # ATB-calc's 2-h / 4-h fixed O&M (28.62 / 48.17 USD/kW-yr) from the split
    assert t.fixed_om_usd_per_kw_year + 2 * t.fixed_om_usd_per_kwh_year == pytest.approx(28.62, abs=0.01)
    assert t.fixed_om_usd_per_kw_year + 4 * t.fixed_om_usd_per_kwh_year == pytest.approx(48.17, abs=0.02)
    bbu = load_technology("rack_bbu")
    assert bbu.min_duration_h * 3600 == pytest.approx(90.0) and bbu.mark("min_duration_h") == "verified"
    assert "Rev 1.4" in bbu.source and "2023" in bbu.source
    assert bbu.mark("cost_usd_per_kw") == "unverified"


def test_no_storage_file_cites_a_source_that_lacks_its_figures():
    """PNNL-33283 has no flywheel or ultracapacitor chapter: supercap and flywheel cite their own."""
    for n in ("supercap", "flywheel"):
        text = (MODELS_DIR / "storage" / f"{n}.toml").read_text()
        t = load_technology(n)
        assert "PNNL-33283" not in t.source, n
        # the file may say that PNNL-33283 is not its source, never cite it
        assert all("not a source" in ln for ln in text.splitlines() if "PNNL-33283" in ln), n
    assert "Centre for Low Carbon Futures" in load_technology("supercap").source
    assert "Danish Energy Agency" in load_technology("flywheel").source


def test_a_hybrid_of_different_cost_years_says_so():
    from facility.config.technology import cost_year_note

    assert cost_year_note({"bess.supercap": 2008, "bess.lfp_1h": 2022}) == (
        "costs in different dollar years, compared as given (no escalation to one year): "
        "bess.supercap USD of 2008, bess.lfp_1h USD of 2022")
    assert cost_year_note({"bess.lfp_1h": 2022, "bess.lfp_2h": 2022}) == ""


def test_validate_says_when_storage_costs_are_in_different_dollar_years(capsys):
    from facility.cli import main
    from tests.conftest import SCENARIOS

    # rack_storage: supercap (2008), bess: lfp_1h (2022)
    assert main(["validate", str(SCENARIOS / "sizing_rack_and_bess.toml")]) == 0
    err = capsys.readouterr().err
    assert "compared as given (no escalation to one year): rack_storage USD of 2008, bess USD of 2022" in err


@pytest.mark.parametrize("bess, match", [
    ({"technology": "lfp_3h"}, r"unknown storage technology; available: .*lfp_2h.*supercap"),
    ({"technology": "lfp_2h", "technologies": ["supercap"]}, "either technology .* or technologies"),
    ({"technologies": ["supercap", "nope"]}, "unknown storage technology"),
    ({"technologies": ["supercap", "supercap"]}, "twice"),
    ({"technologies": ["supercap"], "extendable": False, "p_rated_mw": 1.0, "e_rated_mwh": 0.001},
     r"unit_p_rated_mw = None: a fixed hybrid .* keyed supercap; or set bess.extendable = true"),
    ({"technologies": ["supercap", "lfp_1h"], "extendable": False,
      "unit_p_rated_mw": {"supercap": 1.0}, "unit_e_rated_mwh": {"supercap": 0.001, "lfp_1h": 1.0}},
     r"unit_p_rated_mw = \{'supercap': 1.0\}: .* keyed supercap, lfp_1h"),
    ({"technologies": ["supercap", "lfp_1h"], "extendable": False,
      "unit_p_rated_mw": {"supercap": 1.0, "lfp_1h": 1.0}, "unit_e_rated_mwh": {"supercap": 0.001, "lfp_1h": 0.5}},
     r"bess.lfp_1h: e_rated_mwh / p_rated_mw = 0.5 MWh / 1 MW = 0.5 h lies outside .*\[1, 2\] h"),
    ({"technologies": ["supercap", "lfp_1h"], "extendable": False, "p_rated_mw": 3.0,
      "unit_p_rated_mw": {"supercap": 1.0, "lfp_1h": 1.0}, "unit_e_rated_mwh": {"supercap": 0.001, "lfp_1h": 1.0}},
     r"bess.p_rated_mw = 3 MW is not the sum of its units' ratings \(2 MW\)"),
    ({"unit_p_rated_mw": {"supercap": 1.0}, "p_rated_mw": 1.0, "e_rated_mwh": 1.0},
     "unit ratings need bess.technologies"),
    ({"min_duration_h": 2.0, "max_duration_h": 1.0}, "min_duration_h = 2 h is above"),
    ({"technology": "lfp_4h", "max_e_rated_mwh": 1.0, "min_p_rated_mw": 1.0}, "needs more energy than max_e_rated_mwh"),
])
def test_bad_technology_keys_are_clear_errors(bess, match):
    with pytest.raises(ScenarioError, match=match):
        _bess(**bess)


def test_life_metrics_from_the_technology():
    import numpy as np

    from facility.storage import StorageParams, storage_metrics_from_series

    s = scenario_from_dict({**BASE, "bess": {"enabled": True, "technology": "lfp_1h", "p_rated_mw": 1.0,
                                             "e_rated_mwh": 1.0}})
    params = StorageParams.from_config("bess", s.bess)
    # one hour: discharge 0.8 MWh (0.8 equivalent full cycles), then idle
    dt, n = 1.0, 3600
    p = np.where(np.arange(n) < 2880, -1.0, 0.0)
    soc = 0.9 - np.cumsum(-p) * dt / 3600.0
    m = storage_metrics_from_series(p, soc, params, dt)
    assert m["equivalent_full_cycles_per_year"] == pytest.approx(0.8 * 8760, rel=1e-9)
    # 6000 cycles at 80 % depth = 4800 full cycles: 4800 / 7008 yr, below the 15-year calendar life
    assert m["years_to_end_of_life"] == pytest.approx(6000 * 0.8 / (0.8 * 8760), rel=1e-9)


def test_every_bundled_sizing_scenario_names_a_technology():
    from facility.scenario import load_scenario
    from tests.conftest import SCENARIOS
    from tests.test_bundled_scenarios import SHARED_COPIES

    files = [p for p in sorted(SCENARIOS.glob("sizing_*.toml")) if p.name not in SHARED_COPIES]
    assert files
    for p in files:
        s = load_scenario(p)
        for name, st in s.storages().items():
            assert st.technology or st.technologies, f"{p.name}: {name} names no technology"


def test_facility_models_lists_every_technology_with_bounds_costs_and_source(capsys):
    from facility.cli import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    text = out[out.index("storage technologies"):]
    for n in list_technologies():
        t = load_technology(n)
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(n + " "))
        assert f"{t.cost_usd_per_kw:g} USD/kW + {t.cost_usd_per_kwh:g} USD/kWh" in line
        assert f"{t.cycle_life:,.0f} cycles" in line
        assert t.source in text
        # every figure's mark, on the lines below the technology's
        block = text[text.index(line):].splitlines()[1:3]
        assert block[0].strip() == "verified: " + (", ".join(t.figures_by_mark()["verified"]) or "(none)")
        assert block[1].strip() == "unverified: " + (", ".join(t.figures_by_mark()["unverified"]) or "(none)")
    assert "2 h-4 h" in text and "1 s-2 min" in text   # lfp_2h, supercap bounds
    lfp = next(ln for ln in text.splitlines() if ln.strip().startswith("lfp_1h "))
    assert "363.01 USD/kW + 390.93 USD/kWh (2022)" in lfp
    assert "without escalation" in text       # how costs of different years compare


def test_facility_models_shows_each_specs_limits(capsys):
    from facility.cli import main
    from facility.config.library import list_specs

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    text = out[out.index("utility specs"):out.index("storage technologies")]
    for n in list_specs():
        assert f"  {n}" in text
    assert "max_window_swing_mw <= 10 MW (window_s 5 s)" in text          # ercot_2026_proposal
    assert "max_ramp_mw_per_min <= 20 MW/min" in text                     # caiso, ieso
    assert "band high_5_55hz: FFT-bin peak <= 3.5 MW in 5-55 Hz" in text  # lipa
    assert "max_band_energy_frac <= 0.2 (band 0.1-20 Hz)" in text         # paper_example


def test_facility_models_shows_a_ride_through_without_recovery_without_inventing_one(tmp_path, capsys, monkeypatch):
    """A ride-through curve without recovery_frac / max_recovery_s has no recovery row
    (RideThroughSpec): the listing showed "recover to 0.9 ... within 0 s" for it."""
    import facility.config.library as lib
    from facility.cli import main

    spec = tmp_path / "curve_only.toml"
    spec.write_text('description = "curve only"\nmax_ramp_up_mw_per_s = 3.0\n'
                    '[ride_through]\nband_max_vm_pu = [0.5]\nband_min_ride_s = [0.2]\n')
    monkeypatch.setattr(lib, "list_specs", lambda: [str(spec)])
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    text = out[out.index("utility specs"):out.index("storage technologies")]
    assert "max_ramp_up_mw_per_s <= 3 MW/s (ramp_window_s 1 s)" in text   # the schema's default window
    assert "      ride_through: stay connected >= 0.2 s below 0.5 pu\n" in text
    assert "recover to" not in text


def test_a_cycle_life_whose_degradation_price_is_out_of_range_is_blamed_on_cycle_life(tmp_path):
    """A technology's derived degradation price (1000 c_E / (N d)) past what the key accepts
    is refused naming cycle_life, the value that gives it and the least cycle life it needs
    (found by the out-of-suite fuzz: it named only degradation_usd_per_mwh, unset by the user)."""
    from facility.scenario import load_scenario
    from facility.errors import ScenarioError

    f = tmp_path / "s.toml"
    f.write_text('schema_version = 1\nname = "t"\n[time]\nhorizon_s = 10\ndt_s = 0.1\n'
                 '[[jobs]]\nname = "j"\nn_gpus = 1000\ngpu = "h100"\n'
                 '[bess]\nenabled = true\ntechnology = "lfp_2h"\np_rated_mw = 1.0\ne_rated_mwh = 2.0\n')
    with pytest.raises(ScenarioError, match=r"bess\.cycle_life = 1e-06 cycles .* at least [0-9.]+ cycles"):
        load_scenario(f, ["bess.cycle_life=1e-6"])
    s = load_scenario(f, ["bess.cycle_life=5000"])
    assert s.bess.degradation_usd_per_mwh == pytest.approx(1000 * s.bess.cost_usd_per_kwh / (5000 * s.bess.cycle_depth_frac))


def test_a_fixed_hybrid_has_one_unit_per_technology_at_its_ratings():
    s = _bess(technologies=["supercap", "lfp_1h"], extendable=False,
              unit_p_rated_mw={"supercap": 2.0, "lfp_1h": 1.5}, unit_e_rated_mwh={"supercap": 0.01, "lfp_1h": 2.0})
    assert s.bess.p_rated_mw == pytest.approx(3.5) and s.bess.e_rated_mwh == pytest.approx(2.01)  # the sums
    units = s.storage_units()
    assert list(units) == ["bess.supercap", "bess.lfp_1h"]
    sc, lfp = units["bess.supercap"], units["bess.lfp_1h"]
    assert (sc.p_rated_mw, sc.e_rated_mwh, lfp.p_rated_mw, lfp.e_rated_mwh) == (2.0, 0.01, 1.5, 2.0)
    # each unit takes its own technology's efficiencies and costs
    assert sc.eff_charge_frac == load_technology("supercap").eff_charge_frac
    assert lfp.cost_usd_per_kwh == load_technology("lfp_1h").cost_usd_per_kwh


def _annual(bess: dict, optimize: dict | None = None):
    from types import SimpleNamespace

    import numpy as np

    from facility.sizing import mix

    s = scenario_from_dict({**BASE, "bess": {"enabled": True, **bess}, "optimize": optimize or {}})
    units = s.storage_units()
    z = {u: np.zeros(10) for u in units}
    sol = SimpleNamespace(p_rated_mw_opt={u: c.p_rated_mw for u, c in units.items()},
                          e_rated_mwh_opt={u: c.e_rated_mwh for u, c in units.items()},
                          p_charge_mw=z, p_discharge_mw=z, p_pcc_mw=np.zeros(10), levers={})
    return s, mix.annual_cost(s, sol)


def test_the_annuity_runs_over_the_technologys_calendar_life_unless_lifetime_years_is_set():
    from facility.optimize.model.storage_data import resolve_storage

    # rack_bbu: 150 USD/kW, 1000 USD/kWh, 5 years of calendar life; 2 MW / 0.15 MWh cost
    # 1000 (2 x 150 + 0.15 x 1000) = 450,000 USD. At 7 %: 1.07^5 = 1.4025517307,
    # CRF(5 y) = 0.07 x 1.4025517307 / 0.4025517307 = 0.2438906944 -> 109,750.81 USD/yr
    # (0.075 h, past the BBU's 240 s: its duration bound widened here)
    bbu = {"technology": "rack_bbu", "p_rated_mw": 2.0, "e_rated_mwh": 0.15, "max_duration_h": 0.1}
    s, c = _annual(bbu)
    assert c["cost"]["storage_capex_usd_per_year"] == pytest.approx(109_750.81, abs=0.01)
    assert c["mix"]["storages"]["bess"]["annuity_lifetime_years"] == 5.0
    # the LP charges the same annuity: c_E = CRF H / 8760 x 1000 USD/kWh [k$/MWh]
    d = resolve_storage("bess", s.bess, s.optimize, horizon_h=8760.0)
    assert d.c_e == pytest.approx(0.2438906944 * 1000.0, rel=1e-9)
    # lifetime_years set by the scenario wins: 1.07^10 = 1.9671513573,
    # CRF(10 y) = 0.07 x 1.9671513573 / 0.9671513573 = 0.1423775027 -> 64,069.88 USD/yr
    _, c = _annual(bbu, {"lifetime_years": 10})
    assert c["cost"]["storage_capex_usd_per_year"] == pytest.approx(64_069.88, abs=0.01)
    # no technology, no calendar life: 15 years, CRF = 0.1097946247 (1.07^15 = 2.7590315345)
    _, c = _annual({"p_rated_mw": 2.0, "e_rated_mwh": 0.15, "cost_usd_per_kw": 150.0, "cost_usd_per_kwh": 1000.0})
    assert c["cost"]["storage_capex_usd_per_year"] == pytest.approx(0.1097946247 * 450_000, abs=0.01)


def test_each_hybrid_unit_is_annualized_over_its_own_calendar_life():
    # flywheel 20 years, supercap 15 years (models/storage/*.toml)
    _, c = _annual({"technologies": ["flywheel", "supercap"], "unit_p_rated_mw": {"flywheel": 1.0, "supercap": 1.0},
                    "unit_e_rated_mwh": {"flywheel": 0.01, "supercap": 0.01}})
    lives = {u: d["annuity_lifetime_years"] for u, d in c["mix"]["storages"].items()}
    assert lives == {"bess.flywheel": load_technology("flywheel").calendar_life_years,
                     "bess.supercap": load_technology("supercap").calendar_life_years}
