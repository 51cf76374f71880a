"""Strategy ``blocks`` (facility.optimize.blocks): a rolling plan bracketed by window lower
bounds, on loads that do not repeat.

Short horizons here (1,680 steps at 0.25 s, so 3 stretches and 3 windows of the strategy)
where the full LP is quick: the full LP's optimum must lie inside the strategy's bracket,
the plan must meet every limit as ``facility.metrics`` measures it on the fine grid, and
its storage must obey its own physics (SoC band, energy balance, no simultaneous charge and
discharge).
"""

import warnings

import numpy as np
import pytest

from facility import metrics
from facility.config.load import scenario_from_dict
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.blocks import (BlockStats, applies, deficit_prices, longest_lag_steps, rolling_plan,
                                      solve_blocks, window_lower_bound)
from facility.optimize.formulation import plan_cost_kusd, resolve_storage
from facility.optimize.full import solve_full
from facility.optimize.problem import Problem
from facility.optimize.verify import verify_plan
from facility.simulate import generate_trace

DT = 0.25
HORIZON_S = 420.0
SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)
TRACE = "tests/data/nvidia_smi_8xh100_jitter_stall.csv"


def site_load(kind: str, horizon_s: float = HORIZON_S, dt_s: float = DT) -> np.ndarray:
    """Site power [MW] of a ~100 MW site from facility's load generator: a jittered
    ``stochastic`` job, the measured nvidia-smi ``trace`` looped per GPU, or the stochastic job
    with a start ramp, a checkpoint and a stop inside the horizon (``start_stop``)."""
    job = {"name": "pretrain", "gpu": "b200", "n_gpus": 72800, "workload": "stochastic",
           "period_s": 4.0, "compute_frac": 0.8, "p_low_frac": 0.4, "jitter_frac": 0.1,
           "compute_frac_jitter": 0.05, "noise_high_frac": 0.015, "noise_low_frac": 0.015,
           "n_rack_groups": 16, "straggler_frac": 0.02, "start_s": -10.0}
    if kind == "trace":
        job = {"name": "pretrain", "gpu": "h100", "n_gpus": 130000, "workload": "trace",
               "trace_file": TRACE, "trace_scale": "per_gpu", "start_s": 0.0}
    elif kind == "start_stop":
        job.update(start_s=60.0, ramp_s=10.0, stop_s=horizon_s - 60.0,
                   checkpoint_every_s=120.0, checkpoint_s=10.0)
    sc = scenario_from_dict({"schema_version": 1, "name": f"blocks_{kind}", "seed": 5,
                             "time": {"horizon_s": horizon_s, "dt_s": dt_s}, "jobs": [job],
                             "site": {"non_gpu_frac": 0.25, "pue": 1.1}})
    return generate_trace(sc)["p_load_mw"].to_numpy()


def bess(**kw) -> BessConfig:
    base = dict(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    base.update(kw)
    return BessConfig(**base)


def problem(load, spec=SPEC, opt=None, **kw) -> Problem:
    opt = opt or OptimizeConfig()
    sd = {"bess": resolve_storage("bess", bess(**kw), opt, load.size * DT / 3600.0)}
    return Problem(load, DT, sd, spec, opt)


@pytest.fixture(scope="module", params=["stochastic", "trace", "start_stop"])
def case(request):
    """(kind, problem, full-LP result, blocks result, stats) for one load type."""
    pb = problem(site_load(request.param))
    full = solve_full(pb)
    st = BlockStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        blk = solve_blocks(pb, min_steps=0, stats=st)
    return request.param, pb, full, blk, st


def test_the_full_lp_optimum_lies_inside_the_bracket(case):
    kind, pb, full, blk, st = case
    assert blk is not None, kind
    i = blk.info
    assert i.method == "blocks"
    opt = full.info.relaxed_objective_usd if np.isfinite(full.info.relaxed_objective_usd) \
        else full.info.objective_usd
    # the lower bound is a bound of the LP optimum (which bounds the realizable optimum)
    assert i.lower_bound_usd <= opt * (1 + 1e-7)
    # the plan is feasible, so it cannot beat the LP optimum
    assert i.objective_usd >= opt * (1 - 1e-7)
    # and the reported gap covers how far it is from the optimum
    assert i.gap_frac == pytest.approx((i.objective_usd - i.lower_bound_usd) / i.objective_usd, abs=1e-12)
    assert (i.objective_usd - full.info.objective_usd) / i.objective_usd <= i.gap_frac + 1e-7
    assert i.status == ("optimal" if i.gap_frac <= pb.optimize.max_gap_frac else "gap")
    # both ends were tried (priced first, then hard) and the cheaper verified plan kept
    assert [k for k, _, _ in st.passes] == ["priced", "hard"]
    assert i.objective_usd == pytest.approx(min(c for _, c, _ in st.passes if c is not None), rel=1e-12)
    assert st.n_stretches == 3 * len(st.passes) and st.n_windows == 3


def test_the_plan_meets_every_limit_on_the_fine_grid(case):
    kind, pb, _, blk, _ = case
    pcc = metrics.power_metrics(blk.p_pcc_mw, DT, SPEC)
    rows = metrics.compliance(pcc, SPEC)
    assert rows["compliant"], (kind, rows, pcc)


def test_the_storage_obeys_its_physics(case):
    kind, pb, _, blk, _ = case
    s = pb.storages["bess"]
    ch, dis = blk.p_charge_mw["bess"], blk.p_discharge_mw["bess"]
    E, P = blk.e_rated_mwh_opt["bess"], blk.p_rated_mw_opt["bess"]
    e = blk.soc_frac["bess"] * E
    assert np.all(ch >= -1e-9) and np.all(dis >= -1e-9)
    assert np.all(np.minimum(ch, dis) <= 1e-6), "simultaneous charge and discharge"
    assert np.all(ch <= P + 1e-6) and np.all(dis <= P + 1e-6)
    assert np.all(e >= s.soc_min * E - 1e-6) and np.all(e <= s.soc_max * E + 1e-6)
    assert e[0] == pytest.approx(s.soc0 * E, abs=1e-6)
    # energy balance of every step (σ = 0)
    de = e[1:] - e[:-1]
    assert de == pytest.approx((s.eta_c * ch - dis / s.eta_d) * DT / 3600.0, abs=1e-7)
    # the PCC is the load plus the storage
    assert blk.p_pcc_mw == pytest.approx(pb.load_mw + ch - dis, abs=1e-6)


def test_window_bound_is_below_the_optimum_for_any_window_length():
    pb = problem(site_load("start_stop"))
    full = solve_full(pb).info.relaxed_objective_usd
    H = longest_lag_steps(pb)
    assert H == int(60 / DT)
    bounds = []
    for core in (240, 720):
        lb, ratings, win = window_lower_bound(pb, core, core, 60.0)
        assert lb is not None and lb <= full * (1 + 1e-7)
        assert win[1] - win[0] <= 2 * core
        bounds.append(lb)
    assert max(bounds) > 0.5 * full  # not a trivial bound


def test_rolling_plan_grows_ratings_and_stays_verified():
    """From ratings far too small the stretches grow P and E (at capex); the committed stored
    energy is shifted with E, so the whole plan still verifies step by step."""
    pb = problem(site_load("stochastic"))
    st = BlockStats()
    plan, why = rolling_plan(pb, {"bess": 0.0}, {"bess": 0.0}, core_steps=600, look_steps=300,
                             time_limit_s=60.0, stats=st)
    assert plan is not None, why
    assert st.grown_at and st.grown_at[0] == 0
    assert verify_plan(pb.load_mw, DT, pb.storages, SPEC, plan, pb.margin_frac) is None
    P, E = plan["bess"][:2]
    assert P > 10.0 and E > 0.0


def test_priced_end_gives_another_plan_and_a_huge_price_is_the_hard_end():
    """With a priced deficit a look-ahead may end below s0 (the hard end may not); the
    price follows c_P over the stretch's duration, and a very high price is the hard end."""
    pb = problem(site_load("stochastic"))
    lam = deficit_prices(pb, 900)
    assert lam["bess"] == pytest.approx(1.2 * 150_000 / (900 * DT / 3600.0))  # 150 USD/kW
    plans = {}
    for key, price in (("hard", None), ("priced", lam), ("huge", {"bess": 1e12})):
        plan, why = rolling_plan(pb, {"bess": 30.0}, {}, core_steps=600, look_steps=300,
                                 time_limit_s=60.0, deficit_usd_per_mwh=price)
        assert plan is not None, why
        assert verify_plan(pb.load_mw, DT, pb.storages, SPEC, plan, pb.margin_frac) is None
        plans[key] = plan["bess"]
    hard, huge, priced = plans["hard"], plans["huge"], plans["priced"]
    # at a huge price no deficit pays: the hard end's plan
    assert huge[0] == pytest.approx(hard[0], rel=1e-6) and huge[1] == pytest.approx(hard[1], rel=1e-6)
    cost = {k: plan_cost_kusd(pb.storages, {"bess": v}, DT, pb.price_usd_per_mwh) for k, v in plans.items()}
    assert cost["huge"] == pytest.approx(cost["hard"], rel=1e-6)
    # at the derived price the plan is another one (it uses the room below s0 where it pays)
    assert abs(cost["priced"] - cost["hard"]) > 1e-4 * cost["hard"]


def test_applies_only_where_the_proof_holds():
    load = site_load("stochastic")
    assert applies(problem(load))
    assert not applies(problem(load, self_discharge_frac_per_h=0.01))
    assert not applies(problem(load, spec=SPEC.model_copy(update={"band_min_hz": 0.1, "band_max_hz": 5.0,
                                                                   "max_band_peak_mw": 2.0})))
    assert solve_blocks(problem(load)) is None  # shorter than MIN_STEPS: the full LP is quick


def test_size_storage_takes_the_blocks_path_on_a_long_horizon(monkeypatch):
    """The driver picks the strategy past MIN_STEPS on a load that does not repeat; with a
    short time limit the bracket is returned with its gap and a warning that says so."""
    import facility.optimize.blocks as blocks

    import facility.optimize.api as api

    monkeypatch.setattr(blocks, "MIN_STEPS", 1000)
    monkeypatch.setattr(api, "FULL_LP_S_PER_STEP2", 1.0)  # no time left for the full LP
    load = site_load("stochastic")
    opt = OptimizeConfig(max_gap_frac=1e-9, time_limit_s=30.0)
    with pytest.warns(UserWarning, match=r"bracket met optimize.max_gap_frac.*blocks plan"):
        r = size_storage(load, DT, {"bess": bess()}, SPEC, opt)
    assert r.info.method == "blocks" and r.info.status == "gap" and r.info.gap_frac > 1e-9
    assert 0 < r.info.lower_bound_usd < r.info.objective_usd


def test_size_storage_closes_the_bracket_with_the_full_lp_when_time_allows(monkeypatch):
    import facility.optimize.blocks as blocks

    monkeypatch.setattr(blocks, "MIN_STEPS", 1000)
    load = site_load("stochastic")
    opt = OptimizeConfig(max_gap_frac=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = size_storage(load, DT, {"bess": bess()}, SPEC, opt)
    ref = size_storage(load, DT, {"bess": bess()}, SPEC, opt.model_copy(update={"periodic": False}))
    assert r.info.method == "full" and r.info.status == "optimal"
    assert r.info.objective_usd == pytest.approx(ref.info.objective_usd, rel=1e-6)
