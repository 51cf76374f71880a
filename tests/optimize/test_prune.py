"""Pruning candidate technologies of a hybrid section (facility.optimize.driver.prune, issue 49).

Soundness against the hybrid's full LP (HiGHS' simplex, every unit at once): the bound the
pruning proves is at most the hybrid LP's optimum, the plan it returns is a plan of the hybrid
(verified, the pruned units at zero) no dearer than the first candidate alone, and a unit it
prunes could not have lowered the cost beyond the reported gap. A case where the slow unit
pays (a minutes-scale ramp limit across a job start) keeps it and solves the hybrid.
"""

import warnings

import numpy as np

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize.certificates.verify import verify_plan
from facility.optimize.driver import prune
from facility.optimize.model.problem import Problem
from facility.optimize.model.storage_data import resolve_storage
from facility.optimize.strategies import interior
from facility.optimize.strategies.full import solve_full
from tests.optimize.test_interior import lp_optimum, site_load

#: a supercapacitor-like unit (cheap power, dear energy, seconds, self-discharge) and an
#: LFP-like one (dearer per MW at its one-hour minimum, cheap energy)
FAST = dict(cost_usd_per_kw=300.0, cost_usd_per_kwh=20000.0, eff_charge_frac=0.96,
            eff_discharge_frac=0.96, self_discharge_frac_per_h=0.005, min_duration_h=0.000278,
            max_duration_h=0.0333)
SLOW = dict(cost_usd_per_kw=330.0, cost_usd_per_kwh=400.0, eff_charge_frac=0.922,
            eff_discharge_frac=0.922, self_discharge_frac_per_h=0.00005, min_duration_h=1.0,
            max_duration_h=2.0)


def _problem(load, dt, spec, fast=FAST, slow=SLOW) -> Problem:
    opt = OptimizeConfig(annualize=True, max_gap_frac=0.01)
    h = load.size * dt / 3600.0
    units = {}
    for name, kw in (("bess.fast", fast), ("bess.slow", slow)):
        cfg = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=200.0,
                         min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.5, **kw)
        units[name] = resolve_storage(name, cfg, opt, h)
    return Problem(np.asarray(load, dtype=float), dt, units, spec, opt)


def _check_sound(pb: Problem, res, full):
    """What every pruning result must satisfy against the hybrid's full LP."""
    opt = lp_optimum(full)
    i = res.info
    cand = i.candidates
    assert cand and cand["first"] == "bess.fast"
    # the bound proves nothing false: at most the hybrid LP's optimum (a relaxation of it)
    assert cand["hybrid_lower_bound_usd"] <= opt * (1 + 1e-7)
    assert i.lower_bound_usd <= opt * (1 + 1e-7) <= i.objective_usd * (1 + 1e-7)
    # the full LP's own (repaired) plan is within the reported gap of the returned one
    assert (i.objective_usd - full.info.objective_usd) / i.objective_usd <= i.gap_frac + 1e-7
    # a plan of the hybrid: every unit, the pruned ones at zero, all rows met
    plan = {n: (res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n], res.p_charge_mw[n],
                res.p_discharge_mw[n], res.soc_frac[n] * res.e_rated_mwh_opt[n]) for n in pb.storages}
    assert verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.margin_frac) is None
    # no dearer than the first candidate alone
    assert i.objective_usd <= cand["first_alone_usd"] * (1 + 1e-12)
    for n in cand["pruned"]:
        assert res.p_rated_mw_opt[n] == 0.0 and res.e_rated_mwh_opt[n] == 0.0
    assert set(cand["pruned"]) | set(cand["kept"]) == {"bess.slow"}


def test_a_candidate_that_cannot_win_is_pruned_soundly(monkeypatch):
    """Seconds-scale swings under a 5 s window limit: the LFP-like unit costs more per MW than
    the supercapacitor's prices pay for power; it is pruned without the hybrid's solve."""
    monkeypatch.setattr(interior, "MIN_STEPS", 500)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load = site_load("stochastic", horizon_s=16.0, dt_s=0.02)
    pb = _problem(load, 0.02, SpecConfig(window_s=5.0, max_window_swing_mw=10.0))
    assert prune.applies(pb) and prune.hybrid_units(pb) == ["bess.fast", "bess.slow"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prune.solve_hybrid(pb)
        full = solve_full(pb)
    assert res.info.candidates["pruned"] == {"bess.slow": res.info.candidates["pruned"]["bess.slow"]}
    assert not res.info.candidates["hybrid_solved"]
    _check_sound(pb, res, full)
    # the full LP agrees: it buys (almost) none of the slow unit
    assert full.p_rated_mw_opt["bess.slow"] <= 1e-3 * full.p_rated_mw_opt["bess.fast"]


def test_a_candidate_that_may_win_is_kept_and_the_hybrid_solved(monkeypatch):
    """A job start under a 1 MW/min ramp limit: minutes of energy the fast unit cannot hold at
    its 2-minute maximum duration; the slow unit is kept and the hybrid solved."""
    monkeypatch.setattr(interior, "MIN_STEPS", 500)
    dt = 0.25
    t = np.arange(int(180 / dt)) * dt
    on = np.clip((t - 20.0) / 2.0, 0.0, 1.0)
    square = np.where((t % 4.0) < 3.0, 1.0, 0.3)
    load = 0.2 + 2.4 * on * square       # ~2.6 MW peak, a 4 s iteration, a start at 20 s
    # a fast unit of at most 7 s and a slow one of at least an hour: the LP takes both
    fast = dict(cost_usd_per_kw=300.0, cost_usd_per_kwh=20000.0, eff_charge_frac=0.98,
                eff_discharge_frac=0.98, self_discharge_frac_per_h=0.005, min_duration_h=0.0001,
                max_duration_h=0.002)
    slow = dict(cost_usd_per_kw=300.0, cost_usd_per_kwh=50.0, eff_charge_frac=0.95,
                eff_discharge_frac=0.95, min_duration_h=1.0, max_duration_h=4.0)
    pb = _problem(load, dt, SpecConfig(window_s=5.0, max_window_swing_mw=0.2, max_ramp_mw_per_min=1.0),
                  fast, slow)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = prune.solve_hybrid(pb)
        full = solve_full(pb)
    assert "bess.slow" in res.info.candidates["kept"] and res.info.candidates["hybrid_solved"]
    assert full.p_rated_mw_opt["bess.slow"] > 0.05
    _check_sound(pb, res, full)


def test_pruning_runs_only_on_one_hybrid_section_bought_from_zero():
    load = np.full(3000, 10.0)
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=1.0)
    pb = _problem(load, 0.1, spec)
    assert prune.applies(pb)
    one = Problem(pb.load_mw, pb.dt_s, {"bess.fast": pb.storages["bess.fast"]}, spec, pb.optimize)
    assert not prune.applies(one)
    from dataclasses import replace

    floor = replace(pb, storages={**pb.storages, "bess.slow": replace(pb.storages["bess.slow"], p_lo=1.0)})
    assert not prune.applies(floor)   # a unit with a least rating must be bought: no pruning
    assert prune.first_candidate(pb, ["bess.slow", "bess.fast"]) == "bess.fast"
