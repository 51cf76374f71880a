"""The duration rows d_min P <= E <= d_max P, each by a hand case, and the hybrid of candidate
technologies at one bus (one extendable unit per candidate, the cheapest combination)."""

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage, sizing_to_json
from tests.optimize.test_closed_forms import job_start_energy_mwh, lossless, square_wave

NO_PRICE = OptimizeConfig(annualize=False, energy_price_usd_per_mwh=0.0)


def _square(**kw):
    # facts §7 square wave: P = P̄ - P_lo = 85 - 40 = 45 MW, E = D (1 - D) ΔP T = 0.0125 MWh (1.29 s)
    p_hi, p_lo, duty, period, dt = 100.0, 40.0, 0.75, 4.0, 0.25
    load = square_wave(p_hi, p_lo, duty, period, dt, 10)
    b = lossless(initial_soc_frac=1.0, terminal_soc="equal_initial", cost_usd_per_kw=10.0,
                 cost_usd_per_kwh=100.0, **kw)
    spec = SpecConfig(window_s=4.0, max_window_swing_mw=1e-6)
    return size_storage(load, dt, {"bess": b}, spec, NO_PRICE)


def test_min_duration_row_lifts_energy_to_d_min_times_p():
    free = _square()
    assert free.e_rated_mwh_opt["bess"] / free.p_rated_mw_opt["bess"] < 0.001   # ~1.3 s
    d_min = 0.01   # 36 s: E must be 0.45 MWh at P = 45 MW; the power need does not change
    r = _square(min_duration_h=d_min)
    assert r.p_rated_mw_opt["bess"] == pytest.approx(45.0, rel=1e-5)
    assert r.e_rated_mwh_opt["bess"] == pytest.approx(d_min * 45.0, rel=1e-5)
    # objective: 10 k$/MW * 45 + 100 k$/MWh * 0.45
    assert r.info.objective_usd == pytest.approx(1000 * (10 * 45 + 100 * 0.45), rel=1e-5)


def test_max_duration_row_lifts_power_to_e_over_d_max():
    # job start 0 -> 4 MW under 1 MW/min: E* = ΔP² k dt / (8R) (needs ~1 min at 2 MW, 0.0167 h);
    # with d_max = 0.005 h the power rating rises to E*/d_max, the energy need stays
    dp, r_lim, dt = 4.0, 1.0, 4.0
    t = np.arange(int(1200 / dt)) * dt
    load = np.where(t >= 600.0 - 1e-9, dp, 0.0)
    spec = SpecConfig(max_ramp_mw_per_min=r_lim)
    e_star = job_start_energy_mwh(dp, r_lim, dt)
    free = size_storage(load, dt, {"bess": lossless(initial_soc_frac=0.0, cost_usd_per_kw=1.0,
                                                    cost_usd_per_kwh=100.0)}, spec, NO_PRICE)
    d_max = 0.005
    assert free.e_rated_mwh_opt["bess"] == pytest.approx(e_star, rel=1e-6)
    assert free.e_rated_mwh_opt["bess"] / free.p_rated_mw_opt["bess"] > 2 * d_max   # ~1/90 h
    res = size_storage(load, dt, {"bess": lossless(initial_soc_frac=0.0, cost_usd_per_kw=1.0,
                                                   cost_usd_per_kwh=100.0, max_duration_h=d_max)},
                       spec, NO_PRICE)
    assert res.e_rated_mwh_opt["bess"] == pytest.approx(e_star, rel=1e-6)
    assert res.p_rated_mw_opt["bess"] == pytest.approx(e_star / d_max, rel=1e-6)


def test_fixed_ratings_outside_duration_are_a_physics_error():
    from facility.scenario import scenario_from_dict
    from facility.errors import ScenarioError

    with pytest.raises(ScenarioError, match=r"min_duration_h, max_duration_h.*technology lfp_2h"):
        scenario_from_dict({"jobs": [{"n_gpus": 1000}],
                            "bess": {"enabled": True, "technology": "lfp_2h", "p_rated_mw": 10.0,
                                     "e_rated_mwh": 0.5}})


def test_interior_bracket_keeps_the_duration_rows():
    # the interior strategy's restriction and relaxation carry the rows: its plan has E/P >= d_min
    # and its bracket holds the full LP's optimum with the same rows
    import warnings

    from facility.optimize.strategies.full import solve_full
    from facility.optimize.strategies.interior import solve_interior
    from tests.optimize.test_interior import problem, site_load

    load = site_load("stochastic", horizon_s=120.0)
    free = solve_full(problem(load))
    d_free = free.e_rated_mwh_opt["bess"] / free.p_rated_mw_opt["bess"]
    d_min = 3 * d_free
    pb = problem(load, min_duration_h=d_min)
    full = solve_full(pb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True)
    for r in (full, res):
        assert r.e_rated_mwh_opt["bess"] >= d_min * r.p_rated_mw_opt["bess"] * (1 - 1e-6)
    assert res.info.lower_bound_usd <= full.info.relaxed_objective_usd * (1 + 1e-9)
    assert res.info.objective_usd >= full.info.relaxed_objective_usd * (1 - 1e-9)
    # the relaxation has the rows too, so the bracket is tight (without them its bound would be
    # the unbounded design's optimum, far below)
    assert res.info.gap_frac <= pb.optimize.max_gap_frac
