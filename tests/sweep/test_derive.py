"""Study quantities: hand-computed capex, energy cost, annuity, margin and strategy labels."""

from __future__ import annotations

import math

import pytest

from facility.scenario import scenario_from_dict
from facility.sweep.derive import annuity_factor, derive, strategy_label


@pytest.fixture
def scenario(tiny_scenario_dict):
    d = dict(tiny_scenario_dict)
    d["rack_storage"] = {"enabled": True, "p_rated_mw": 2.0, "e_rated_mwh": 0.5,
                         "cost_usd_per_kw": 100.0, "cost_usd_per_kwh": 300.0}
    d["controller"] = {"kind": "moving_average"}
    d["optimize"] = {"energy_price_usd_per_mwh": 50.0, "lifetime_years": 10, "discount_rate_frac": 0.0}
    return scenario_from_dict(d)


def test_annuity_factor():
    assert annuity_factor(10, 0.0) == 10
    assert annuity_factor(1, 0.1) == pytest.approx(1 / 1.1)
    assert annuity_factor(2, 0.1) == pytest.approx(1 / 1.1 + 1 / 1.21)


def test_derive_hand_computed(scenario):
    metrics = {"pcc": {"max_window_swing_mw": 0.25}, "energy": {"raw_mwh": 1.0, "pcc_mwh": 1.01},
               "storage": {"rack_storage": {"p_rated_mw": 2.0, "e_rated_mwh": 0.5}}}
    d = derive(scenario, metrics)
    # capex: 2000 kW * 100 + 500 kWh * 300
    assert d["cost"]["storage_capex_usd"] == pytest.approx(350_000.0)
    # 0.01 MWh over 20 s -> 0.01 * 8760 * 180 MWh/year
    per_year = 0.01 * 8760 * 3600 / 20
    assert d["cost"]["energy_overhead_mwh_per_year"] == pytest.approx(per_year)
    assert d["cost"]["energy_usd_per_year"] == pytest.approx(50 * per_year)
    assert d["cost"]["total_usd"] == pytest.approx(350_000.0 + 10 * 50 * per_year)
    assert d["compliance_margin"]["max_window_swing_mw"] == pytest.approx(0.75)
    assert d["compliance_margin"]["min"] == pytest.approx(0.75)
    assert d["strategy"] == "rack_storage"
    assert d["spec_name"] == "custom"


def test_sized_ratings_from_metrics_win(scenario):
    metrics = {"storage": {"rack_storage": {"p_rated_mw": 1.0, "e_rated_mwh": 0.0}}}
    d = derive(scenario, metrics, "size")
    assert d["cost"]["storage_capex_usd"] == pytest.approx(100_000.0)
    assert d["strategy"] == "none"  # no energy: no storage strategy
    assert math.isnan(d["compliance_margin"]["min"])  # no pcc metrics


def test_strategy_labels(tiny_scenario_dict):
    d = dict(tiny_scenario_dict, gpu_smoothing={"enabled": True, "floor_frac": 0.5},
             rack_storage={"enabled": True, "p_rated_mw": 1.0, "e_rated_mwh": 0.1})
    s = scenario_from_dict(d)
    assert strategy_label(s, {}) == "gpu_smoothing"  # controller none: the storage is idle
    assert strategy_label(s, {}, mode="size") == "gpu_smoothing+rack_storage"
    assert strategy_label(scenario_from_dict(tiny_scenario_dict), {}) == "none"


def test_the_synthetic_case_takes_its_gpu_from_the_scenarios_library():
    """synthetic_case resolves a scenario built in code (as run_scenario does) and reads the
    job's GPU from ``scenario.library``: the same numbers as the loaded scenario's."""
    from facility.config.schema import Scenario
    from facility.sweep.synthetic import synthetic_case

    data = {"jobs": [{"n_gpus": 1000, "gpu": "gb200"}], "time": {"horizon_s": 10.0, "dt_s": 0.02}}
    built = Scenario.model_validate(data)
    assert synthetic_case(built) == synthetic_case(scenario_from_dict(data))
    assert built.library.gpu("gb200").name == "gb200"
