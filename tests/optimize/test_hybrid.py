"""Technologies in the sizing LP: the ERCOT case with lfp_2h keeps its minimum duration, and a
section with candidate technologies carries one unit per candidate and is never dearer than the
better candidate alone."""

import numpy as np
import pytest

from facility.sizing import mix
from facility.scenario import scenario_from_dict
from facility.config.technology import load_technology
from facility.optimize import size_storage, sizing_to_json
from facility.workload import default_n_feeders, generate_load, site_power


def _ercot(bess: dict, horizon_s: float, extra_spec: dict | None = None):
    """50,000 H100 in a stochastic job starting at t = 30 s (2 s iterations, 45 MW swing at
    the site), ERCOT's 10 MW / 5 s window, 0.1 s steps."""
    d = {"name": "ercot", "seed": 3, "time": {"horizon_s": horizon_s, "dt_s": 0.1},
         "jobs": [{"name": "pretrain", "n_gpus": 50000, "gpu": "h100", "workload": "stochastic",
                   "period_s": 2.0, "compute_frac": 0.7, "p_low_frac": 0.3, "start_s": 30.0,
                   "ramp_s": 2.0, "n_rack_groups": 16}],
         "site": {"non_gpu_frac": 0.3, "pue": 1.2},
         "bess": {"enabled": True, "extendable": True, "max_p_rated_mw": 200.0,
                  "max_e_rated_mwh": 400.0, **bess},
         "spec": {"base": "ercot_2026_proposal", **(extra_spec or {})},
         "optimize": {"annualize": True}, "controller": {"kind": "optimal"}}
    s = scenario_from_dict(d)
    prof = generate_load(s)
    site = site_power(prof, prof.p_gpu_w, s.site, default_n_feeders(s))
    r = size_storage(site.p_site_mw, s.time.dt_s, s.storages(), s.spec, s.optimize)
    return s, r, mix.annual_cost(s, r)


def test_ercot_with_lfp_2h_keeps_its_minimum_duration():
    s, r, c = _ercot({"technology": "lfp_2h"}, horizon_s=90.0)
    p, e = r.p_rated_mw_opt["bess"], r.e_rated_mwh_opt["bess"]
    assert p > 1.0   # the 45 MW swing against a 10 MW window needs tens of MW
    assert e / p >= load_technology("lfp_2h").min_duration_h * (1 - 1e-6)
    unit = c["mix"]["storages"]["bess"]
    assert unit["technology"] == "lfp_2h" and unit["duration_h"] == pytest.approx(e / p)
    # the annual cost carries the technology's fixed O&M and its throughput cost
    # (ATB 2024: 9.08 USD/kW-yr + 9.77 USD/kWh-yr)
    assert c["cost"]["fixed_om_usd_per_year"] == pytest.approx(1000 * (p * 9.08 + e * 9.77), rel=1e-9)
    assert c["cost"]["degradation_usd_per_year"] > 0
    assert c["cost"]["total_usd_per_year"] == pytest.approx(unit["cost_usd_per_year"], rel=1e-9)


@pytest.mark.slow
def test_ercot_hybrid_is_no_dearer_than_either_technology_alone():
    # seconds-scale iteration swings under ERCOT's window, plus a job start held to 40 MW/min
    spec = {"max_ramp_mw_per_min": 40.0}
    costs = {}
    for t in ("supercap", "lfp_1h"):
        _, _, c = _ercot({"technology": t}, 150.0, spec)
        costs[t] = c["cost"]["total_usd_per_year"]
    _, r, c = _ercot({"technologies": ["supercap", "lfp_1h"]}, 150.0, spec)
    assert set(r.p_rated_mw_opt) == {"bess.supercap", "bess.lfp_1h"}
    assert c["cost"]["total_usd_per_year"] <= min(costs.values()) * (1 + 1e-6)
    js = sizing_to_json(r)
    assert {"bess.supercap", "bess.lfp_1h"} <= set(js)


FAST = """name = "fast"
description = "test technology: cheap power, dear energy"
cost_usd_per_kw = 10.0
cost_usd_per_kwh = 100000.0
eff_charge_frac = 1.0
eff_discharge_frac = 1.0
min_duration_h = 0.0001
max_duration_h = 0.05
cycle_life = 1000000
calendar_life_years = 15
cost_year = 2024
source = "test data"
"""
SLOW = """name = "slow"
description = "test technology: dear power, cheap energy, at least 1 h"
cost_usd_per_kw = 300.0
cost_usd_per_kwh = 50.0
eff_charge_frac = 1.0
eff_discharge_frac = 1.0
min_duration_h = 1.0
max_duration_h = 4.0
cycle_life = 6000
calendar_life_years = 15
cost_year = 2024
source = "test data"
"""


def _fast_slow_case(tmp_path, bess: dict):
    from facility.config.schema import OptimizeConfig, SpecConfig

    (tmp_path / "fast.toml").write_text(FAST)
    (tmp_path / "slow.toml").write_text(SLOW)
    d = {"jobs": [{"n_gpus": 1000}],
         "bess": {"enabled": True, "extendable": True, "max_p_rated_mw": 100.0, "max_e_rated_mwh": 100.0,
                  "min_soc_frac": 0.0, "max_soc_frac": 1.0, "initial_soc_frac": 0.5, **bess}}
    s = scenario_from_dict(d, base_dir=tmp_path)
    # 1 s steps: a 10 MW square wave of 4 s period (fast) on a 0 -> 20 MW step at t = 300 s
    # held to 10 MW/min (slow: 20²/(8·10) = 5 MW·min of energy)
    t = np.arange(900.0)
    load = 50.0 + np.where(t % 4 < 2, 5.0, -5.0) + np.where(t >= 300, 20.0, 0.0)
    spec = SpecConfig(window_s=4.0, max_window_swing_mw=1.0, max_ramp_mw_per_min=10.0)
    opt = OptimizeConfig(energy_price_usd_per_mwh=0.0)
    return size_storage(load, 1.0, s.storages(), spec, opt)


def test_hybrid_splits_fast_and_slow_parts(tmp_path):
    # the fast unit alone pays 100 k$/MWh for the start's energy, the slow one alone pays its
    # power for the swing (with 1 h of energy per MW); together each takes its own part
    alone = {t: _fast_slow_case(tmp_path, {"technology": f"./{t}.toml"}).info.objective_usd
             for t in ("fast", "slow")}
    r = _fast_slow_case(tmp_path, {"technologies": ["./fast.toml", "./slow.toml"]})
    assert set(r.p_rated_mw_opt) == {"bess.fast", "bess.slow"}
    assert r.info.objective_usd < min(alone.values()) * (1 - 0.05)
    for u in ("bess.fast", "bess.slow"):
        assert r.p_rated_mw_opt[u] > 0.1
    d_slow = r.e_rated_mwh_opt["bess.slow"] / r.p_rated_mw_opt["bess.slow"]
    d_fast = r.e_rated_mwh_opt["bess.fast"] / r.p_rated_mw_opt["bess.fast"]
    assert 1.0 * (1 - 1e-6) <= d_slow <= 4.0 * (1 + 1e-6)
    assert 0.0001 * (1 - 1e-6) <= d_fast <= 0.05 * (1 + 1e-6)


def test_a_hybrid_lp_is_solved_by_the_interior_point_method_and_one_unit_by_the_simplex():
    from types import SimpleNamespace

    from facility.optimize.solvers.solve import HYBRID_HIGHS_OPTIONS, HYBRID_IPM_MIN_COLS, hybrid_options

    def model(names, n_cols=HYBRID_IPM_MIN_COLS):
        return SimpleNamespace(cols={n: {} for n in names}, lp=SimpleNamespace(n_cols=n_cols))

    assert hybrid_options(model(["bess.supercap", "bess.lfp_1h"])) == HYBRID_HIGHS_OPTIONS
    assert HYBRID_HIGHS_OPTIONS["run_crossover"] == "on"   # a basis for the repair's re-solves
    # small hybrid LPs (the MPC's re-plans) keep the simplex, faster there
    assert hybrid_options(model(["bess.supercap", "bess.lfp_1h"], HYBRID_IPM_MIN_COLS - 1)) is None
    # one unit per section (technology = NAME, or a single candidate): the tuned simplex
    assert hybrid_options(model(["bess.supercap", "ups"])) is None
    assert hybrid_options(model(["bess", "rack_storage"])) is None
