"""The fast guard (facility.control.guard): the spec's windows and ramps held through steps no
controller was told of, breaches reported with the saturated resource."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from facility import metrics as fm
from facility.control import run_control
from facility.control.guard import guard_bounds, guard_limits, guard_push, new_guard_state
from facility.config.schema import Scenario

from .conftest import check_invariants, make, square

DT = 0.05
SPEC = {"window_s": 5.0, "max_window_swing_mw": 10.0}
HUGE = {"enabled": True, "p_rated_mw": 1e4, "e_rated_mwh": 1e3, "eff_charge_frac": 0.97,
        "eff_discharge_frac": 0.97}


def _crash_load(t, drop_mw=50.0, at_s=20.0, back_s=None):
    load = 150.0 + square(t, 3.0, 0.7, 10.0, -10.0)
    off = (t >= at_s) if back_s is None else ((t >= at_s) & (t < back_s))
    return np.where(off, load - drop_mw, load)


def test_bounds_match_brute_force():
    """The deques give the window extrema of the history exactly (every row, every step)."""
    sc = Scenario(jobs=[{"n_gpus": 10}], spec={"window_s": 2.0, "max_window_swing_mw": 3.0,
                                                "max_ramp_up_mw_per_s": 1.0, "ramp_window_s": 0.5,
                                                "max_ramp_mw_per_min": 7.0})
    k, lim = guard_limits(sc.spec, 0.1, 0.0)
    by_k = {int(kc): lim[c] for c, kc in enumerate(k)}     # the rows by window steps
    assert sorted(k) == [5, 20, 600] and np.isinf(by_k[5][1])
    q, qs = new_guard_state(k)
    p = np.random.default_rng(1).normal(size=1500).cumsum()
    for t in range(p.size):
        lo, hi, lo_r, hi_r, seen = guard_bounds(t, p, k, lim, q, qs)
        assert seen == (t > 0)
        if t:
            exp_hi = min(p[max(0, t - kc):t].min() + lim[c, 0] for c, kc in enumerate(k))
            exp_lo = max(p[max(0, t - kc):t].max() - lim[c, 1] for c, kc in enumerate(k))
            assert hi == pytest.approx(exp_hi) and lo == pytest.approx(exp_lo)
            assert (lo_r, hi_r) == (lo, hi)            # no margin
        guard_push(t, p, k, q, qs)


@pytest.mark.parametrize("kind", ["moving_average", "filter", "ramp_limit"])
def test_unannounced_drop_held_to_the_margined_window(kind):
    """A 50 MW drop nobody announced: without the guard the linear controllers pass more than
    the 10 MW/5 s limit; with it the PCC falls by (1 - 0.1) x 10 MW at once and then at most
    that per window: a staircase, the storage charging the difference."""
    t = np.arange(0, 60, DT)
    load = _crash_load(t)
    sc0, sto = make(rack_storage=HUGE, spec=SPEC, controller={"kind": kind, "guard": False})
    sc1, _ = make(rack_storage=HUGE, spec=SPEC, controller={"kind": kind})
    r0, r1 = run_control(load, DT, sc0, sto), run_control(load, DT, sc1, sto)
    check_invariants(r1, sto, DT)
    if kind != "ramp_limit":
        assert fm.max_window_swing_mw(r0.p_pcc_mw, DT, 5.0) > 12.0
    assert fm.max_window_swing_mw(r1.p_pcc_mw, DT, 5.0) <= 9.0 + 1e-9
    assert r1.info["guard"]["breach_count"] == 0
    if kind != "ramp_limit":
        assert r1.info["guard"]["clipped_steps"] > 0
        i = int(np.searchsorted(t, 20.0))
        # the storage takes the step: charging right after the drop
        assert r1.p_storage_mw["rack_storage"][i] > 30.0
    assert not any(e["kind"] == "guard_breach" for e in r1.events)


def test_guard_off_for_optimal_and_none():
    t = np.arange(0, 30, DT)
    for kind in ("none", "optimal"):
        sc, sto = make(rack_storage=HUGE, spec=SPEC, controller={"kind": kind})
        plan = {"rack_storage": np.zeros(t.size)} if kind == "optimal" else None
        r = run_control(_crash_load(t), DT, sc, sto, plan=plan)
        assert "guard" not in r.info


@pytest.mark.parametrize("limit,p_mw,e_mwh", [("power", 20.0, 50.0), ("max_soc", 500.0, 0.05)])
def test_saturation_is_a_reported_breach(limit, p_mw, e_mwh):
    """A storage too small for the step: the guard cannot hold, and says which resource ran
    out (its power, or its SoC: the 50 MW drop charges it to the top)."""
    rack = dict(HUGE, p_rated_mw=p_mw, e_rated_mwh=e_mwh)
    t = np.arange(0, 60, DT)
    sc, sto = make(rack_storage=rack, spec=SPEC, controller={"kind": "moving_average"})
    r = run_control(_crash_load(t), DT, sc, sto)
    assert fm.max_window_swing_mw(r.p_pcc_mw, DT, 5.0) > 10.0
    g = r.info["guard"]
    assert g["breach_count"] > 0 and g["breach_steps_by_storage"]["rack_storage"][limit] > 0
    ev = [e for e in r.events if e["kind"] == "guard_breach"]
    assert ev and ev[0]["storage"] == "rack_storage" and ev[0]["limit"] == limit
    assert ev[0]["t_s"] >= 20.0 - 1e-9


_SPECS = [SPEC, {"max_ramp_up_mw_per_s": 2.0, "max_ramp_down_mw_per_s": 3.0, "ramp_window_s": 1.0},
          {"max_ramp_mw_per_min": 12.0, "window_s": 5.0, "max_window_swing_mw": 6.0}]


def _check_spec(p, spec, tol=1e-6):
    sc = Scenario(jobs=[{"n_gpus": 10}], spec=spec).spec
    m = fm.power_metrics(p, DT, sc)
    assert fm.compliance(m, sc)["compliant"], m


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.floats(1.0, 55.0), st.floats(-80.0, 80.0)), min_size=1, max_size=6),
       ripple=st.floats(0.0, 30.0), period=st.floats(0.5, 8.0), spec_i=st.integers(0, 2),
       kind=st.sampled_from(["moving_average", "filter", "ramp_limit"]), hybrid=st.booleans())
def test_property_no_limit_broken_with_unsaturated_storage(steps, ripple, period, spec_i, kind, hybrid):
    """Random loads with steps and a ripple, a storage that never saturates (alone, or rack
    storage beside a lagging, ramp-limited BESS: gap mode): no rolling window or ramp limit is
    broken at the PCC, whatever the controller above the guard does."""
    t = np.arange(0, 60, DT)
    load = 200.0 + ripple * np.sign(np.sin(2 * np.pi * t / period))
    for at, dp in steps:
        load = load + np.where(t >= at, dp, 0.0)
    bess = dict(HUGE, response_s=0.5, max_ramp_mw_per_s=50.0) if hybrid else {"enabled": False}
    sc, sto = make(rack_storage=HUGE, bess=bess, spec=_SPECS[spec_i], controller={"kind": kind})
    r = run_control(load, DT, sc, sto)
    assert r.info["guard"]["breach_count"] == 0
    assert not any(r.saturation.values())
    _check_spec(r.p_pcc_mw, _SPECS[spec_i])


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.tuples(st.floats(5.0, 50.0), st.floats(-60.0, 60.0)), min_size=1, max_size=3),
       spec_i=st.integers(0, 2))
def test_property_mpc_with_guard(steps, spec_i):
    """The same promise under the MPC (its plan is the target the guard tracks)."""
    t = np.arange(0, 60, DT)
    load = 200.0 + 15.0 * np.sign(np.sin(2 * np.pi * t / 2.5))
    for at, dp in steps:
        load = load + np.where(t >= at, dp, 0.0)
    sc, sto = make(rack_storage=HUGE, spec=_SPECS[spec_i], controller={"kind": "mpc"})
    r = run_control(load, DT, sc, sto)
    assert r.info["guard"]["breach_count"] == 0
    _check_spec(r.p_pcc_mw, _SPECS[spec_i])


def test_crash_ercot_30k_whole_cosim_guard_holds_what_the_filter_breaks():
    """scenarios/crash_ercot_30k.toml with the BESS fixed at 80 MW / 0.6 MWh, through the power
    flow: the filter alone passes more than 10 MW / 5 s of the unannounced crash and restart;
    with the guard under it the PCC (after the network's losses) stays within the limit, and
    nothing is reported as a breach."""
    from facility.config.load import apply_overrides, read_toml
    from facility.scenario import scenario_from_dict
    from facility.run.orchestrator import run_scenario

    from tests.conftest import REPO

    path = str(REPO / "scenarios" / "crash_ercot_30k.toml")
    fixed = ["bess.extendable=false", "bess.p_rated_mw=80", "bess.e_rated_mwh=0.6", "controller.kind=filter"]
    out = {}
    for guard in ("false", "true"):
        sc = scenario_from_dict(apply_overrides(read_toml(path), fixed + [f"controller.guard={guard}"]), path)
        out[guard] = run_scenario(sc, plots=False)
    assert out["false"].metrics["pcc"]["max_window_swing_mw"] > 12.0
    m = out["true"].metrics
    assert m["pcc"]["max_window_swing_mw"] <= 10.0 and m["compliance"]["compliant"]
    assert m["control"]["guard"]["clipped_steps"] > 0 and m["control"]["guard"]["breach_count"] == 0
    assert not any(e["kind"] == "guard_breach" for e in out["true"].events)
