"""Strategy ``idle``: a load that meets the spec by itself needs no storage, proven at once."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from facility.config.schema import OptimizeConfig, SpecConfig
from facility.optimize.driver.api import solve
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.strategies.full import solve_full
from facility.optimize.strategies.idle import solve_idle
from facility.optimize.model.problem import Problem
from facility.optimize.certificates.verify import verify_plan

from tests.optimize.test_interior import SPEC, bess, problem, site_load

LOOSE = SpecConfig(max_ramp_mw_per_min=500.0)


def _quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **kw)


def test_a_spec_the_load_meets_buys_nothing_with_no_gap():
    """The stochastic site under a per-minute limit it never reaches: idle, 0 USD, gap 0,
    and the full LP agrees (its optimum is 0 too)."""
    pb = problem(site_load("stochastic", horizon_s=120.0), spec=LOOSE)
    res = _quiet(solve, pb)
    i = res.info
    assert i.method == "idle" and i.status == "optimal"
    assert i.objective_usd == 0.0 and i.lower_bound_usd == 0.0 and i.gap_frac == 0.0
    assert res.p_rated_mw_opt["bess"] == 0.0 and res.e_rated_mwh_opt["bess"] == 0.0
    np.testing.assert_array_equal(res.p_pcc_mw, pb.load_mw)
    assert _quiet(solve_full, pb).info.objective_usd < 1e-6


def test_a_binding_limit_is_not_idle():
    pb = problem(site_load("stochastic", horizon_s=120.0), spec=SPEC)
    assert solve_idle(pb) is None
    assert _quiet(solve, pb).info.method != "idle"


def test_least_ratings_are_paid_and_are_the_optimum():
    """An extendable storage with least ratings (5 MW, 0.5 MWh): idle costs exactly their
    capex, which is the full LP's optimum."""
    pb = problem(site_load("stochastic", horizon_s=120.0), spec=LOOSE,
                 min_p_rated_mw=5.0, min_e_rated_mwh=0.5)
    res = solve_idle(pb)
    s = pb.storages["bess"]
    assert res is not None and res.p_rated_mw_opt["bess"] == 5.0 and res.e_rated_mwh_opt["bess"] == 0.5
    assert abs(res.info.objective_usd - 1000.0 * (s.c_p * 5.0 + s.c_e * 0.5)) < 1e-6
    full = _quiet(solve_full, pb).info.objective_usd
    assert abs(full - res.info.objective_usd) <= 1e-6 * full
    np.testing.assert_allclose(res.soc_frac["bess"], s.soc0)


def test_the_pcc_history_can_rule_idle_out():
    """The same loose spec, but the PCC stood 400 MW lower just before t = 0: the first
    minute's ramp would break the per-minute limit with the storages idle."""
    load = site_load("stochastic", horizon_s=120.0)
    pb = replace(problem(load, spec=LOOSE), p_pcc_history_mw=np.full(10, float(load[0]) - 600.0))
    assert solve_idle(pb) is None


def test_self_discharge_or_a_terminal_band_rule_idle_out():
    load = site_load("stochastic", horizon_s=120.0)
    opt = OptimizeConfig()
    h = load.size * 0.25 / 3600.0
    leaky = resolve_storage("bess", bess(min_e_rated_mwh=1.0, self_discharge_frac_per_h=0.01), opt, h)
    assert solve_idle(Problem(load, 0.25, {"bess": leaky}, LOOSE, opt)) is None
    band = resolve_storage("bess", bess(), opt, h, soc_end=(0.5, 0.6))  # s0 = 0.9 is outside
    pb = Problem(load, 0.25, {"bess": replace(band, e_lo=1.0)}, LOOSE, opt)
    assert solve_idle(pb) is None


def test_verify_plan_checks_the_terminal_soc_band():
    load = np.full(8, 50.0)
    opt = OptimizeConfig()
    s = resolve_storage("bess", bess(), opt, 8 / 3600.0, soc_end=(0.5, 0.6))
    plan = {"bess": (1.0, 1.0, np.zeros(8), np.zeros(8), np.full(9, s.soc0))}
    assert verify_plan(load, 1.0, {"bess": s}, LOOSE, plan) == "bess: terminal SoC band"
