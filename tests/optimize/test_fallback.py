"""A solve that stops at optimize.time_limit_s: the best verified plan with its proven gap
(exit 0 with a warning), exit 3 only when no feasible plan exists."""

import json
import warnings

import numpy as np
import pytest

from facility import metrics
from facility.cli import main
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.errors import InfeasibleError, SolverTimeLimit, exit_code_for
from facility.optimize import size_storage
from facility.optimize.certificates.fallback import averaged_lower_bound_usd, follower_plan
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.model.problem import Problem
from facility.optimize.certificates.verify import verify_plan

DT = 0.5
SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)


def jitter_load(n=1200, seed=3):
    """A 100/40 MW training load whose iterations jitter in length and level (does not repeat):
    600 s at 0.5 s."""
    rng = np.random.default_rng(seed)
    out, hi = [], True
    while sum(map(len, out)) < n:
        k = int(rng.integers(5, 9)) if hi else int(rng.integers(1, 3))
        out.append(np.full(k, (100.0 if hi else 40.0) + rng.normal(0, 1.5)))
        hi = not hi
    return np.concatenate(out)[:n]


def bess(**kw):
    base = dict(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.5,
                cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    base.update(kw)
    return BessConfig(**base)


@pytest.fixture(scope="module")
def optimum():
    return size_storage(jitter_load(), DT, {"bess": bess()}, SPEC, OptimizeConfig())


def test_time_limit_returns_the_verified_fallback_plan_with_its_gap(optimum):
    load = jitter_load()
    opt = OptimizeConfig(time_limit_s=0.01)
    with pytest.warns(UserWarning, match=r"optimize.time_limit_s = 0.01 s.*gap_frac"):
        r = size_storage(load, DT, {"bess": bess()}, SPEC, opt)
    i = r.info
    assert i.status == "gap" and i.method == "follower"
    assert optimum.info.status == "optimal"
    # a valid lower bound: below the full LP's optimum (a relaxation of it), above 0
    assert 0 < i.lower_bound_usd <= optimum.info.relaxed_objective_usd * (1 + 1e-9)
    assert i.objective_usd >= optimum.info.objective_usd
    assert i.gap_frac == pytest.approx((i.objective_usd - i.lower_bound_usd) / i.objective_usd)
    # the plan meets every limit, recomputed on the fine grid
    pcc = r.p_pcc_mw
    ch, dis = r.p_charge_mw["bess"], r.p_discharge_mw["bess"]
    assert np.allclose(pcc, load + ch - dis) and np.max(np.minimum(ch, dis)) == 0.0
    up, down = metrics.max_ramp_mw_per_s(pcc, DT, 1.0)
    assert up <= 2.0 + 1e-6 and down <= 2.0 + 1e-6
    assert metrics.max_ramp_mw_per_min(pcc, DT) <= 20.0 + 1e-6
    assert metrics.max_window_swing_mw(pcc, DT, 5.0) <= 5.0 + 1e-6
    soc = r.soc_frac["bess"]
    assert soc.min() >= 0.05 - 1e-7 and soc.max() <= 0.95 + 1e-7 and soc[-1] >= 0.5 - 1e-9


def test_averaged_lower_bound_is_below_the_lp_optimum(optimum):
    load = jitter_load()
    opt = OptimizeConfig()
    data = {"bess": resolve_storage("bess", bess(), opt, load.size * DT / 3600)}
    pb = Problem(load, DT, data, SPEC, opt)
    for n_target in (1200, 300, 40):  # g = 1 is the LP itself
        lb = averaged_lower_bound_usd(pb, 30.0, n_target=n_target)
        assert lb <= optimum.info.relaxed_objective_usd * (1 + 1e-9)
    assert averaged_lower_bound_usd(pb, 30.0, n_target=1200) == pytest.approx(
        optimum.info.relaxed_objective_usd, rel=1e-7)


def test_follower_plan_meets_a_dynamic_range_and_equal_terminal():
    load = jitter_load(600)
    spec = SPEC.model_copy(update={"max_dynamic_range_mw": 3.0})
    opt = OptimizeConfig()
    st = bess(terminal_soc="equal_initial")
    data = {"bess": resolve_storage("bess", st, opt, load.size * DT / 3600)}
    pb = Problem(load, DT, data, spec, opt)
    plan = follower_plan(pb)
    assert plan is not None and verify_plan(load, DT, data, spec, plan) is None
    pcc = load + plan["bess"][2] - plan["bess"][3]
    assert np.ptp(pcc) <= 3.0 + 1e-9


def test_time_limit_without_a_feasible_plan_is_exit_3():
    # 5 kWh of storage cannot carry the moving average's difference: no plan at all
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverTimeLimit) as ei:
            size_storage(jitter_load(), DT, {"bess": bess(max_e_rated_mwh=0.005)}, SPEC,
                         OptimizeConfig(time_limit_s=0.01))
    assert isinstance(ei.value, InfeasibleError) and exit_code_for(ei.value) == 3
    assert "optimize.time_limit_s" in str(ei.value) and "No feasible plan" in str(ei.value)


SCENARIO = """
schema_version = 1
name = "time_limit"
seed = 4
[time]
horizon_s = 300
dt_s = 0.5
[[jobs]]
name = "job"
n_gpus = 20000
gpu = "h100"
workload = "stochastic"
period_s = 4.0
compute_frac = 0.8
p_low_frac = 0.4
jitter_frac = 0.1
[bess]
enabled = true
extendable = true
max_p_rated_mw = 200.0
max_e_rated_mwh = {emax}
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 250.0
[spec]
max_ramp_mw_per_min = 10.0
window_s = 5.0
max_window_swing_mw = 2.0
[optimize]
time_limit_s = 0.01
[controller]
kind = "optimal"
"""


def test_size_cli_time_limit_exit_0_with_warning(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(emax=50.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "warning: the solver stopped at optimize.time_limit_s = 0.01 s" in err and "gap_frac" in err
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    assert js["solver_status"] == "gap" and js["method"] == "follower"
    assert 0 < js["lower_bound_usd"] < js["objective_usd"]
    assert js["gap_frac"] == pytest.approx(1 - js["lower_bound_usd"] / js["objective_usd"])
    assert js["verified"] is True


def test_size_cli_time_limit_without_plan_exit_3(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text(SCENARIO.format(emax=0.001))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 3
    assert "optimize.time_limit_s" in capsys.readouterr().err


def test_periodic_restriction_at_the_time_limit_skips_the_larger_full_lp(monkeypatch):
    """The periodic reduction's restriction stopping at the limit: the full LP (larger) is not
    started for another time_limit_s; the verified fallback plan comes back instead."""
    import facility.optimize.driver.api as api

    def no_full(pb):
        raise AssertionError("the full LP ran after the periodic restriction's time limit")

    import facility.optimize.strategies.periodic as periodic

    calls = []

    def restriction_stops(model, *args, **kwargs):
        # the restriction stopping at the limit, whatever the machine's speed (a real 0.01 s
        # limit let a fast CI machine finish the small restriction and never hit the path)
        calls.append(model)
        raise SolverTimeLimit("HiGHS stopped at optimize.time_limit_s = 0.01 s",
                              {"termination": "maxTimeLimit"})

    monkeypatch.setattr(api, "solve_full", no_full)
    monkeypatch.setattr(periodic, "solve_model", restriction_stops)
    load = np.tile(np.r_[np.full(5, 100.0), np.full(2, 40.0)], 700)  # 4,900 steps, runs 5 / 2
    with pytest.warns(UserWarning, match=r"time_limit_s"):
        r = size_storage(load, DT, {"bess": bess()}, SPEC, OptimizeConfig(time_limit_s=0.01))
    assert len(calls) == 1  # the periodic restriction was the one solve tried
    assert r.info.status == "gap" and r.info.method == "follower"
    assert 0 < r.info.lower_bound_usd <= r.info.objective_usd
