"""Strategy ``interior`` (facility.optimize.strategies.interior): an interior-point restriction of the LP
bracketed by a Lagrangian lower bound, on loads that do not repeat.

Short horizons here (1,680 steps at 0.25 s) where HiGHS' simplex solves the full LP quickly:
its optimum must lie inside the strategy's bracket, the plan must meet every limit as
``facility.metrics`` measures it on the fine grid, and its storage must obey its own physics.
"""

import time
import warnings

import numpy as np
import pytest

from facility import metrics
from facility.scenario import scenario_from_dict
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.certificates import bracket_jobs
from facility.optimize.model import pcc_grid
from facility.optimize.strategies import interior
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.strategies.full import solve_full
from facility.optimize.strategies.interior import InteriorStats, applies, realize, run_solves, solve_interior
from facility.optimize.model.pcc_grid import build_grid_model, group_for
from facility.optimize.model.problem import Problem
from facility.optimize.certificates.verify import verify_plan
from facility.run.orchestrator import generate_trace

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
    sc = scenario_from_dict({"schema_version": 1, "name": f"interior_{kind}", "seed": 5,
                             "time": {"horizon_s": horizon_s, "dt_s": dt_s}, "jobs": [job],
                             "site": {"non_gpu_frac": 0.25, "pue": 1.1}})
    return generate_trace(sc)["p_load_mw"].to_numpy()


def bess(**kw) -> BessConfig:
    base = dict(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    base.update(kw)
    return BessConfig(**base)


def problem(load, spec=SPEC, opt=None, dt=DT, **kw) -> Problem:
    opt = opt or OptimizeConfig(annualize=False)
    sd = {"bess": resolve_storage("bess", bess(**kw), opt, load.size * dt / 3600.0)}
    return Problem(load, dt, sd, spec, opt)


def lp_optimum(res) -> float:
    """The full LP's optimum (before its complementarity repair) [USD]."""
    i = res.info
    return i.relaxed_objective_usd if np.isfinite(i.relaxed_objective_usd) else i.objective_usd


@pytest.fixture(scope="module", params=["stochastic", "trace", "start_stop"])
def case(request):
    """(kind, problem, full-LP result, interior result, stats) for one load type."""
    pb = problem(site_load(request.param))
    full = solve_full(pb)
    st = InteriorStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True, stats=st)
    return request.param, pb, full, res, st


def test_the_full_lp_optimum_lies_inside_the_bracket(case):
    kind, pb, full, res, st = case
    assert res is not None, kind
    i = res.info
    assert i.method == "interior" and st.group == 1
    opt = lp_optimum(full)
    if kind != "start_stop":
        # the lower bound is a bound of the LP optimum (which bounds the realizable optimum)
        assert i.lower_bound_usd <= opt * (1 + 1e-9)
    else:
        # with the directions the window limits force it bounds the realizable optimum only:
        # above the LP's (the resistor), at most the full LP's repaired plan
        assert opt < i.lower_bound_usd <= full.info.objective_usd * (1 + 1e-9)
    # the plan is realizable, so it cannot beat the LP optimum
    assert i.objective_usd >= opt * (1 - 1e-9)
    assert i.gap_frac == pytest.approx((i.objective_usd - i.lower_bound_usd) / i.objective_usd, abs=1e-12)
    # the full LP's own repaired plan is no better than the bracket allows
    assert (i.objective_usd - full.info.objective_usd) / i.objective_usd <= i.gap_frac + 1e-9
    assert i.status == ("optimal" if i.gap_frac <= pb.optimize.max_gap_frac else "gap")
    if kind != "start_stop":
        # a steady job: the plan is the LP optimum to well within the default target
        assert i.gap_frac <= 1e-4 and i.status == "optimal"
        assert i.objective_usd == pytest.approx(opt, rel=1e-4)
    else:
        # a job start under the per-minute limit: the LP's optimum uses simultaneous charge and
        # discharge (~0.7 % below the plan here); the forced directions take the resistor out of
        # the bound, and what is left is the per-minute limit's blocks
        assert i.n_forced_steps > 0
        assert (full.info.objective_usd - opt) / full.info.objective_usd > 5e-3
        assert i.gap_frac < 2.5e-3 and i.gap_reason in ("", "long_lag")


def test_the_plan_meets_every_limit_on_the_fine_grid(case):
    kind, pb, _, res, _ = case
    pcc = metrics.power_metrics(res.p_pcc_mw, DT, SPEC)
    rows = metrics.compliance(pcc, SPEC)
    assert rows["compliant"], (kind, rows, pcc)


def test_the_storage_obeys_its_physics(case):
    kind, pb, _, res, _ = case
    s = pb.storages["bess"]
    ch, dis = res.p_charge_mw["bess"], res.p_discharge_mw["bess"]
    E, P = res.e_rated_mwh_opt["bess"], res.p_rated_mw_opt["bess"]
    e = res.soc_frac["bess"] * E
    assert np.all(ch >= 0) and np.all(dis >= 0)
    assert np.all(np.minimum(ch, dis) == 0), "simultaneous charge and discharge"
    assert np.all(ch <= P + 1e-9) and np.all(dis <= P + 1e-9)
    assert np.all(e >= s.soc_min * E - 1e-9) and np.all(e <= s.soc_max * E + 1e-9)
    assert e[0] == pytest.approx(s.soc0 * E, abs=1e-9)
    assert e[-1] >= s.soc0 * E - 1e-8 * E
    de = e[1:] - e[:-1]
    assert de == pytest.approx((s.eta_c * ch - dis / s.eta_d) * DT / 3600.0, abs=1e-9)
    assert res.p_pcc_mw == pytest.approx(pb.load_mw + ch - dis, abs=1e-9)


def test_the_bracket_on_groups_holds_the_full_lp_optimum(monkeypatch):
    """With groups (g > 1, as at a 10-ms step) the plan comes from the PCC held over groups
    and the bound from group means: the full LP's optimum lies between them, and the bracket
    narrows as g falls. At 50 ms the 5-s window is 100 steps; a smaller K_EXACT forces groups."""
    dt = 0.05
    load = site_load("stochastic", horizon_s=60.0, dt_s=dt)
    pb = problem(load, dt=dt, opt=OptimizeConfig(annualize=False, max_gap_frac=0.1))  # no refinement here
    opt = lp_optimum(solve_full(pb))
    gaps = []
    for k_exact in (20, 50):  # g = 5, then 2
        monkeypatch.setattr(pcc_grid, "K_EXACT", k_exact)
        st = InteriorStats()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_interior(pb, min_steps=0, in_process=True, stats=st)
        assert st.group == 100 // k_exact and {r["g"] for r in st.solves} == {st.group}
        assert res.info.lower_bound_usd <= opt * (1 + 1e-9) <= res.info.objective_usd * (1 + 2e-9)
        assert verify_plan(pb.load_mw, dt, pb.storages, SPEC, _plan(res), 0.0) is None
        gaps.append(res.info.gap_frac)
    assert gaps[1] < gaps[0] < 0.02
    # with the default target the groups shrink while the bracket is too wide and time is left
    monkeypatch.setattr(pcc_grid, "K_EXACT", 20)
    st = InteriorStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(problem(load, dt=dt), min_steps=0, in_process=True, stats=st)
    gs = [r["g"] for r in st.solves]
    assert gs[0] == 5 and gs == sorted(gs, reverse=True) and st.group < 5
    assert res.info.gap_frac < gaps[0]
    assert res.info.lower_bound_usd <= opt * (1 + 1e-9) <= res.info.objective_usd * (1 + 2e-9)


def _plan(res):
    return {n: (res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n], res.p_charge_mw[n],
                res.p_discharge_mw[n], res.soc_frac[n] * res.e_rated_mwh_opt[n])
            for n in res.p_rated_mw_opt}


def test_group_for_picks_groups_only_on_a_fine_grid():
    load = np.full(100, 50.0)
    assert group_for(problem(load)) == 1                       # 0.25 s: swing window 20 steps
    assert group_for(problem(load, dt=0.1)) == 1                # 50 steps
    assert group_for(problem(load, dt=0.01)) == 4               # 500 steps: g = 4 (125 groups)
    per_minute = SpecConfig(max_ramp_mw_per_min=20.0)           # a long window never sets g
    assert group_for(problem(load, spec=per_minute, dt=0.005)) == 1


def test_groups_are_refined_to_a_size_that_reaches_less_past_the_windows():
    """At 10 ms (ramp window 100 steps, swing window 500) the refinement after groups of 4 takes
    groups of 2: on groups of 3 a held PCC power constrains pairs up to 104 steps apart for the
    100-step window, past the 103 of groups of 4, so that bracket cannot tighten the plan."""
    pb = problem(np.full(100, 50.0), dt=0.01)
    assert [pcc_grid.overreach_steps(pb, g) for g in (5, 4, 3, 2)] == [4, 3, 4, 1]
    assert pcc_grid.finer_group(pb, 5) == 4 and pcc_grid.finer_group(pb, 4) == 2
    assert pcc_grid.finer_group(pb, 3) == 2


def test_restriction_and_relaxation_bracket_the_full_lp_on_groups():
    load = site_load("stochastic", horizon_s=120.0)
    pb = problem(load)
    opt = lp_optimum(solve_full(pb))
    from facility.optimize.solvers.ipm import solve_ipm

    for g in (2, 4):
        up = solve_ipm(build_grid_model(pb, g, "restrict").m.lp)
        lo = solve_ipm(build_grid_model(pb, g, "relax").m.lp)
        assert up.status == lo.status == "ok"
        assert 1000 * lo.objective <= opt * (1 + 1e-6) <= 1000 * up.objective * (1 + 2e-6)


def test_realize_nets_noise_and_keeps_the_pcc():
    """Overlapping charge and discharge of an interior point are netted; the plan verifies and
    its PCC power is the restriction's up to a constant shift."""
    pb = problem(site_load("stochastic"))
    out = bracket_jobs.solve_job(pb, "restrict", 1, None, True)
    raw = out["plan"]
    ch, dis = raw["bess"][2], raw["bess"][3]
    assert np.all(np.minimum(ch, dis) > 0)  # an interior point: overlaps (tiny) everywhere
    plan, grown, why = realize(pb, raw)
    assert plan is not None, why
    assert np.all(np.minimum(plan["bess"][2], plan["bess"][3]) == 0)
    p_new = plan["bess"][2] - plan["bess"][3]
    shift = (ch - dis) - p_new
    assert np.ptp(shift) < 1e-9  # a constant shift of the PCC power changes no window
    assert verify_plan(pb.load_mw, DT, pb.storages, SPEC, plan, 0.0) is None


def test_subprocess_solves_match_and_stop_at_the_time_limit():
    pb = problem(site_load("stochastic", horizon_s=120.0))
    job = (bracket_jobs.solve_job, (pb, "restrict", 1, None, True))
    here, there = run_solves([job], 60.0, in_process=True)[0], run_solves([job, job], 60.0)
    assert all(r is not None for r in there)
    assert there[0]["objective_kusd"] == pytest.approx(here["objective_kusd"], rel=1e-9)
    assert run_solves([job], 1e-3) == [None]  # killed



def test_at_the_time_limit_without_a_plan_the_fallback_answers_not_the_full_lp(monkeypatch):
    """Every solve stopped by the time limit, no plan: storage alone gets the fallback plan
    with its proven gap (as the full LP's own stop gives), GPU levers get the stop (their
    search decides), and the full LP is not started (at an hour its build and presolve alone
    outlasted the limit by minutes: a jittered hour with levers and a band limit ran 15 min
    on a 5-min limit)."""
    from facility.optimize.driver import api
    from facility.optimize.strategies import full
    from facility.errors import SolverTimeLimit
    from facility.optimize.model.levers import lever_pieces, single_job_inputs

    load = site_load("stochastic", horizon_s=120.0)

    def stopped(jobs, limit_s, **kw):
        time.sleep(limit_s + 0.05)
        return [None] * len(jobs)

    def no_full(pb):
        raise AssertionError("the full LP was started after the time limit")

    monkeypatch.setattr(interior, "run_solves", stopped)
    monkeypatch.setattr(api, "solve_full", no_full)
    monkeypatch.setattr(full, "solve_full", no_full)
    pb = problem(load, opt=OptimizeConfig(annualize=False, time_limit_s=1.0))
    with pytest.warns(UserWarning):
        res = solve_interior(pb, min_steps=0, in_process=False)
    assert res.info.method == "follower" and res.info.status == "gap"
    assert 0 < res.info.lower_bound_usd <= res.info.objective_usd
    levers = single_job_inputs(load * 1e6 / 100_000, 100_000, 1000.0, floor_range=(0.2, 0.9),
                               cap_range=(0.5, 1.0), burn=True)
    pieces_pb = problem(load, opt=OptimizeConfig(time_limit_s=1.0, annualize=True))
    ls, d = lever_pieces(levers, DT, pieces_pb.optimize.slowdown_usd_per_gpu_h)[0][0]
    with pytest.raises(SolverTimeLimit, match="time_limit_s"):
        solve_interior(pieces_pb.on_piece(ls, d), min_steps=0, in_process=False)

def test_applies_only_where_the_proof_holds():
    load = site_load("stochastic")
    assert applies(problem(load))
    assert applies(problem(load, self_discharge_frac_per_h=0.01))  # σ > 0 too (issue 49)
    assert applies(problem(load, spec=SPEC.model_copy(update={"band_min_hz": 0.1, "band_max_hz": 5.0,
                                                               "max_band_peak_mw": 2.0})))
    assert solve_interior(problem(load)) is None  # shorter than MIN_STEPS: the full LP is quick


def test_size_storage_takes_the_interior_path_on_a_long_horizon(monkeypatch):
    """Past MIN_STEPS on a load that does not repeat the driver picks the strategy; where it
    cannot prove the target (a job start: the LP relaxation burns energy in a resistor) it
    returns the verified plan with its gap and a warning that says why."""
    monkeypatch.setattr(interior, "MIN_STEPS", 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = size_storage(site_load("stochastic"), DT, {"bess": bess()}, SPEC, OptimizeConfig(annualize=False))
    assert r.info.method == "interior" and r.info.status == "optimal" and r.info.gap_frac <= 1e-4
    # two storages: one may charge while the other discharges, a resistor a site can build, so
    # no direction is forced and the LP's resistor stays in the bound
    two = {"bess": bess(), "ups": bess(cost_usd_per_kw=200.0, cost_usd_per_kwh=300.0)}
    with pytest.warns(UserWarning, match=r"charges and discharges at once.*verified interior plan"):
        r = size_storage(site_load("start_stop"), DT, two, SPEC, OptimizeConfig(annualize=False))
    assert r.info.status == "gap" and r.info.gap_reason == "complementarity"
    assert 0 < r.info.lower_bound_usd < r.info.objective_usd and r.info.n_forced_steps == 0


def test_every_gap_reason_has_its_sentence():
    """Each reason the strategy may give is explained to the user (warning and CLI)."""
    import inspect

    from facility.optimize.driver.api import GAP_REASONS

    src = inspect.getsource(interior.solve_interior)
    for reason in ("time", "dispatch", "complementarity", "groups", "long_lag", "spectral"):
        assert f'"{reason}"' in src and reason in GAP_REASONS


def _realizable_optimum_usd(pb: Problem) -> tuple[float, float]:
    """The realizable optimum of ``pb`` (no simultaneous charge and discharge) as a MILP:
    the full LP plus one binary u_t per step, p^ch_t ≤ M u_t, p^dis_t ≤ M (1 − u_t), solved
    by HiGHS' branch and bound. Returns (objective, proven lower bound) [USD]."""
    import highspy
    import scipy.sparse as sp

    from facility.optimize.model.formulation import build_model
    from facility.optimize.solvers.lp import highs_lp, new_highs

    m = build_model(pb.load_mw, pb.dt_s, pb.storages, pb.spec, pb.price_usd_per_mwh)
    A, c, lb, ub, rlo, rhi = m.lp.assemble()
    T, n0, big = pb.n_steps, A.shape[1], float(pb.storages["bess"].p_hi)
    u, r, one = n0 + np.arange(T), np.arange(T), np.ones(T)
    ch, dis = m.cols["bess"]["ch"], m.cols["bess"]["dis"]
    rows = [sp.coo_matrix((np.r_[one, s * big * one], (np.r_[r, r], np.r_[x, u])), shape=(T, n0 + T))
            for x, s in ((ch, -1.0), (dis, 1.0))]
    A2 = sp.vstack([sp.hstack([A, sp.csc_matrix((A.shape[0], T))])] + rows).tocsc()
    h = new_highs()
    h.setOptionValue("mip_rel_gap", 1e-6)
    h.setOptionValue("time_limit", 300.0)
    h.passModel(highs_lp(A2, np.r_[c, np.zeros(T)], np.r_[lb, np.zeros(T)], np.r_[ub, one],
                          np.r_[rlo, np.full(2 * T, -np.inf)], np.r_[rhi, np.zeros(T), big * one]))
    h.changeColsIntegrality(T, u.astype(np.int32), np.full(T, highspy.HighsVarType.kInteger, np.uint8))
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    info = h.getInfo()
    return 1000.0 * info.objective_function_value, 1000.0 * info.mip_dual_bound


def test_the_start_stop_plan_is_the_realizable_optimum_and_the_forced_directions_prove_it():
    """Across a job start, a checkpoint and a stop with the storage near full, the LP's optimum
    burns energy (charge and discharge at once) and lies ~1 % below any realizable plan. The
    MILP with one binary per step (a reference the strategy cannot afford at scale) proves
    that the strategy's repaired plan is the realizable optimum itself, and the bound with the
    directions the window limits force (facility.optimize.certificates.directions) proves it too: at most
    the MILP's optimum, within optimize.max_gap_frac of the plan."""
    pb = problem(site_load("start_stop", 240.0, 0.5), dt=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True)
    opt_usd, milp_low_usd = _realizable_optimum_usd(pb)
    i = res.info
    assert i.relaxed_objective_usd < opt_usd * (1 - 5e-3)  # the LP's resistor
    assert i.n_forced_steps > 0
    assert i.lower_bound_usd <= milp_low_usd * (1 + 1e-9)
    assert milp_low_usd * (1 - 1e-9) <= i.objective_usd <= opt_usd * (1 + 1e-6)
    assert i.status == "optimal" and i.gap_reason == "" and i.gap_frac <= pb.optimize.max_gap_frac


def test_restrictions_after_the_direction_bound_carry_the_forced_directions(monkeypatch):
    """Once the bound has the directions the window limits force, every later restriction
    carries them as direction fixes (solved to the bound's PIQP tolerances), and its plan
    keeps them: no charge where a plan as cheap as the best cannot charge, no discharge where
    it cannot discharge; a repair's own fixes stay beside them."""
    pb = problem(site_load("start_stop", 240.0, 0.5), dt=0.5)
    seen = []
    real = interior.run_solves

    def recording(jobs, limit_s, **kw):
        seen.extend(a for _, a in jobs)
        return real(jobs, limit_s, **kw)

    monkeypatch.setattr(interior, "run_solves", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True)
    assert res.info.n_forced_steps > 0
    forced = next(a[8] for a in reversed(seen) if a[1] == "relax" and a[8])["bess"]
    assert forced["ch"].any() and forced["dis"].any()
    run = interior._Search(pb, interior.InteriorStats(), True)
    assert run.job("restrict", 1)[1][3] is None  # before the bound: no fixes
    run.forced = {"bess": forced}
    repair = {"bess": {"ch": np.zeros(pb.n_steps, bool), "dis": np.arange(pb.n_steps) == 7}}
    fn, args = run.job("restrict", 1, repair)
    zero, options = args[3], args[6]
    assert options == bracket_jobs.BOUND_IPM_OPTIONS and zero["bess"]["dis"][7]
    for side in ("ch", "dis"):
        assert np.all(zero["bess"][side][forced[side]])
    _, _, ch, dis, _ = fn(*args)["plan"]["bess"]
    assert np.all(ch[forced["ch"]] == 0.0) and np.all(dis[forced["dis"]] == 0.0) and dis[7] == 0.0


def test_with_processes_the_repair_after_the_direction_bound_runs_beside_its_relaxation(monkeypatch):
    """With the solves in processes, the repair round that follows the direction bound is
    solved at once with the bound's relaxation (one batch of two jobs, one batch fewer), and
    the bracket is the one of the solves one after the other, or tighter."""
    pb = problem(site_load("start_stop", 240.0, 0.25), dt=0.25)
    real = interior.run_solves

    def run(in_process):
        batches = []

        def recording(jobs, limit_s, **kw):
            batches.append([(a[1], a[3] is not None, a[8] is not None) for _, a in jobs])
            return real(jobs, limit_s, in_process=True)  # here: the same jobs, one by one

        monkeypatch.setattr(interior, "run_solves", recording)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve_interior(pb, min_steps=0, in_process=in_process)
        return res.info, batches

    one, seq = run(True)
    both, par = run(False)
    assert all(len(b) == 1 for b in seq) and one.n_forced_steps > 0
    assert [("restrict", True, False), ("relax", False, True)] in par
    assert len(par) == len(seq) - 1
    assert both.objective_usd <= one.objective_usd * (1 + 1e-9)
    assert both.lower_bound_usd >= one.lower_bound_usd * (1 - 1e-9)


def test_the_dynamic_range_binds_in_the_bracketing_lps():
    """``max_dynamic_range_mw`` is a row of both bracketing LPs (on their PCC columns): the
    plan keeps the PCC power within it, and it costs more storage than without it."""
    load = site_load("stochastic")
    tight = SpecConfig(**{**SPEC.model_dump(exclude_none=True), "max_dynamic_range_mw": 10.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        free = solve_interior(problem(load), min_steps=0, in_process=True)
        res = solve_interior(problem(load, spec=tight), min_steps=0, in_process=True)
    assert float(np.ptp(free.p_pcc_mw)) > 12.0  # the swing limits alone leave ~15 MW
    assert float(np.ptp(res.p_pcc_mw)) <= 10.0 + 1e-6
    assert res.info.objective_usd > free.info.objective_usd * (1 + 1e-3)
    assert res.info.lower_bound_usd <= res.info.objective_usd
