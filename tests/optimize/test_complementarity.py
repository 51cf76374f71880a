"""The complementarity repair inside the proven gap: a case where the LP overlaps charge and
discharge (a job start right after t = 0, a storage that starts nearly full)."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.model.formulation import build_model, resolve_storage
from facility.optimize.solvers.solve import overlap_steps, solve_lp
from facility.optimize.certificates.verify import verify_plan

DT = 1.0
SPEC = SpecConfig(max_ramp_mw_per_min=10.0, window_s=5.0, max_window_swing_mw=10.0)
OPT = OptimizeConfig(annualize=False)


def start_load():
    """5 MW for 120 s, then a 4 s 41/17 MW square wave (a job start with no ramp), 300 s at 1 s."""
    t = np.arange(300) * DT
    return np.where(t < 120.0, 5.0, np.where((t % 4.0) < 3.0, 41.0, 17.0))


def full_bess():
    """Starts at 0.9 SoC, may go to 0.95: little room to charge before the start."""
    return BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                      eff_charge_frac=0.95, eff_discharge_frac=0.95, min_soc_frac=0.05,
                      max_soc_frac=0.95, initial_soc_frac=0.9, cost_usd_per_kw=150.0,
                      cost_usd_per_kwh=250.0)


def test_lp_overlaps_on_this_case():
    """The premise: the LP's optimum charges and discharges at once (the "resistor")."""
    load = start_load()
    data = {"bess": resolve_storage("bess", full_bess(), OPT, load.size * DT / 3600)}
    m = build_model(load, DT, data, SPEC, OPT.energy_price_usd_per_mwh)
    sol, _ = solve_lp(m.lp, OPT)
    assert sol.status == "ok"
    ov = overlap_steps(m, sol.x)["bess"]
    assert ov.sum() > 10
    # the hull row: p_ch + p_dis <= P at every step, even where it overlaps
    c = m.cols["bess"]
    assert np.all(sol.x[c["ch"]] + sol.x[c["dis"]] <= sol.x[c["p_rated"][0]] + 1e-6)


def test_repaired_plan_is_realizable_and_inside_its_gap():
    load = start_load()
    r = size_storage(load, DT, {"bess": full_bess()}, SPEC, OPT)
    i = r.info
    assert i.method == "full" and i.n_repaired_steps > 0
    ch, dis = r.p_charge_mw["bess"], r.p_discharge_mw["bess"]
    assert np.max(np.minimum(ch, dis)) <= 1e-6  # p_ch * p_dis = 0 at every step
    # the LP relaxation's optimum is the lower bound; the repaired plan's cost the objective
    assert i.lower_bound_usd == pytest.approx(i.relaxed_objective_usd)
    assert i.lower_bound_usd <= i.objective_usd
    assert i.gap_frac == pytest.approx((i.objective_usd - i.lower_bound_usd) / i.objective_usd)
    assert 0 < i.gap_frac < 0.1
    # every limit on the fine grid, recomputed by facility.metrics
    pcc = r.p_pcc_mw
    assert np.allclose(pcc, load + ch - dis)
    assert metrics.max_ramp_mw_per_min(pcc, DT) <= 10.0 + 1e-6
    assert metrics.max_window_swing_mw(pcc, DT, 5.0) <= 10.0 + 1e-6
    soc = r.soc_frac["bess"]
    assert soc.min() >= 0.05 - 1e-7 and soc.max() <= 0.95 + 1e-7 and soc[-1] >= 0.9 - 1e-7
    assert max(ch.max(), dis.max()) <= r.p_rated_mw_opt["bess"] + 1e-6


def test_verify_plan_refuses_an_overlapping_plan():
    load = start_load()
    data = {"bess": resolve_storage("bess", full_bess(), OPT, load.size * DT / 3600)}
    r = size_storage(load, DT, {"bess": full_bess()}, SPEC, OPT)
    e = r.soc_frac["bess"] * r.e_rated_mwh_opt["bess"]
    plan = {"bess": (r.p_rated_mw_opt["bess"], r.e_rated_mwh_opt["bess"], r.p_charge_mw["bess"],
                     r.p_discharge_mw["bess"], e)}
    assert verify_plan(load, DT, data, SPEC, plan) is None
    # the same stored energy through simultaneous charge and discharge on one step: refused
    ch, dis = r.p_charge_mw["bess"].copy(), r.p_discharge_mw["bess"].copy()
    t = int(np.flatnonzero((ch > 0.01) & (ch < 0.5 * r.p_rated_mw_opt["bess"]))[0])
    ch[t] += 1e-3
    dis[t] += 1e-3 * 0.95 * 0.95
    bad = verify_plan(load, DT, data, SPEC, {"bess": plan["bess"][:2] + (ch, dis, e)})
    assert bad is not None and "at once" in bad
