"""GPU levers as LP decisions (facility.optimize.model.levers): closed forms of floor vs storage, the
mix, the cap with its slowdown, the burn conversion of the complementarity repair, and the
reductions (coarsening, periodic) with levers."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.errors import ScenarioError
from facility.optimize import size_storage
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.model.problem import build_full
from facility.optimize.model.levers import lever_pieces, single_job_inputs
from facility.optimize.model.problem import Problem
from facility.optimize.solvers.solve import burn_overlap, solve_lp

TDP, N = 1000.0, 100_000          # 100 MW at TDP (site factor 1)
P_LO = 0.3                        # communication phase [frac of TDP]


def square_w(n_steps, period_steps, high_steps):
    i = np.arange(n_steps)
    return np.where(i % period_steps < high_steps, TDP, P_LO * TDP)


def bess(**kw):
    base = dict(enabled=True, extendable=True, max_p_rated_mw=500.0, max_e_rated_mwh=100.0,
                eff_charge_frac=0.97, eff_discharge_frac=0.97, min_soc_frac=0.0,
                max_soc_frac=1.0, initial_soc_frac=0.5, cost_usd_per_kw=150.0,
                cost_usd_per_kwh=300.0)
    base.update(kw)
    return BessConfig(**base)


def opt(**kw):
    return OptimizeConfig(annualize=True, **kw)


def size(p_w, dt, spec, o, storage, **lever_kw):
    inp = single_job_inputs(p_w, N, TDP, **lever_kw)
    return size_storage(N * p_w / 1e6, dt, {"bess": storage}, spec, o, levers=inp)


SWING = SpecConfig(window_s=10.0, max_window_swing_mw=20.0)


def test_cheap_energy_dear_storage_gives_the_floor_that_meets_the_limit_and_no_storage():
    # swing <= 20 MW over a 100/30 MW square wave: the low phase must reach 80 MW, F = 0.8
    p = square_w(400, 8, 4)
    r = size(p, 0.5, SWING, opt(energy_price_usd_per_mwh=0.01), bess(cost_usd_per_kw=1e4),
             floor_range=(0.2, 0.9))
    assert r.levers["job"]["floor_frac"] == pytest.approx(1.0 - 20.0 / 100.0, abs=1e-9)
    assert r.p_rated_mw_opt["bess"] == pytest.approx(0.0, abs=1e-7)
    assert r.e_rated_mwh_opt["bess"] == pytest.approx(0.0, abs=1e-9)
    assert metrics.max_window_swing_mw(r.p_pcc_mw, 0.5, 10.0) <= 20.0 + 1e-6
    # the floor burns (F - 0.3) TDP in half the steps: the objective is that energy
    burn_mwh = (0.8 - P_LO) * TDP * N / 1e6 * 0.5 * 400 * 0.5 / 3600
    assert r.info.objective_usd == pytest.approx(0.01 * burn_mwh, rel=1e-6)
    assert r.info.n_lever_pieces == 2                          # [0.2, 0.3] and [0.3, 0.9]


def test_dear_energy_cheap_storage_gives_storage_only():
    p = square_w(400, 8, 4)
    o = opt(energy_price_usd_per_mwh=500.0)
    st = bess(cost_usd_per_kw=1.0, cost_usd_per_kwh=1.0)
    mixed = size(p, 0.5, SWING, o, st, floor_range=(0.2, 0.9), burn=True)
    alone = size_storage(N * p / 1e6, 0.5, {"bess": st}, SWING, o)
    assert np.max(mixed.levers["job"]["floor_burn_mw"]) == pytest.approx(0.0, abs=1e-9)
    assert np.max(mixed.levers["job"]["burn_mw"]) == pytest.approx(0.0, abs=1e-7)
    assert mixed.p_rated_mw_opt["bess"] == pytest.approx(alone.p_rated_mw_opt["bess"], rel=1e-6)
    assert mixed.info.objective_usd == pytest.approx(alone.info.objective_usd, rel=1e-7)


def checkpoint_w():
    """A 100/30 MW square wave (8 s) with a 120 s checkpoint at the low level, 1800 s at 1 s."""
    t = np.arange(1800.0)
    p = square_w(t.size, 8, 4)
    return np.where((t >= 900) & (t < 1020), P_LO * TDP, p)


def test_intermediate_prices_give_a_mix_cheaper_than_both_pure_designs():
    # storage is cheap for the 4 s swings (power, little energy) and dear for the 2-minute
    # checkpoint (energy); burn the other way round: the optimum uses both
    p = checkpoint_w()
    spec = SpecConfig(window_s=10.0, max_window_swing_mw=10.0, max_ramp_mw_per_min=10.0)
    o = opt(energy_price_usd_per_mwh=5.0)
    st = bess(cost_usd_per_kwh=2000.0)
    storage_only = size_storage(N * p / 1e6, 1.0, {"bess": st}, spec, o)
    burn_only = size(p, 1.0, spec, o, bess(max_p_rated_mw=0.0), burn=True)
    mix = size(p, 1.0, spec, o, st, burn=True)
    assert burn_only.p_rated_mw_opt["bess"] == pytest.approx(0.0, abs=1e-9)
    assert mix.info.objective_usd < 0.95 * min(storage_only.info.objective_usd, burn_only.info.objective_usd)
    burned_mwh = float(np.sum(mix.levers["job"]["burn_mw"])) / 3600
    assert mix.p_rated_mw_opt["bess"] > 10.0 and burned_mwh > 0.1
    # storage takes the fast swings (little energy), the burn the checkpoint
    assert mix.e_rated_mwh_opt["bess"] < 0.2 * storage_only.e_rated_mwh_opt["bess"]
    ck = np.zeros(p.size, bool)
    ck[900:1020] = True
    assert np.sum(mix.levers["job"]["burn_mw"][ck]) > 0.8 * np.sum(mix.levers["job"]["burn_mw"])
    for r in (storage_only, burn_only, mix):
        assert metrics.max_window_swing_mw(r.p_pcc_mw, 1.0, 10.0) <= 10.0 + 1e-6
        assert metrics.max_ramp_mw_per_min(r.p_pcc_mw, 1.0) <= 10.0 + 1e-6


def test_cap_closed_form_clips_the_compute_phase_and_prices_its_slowdown():
    # no storage worth buying, free slowdown-free burn absent: the cap must bring the 100 MW
    # phase down to 30 + 20 MW, C = 0.5; extra time = compute steps x ((1/C)^0.5 - 1) dt
    p = square_w(400, 8, 4)
    o = opt(energy_price_usd_per_mwh=60.0, slowdown_usd_per_gpu_h=0.01)
    r = size(p, 0.5, SWING, o, bess(cost_usd_per_kw=1e5), cap_range=(0.2, 1.0))
    assert r.levers["job"]["cap_frac"] == pytest.approx(0.5, abs=1e-9)
    n_compute = 200
    extra = n_compute * 0.5 * ((1 / 0.5) ** 0.5 - 1)
    assert r.levers["job"]["extra_s"] == pytest.approx(extra, rel=1e-9)
    # the LP prices the slowdown on the chords of a convex curve: at or above the exact value
    value = 0.01 * N * extra / 3600
    assert value <= r.info.objective_usd <= value * 1.05
    assert metrics.max_window_swing_mw(r.p_pcc_mw, 0.5, 10.0) <= 20.0 + 1e-6


def test_burn_conversion_keeps_the_lp_solution_and_its_cost():
    # an optimal solution with burn, made to charge and discharge at once at the same PCC,
    # energy and cost; burn_overlap must undo it exactly into the same LP's feasible set
    p = square_w(200, 8, 4)
    o = opt(energy_price_usd_per_mwh=0.5)
    st = bess(extendable=False, p_rated_mw=200.0, e_rated_mwh=0.002)  # power, little energy
    inp = single_job_inputs(p, N, TDP, burn=True)
    (ls, d), = lever_pieces(inp, 0.5, 0.0)[0]
    data = {"bess": resolve_storage("bess", st, o, 200 * 0.5 / 3600)}
    pb = Problem(N * p / 1e6 + ls.site_per_gpu * d, 0.5, data, SWING, o, levers=ls)
    m = build_full(pb)
    sol, _ = solve_lp(m.lp, o)
    x = sol.x.copy()
    c, e = m.cols["bess"], m.lever_cols["job"]["burn"]
    s = data["bess"]
    eta = s.eta_c * s.eta_d
    room = (200.0 - x[c["ch"]] - x[c["dis"]]) / (1 + eta)  # p_ch + p_dis <= P after the move
    t = np.flatnonzero((x[e] > 1e-3) & (room > 1.0))[:20]
    assert t.size > 0
    a = np.minimum(x[e][t] / (1 - eta), room[t] - 1e-3)     # move burn into a "resistor"
    x[c["ch"][t]] += a
    x[c["dis"][t]] += eta * a
    x[e[t]] -= a * (1 - eta)
    y, n = burn_overlap(m, x)
    assert n == int(np.sum(np.minimum(x[c["ch"]], x[c["dis"]]) > 1e-6)) >= t.size
    A, cost, lb, ub, rlo, rhi = m.lp.assemble()
    for v in (x, y):
        r = A @ v
        assert np.all(r >= rlo - 1e-6) and np.all(r <= rhi + 1e-6)
        assert np.all(v >= lb - 1e-9) and np.all(v <= ub + 1e-9)
    assert cost @ y == pytest.approx(cost @ x, rel=1e-9) and cost @ y == pytest.approx(sol.objective, rel=1e-7)
    assert np.all(np.minimum(y[c["ch"]], y[c["dis"]]) <= 1e-9)
    np.testing.assert_allclose(m.pcc_of(y), m.pcc_of(x), atol=1e-9)


def test_coarsened_and_periodic_solutions_with_levers_match_the_full_lp():
    p = square_w(1600, 40, 28)              # 0.1 s steps, 4 s iterations
    spec = SpecConfig(window_s=5.0, max_window_swing_mw=15.0, max_ramp_up_mw_per_s=20.0,
                      max_ramp_down_mw_per_s=20.0)
    st = bess(cost_usd_per_kwh=3000.0)
    kw = dict(floor_range=(0.2, 0.9), burn=True)
    o = opt(energy_price_usd_per_mwh=40.0)
    ref = size(p, 0.1, spec, o.model_copy(update={"coarsen": False, "periodic": False}), st, **kw)
    fast = size(p, 0.1, spec, o, st, **kw)
    assert ref.info.method == "full" and ref.info.step_factor == 1
    assert fast.info.step_factor == 2         # gcd of 40, 28 and the 1 s ramp window's 10 steps
    assert fast.info.objective_usd == pytest.approx(ref.info.objective_usd, rel=1e-5)
    per = size(p, 0.1, spec, o.model_copy(update={"coarsen": False, "periodic": True}), st, **kw)
    assert per.info.method == "periodic"
    assert per.info.objective_usd == pytest.approx(ref.info.objective_usd, rel=max(per.info.gap_frac, 1e-6))
    assert per.info.lower_bound_usd <= ref.info.relaxed_objective_usd * (1 + 1e-7)
    for r in (fast, per):
        assert metrics.max_window_swing_mw(r.p_pcc_mw, 0.1, 5.0) <= 15.0 + 1e-6


def test_gpu_levers_need_annualized_capex():
    p = square_w(80, 8, 4)
    with pytest.raises(ScenarioError, match="annualize"):
        size(p, 0.5, SWING, OptimizeConfig(annualize=False), bess(), burn=True)


def test_the_reported_bound_is_the_least_over_the_pieces(monkeypatch):
    """Pieces solved with a bracket: the optimum over all pieces may lie in a piece whose plan
    is not the best, so the bound reported is the least of the pieces' bounds."""
    from dataclasses import replace

    from facility.optimize.driver import api

    p_w = square_w(400, 40, 30)
    o, kw = opt(levers=["storage", "floor", "cap"]), dict(floor_range=(0.2, 0.9), cap_range=(0.5, 1.0))
    best_usd = size(p_w, 0.25, SWING, o, bess(), **kw).info.objective_usd
    seen = []  # (objective, lower bound) per solved piece
    real_solve = api.solve

    def bracketed(pb):
        res = real_solve(pb)
        # as if each piece were proven within a bracket (the interior strategy's): the best
        # piece within 1 %, the others within 50 %
        obj = res.info.objective_usd
        low = obj * (0.99 if obj == best_usd else 0.5)
        seen.append((obj, low))
        res.info = replace(res.info, lower_bound_usd=low, status="gap")
        return res

    monkeypatch.setattr(api, "solve", bracketed)
    r = size(p_w, 0.25, SWING, o, bess(), **kw)
    assert len(seen) >= 2 and r.info.objective_usd == best_usd
    least = min(lo for _, lo in seen)
    assert least < 0.99 * best_usd                     # another piece proves less than the best
    assert r.info.lower_bound_usd == least
    assert r.info.gap_frac == pytest.approx((best_usd - least) / best_usd, rel=1e-12)
