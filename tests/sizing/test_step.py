"""The step bound as a sizing floor (facility/sizing_step.py), by hand.

After an unannounced step ΔP, a window limit L over w seconds lets the PCC fall the rolling-
window staircase (L at once, then L every w): the storage needs P = ΔP - L and
E = w Σ_{j=1..⌊ΔP/L⌋} (ΔP - j L). Hand case of docs/control.md: ΔP = 40 MW, L = 10 MW,
w = 5 s -> 30 MW, 5 (30 + 20 + 10) = 300 MW s.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from facility.scenario import scenario_from_dict
from facility.control.crash import window_limits
from facility.errors import InfeasibleError
from facility.sizing.step import floored_design, greedy_step, staircase_step, step_floor, unannounced_steps

ETA_C, ETA_D, SOC_MIN, SOC_MAX = 0.95, 0.9, 0.1, 0.9


def _spec(window_s=None, swing=None, per_min=None):
    return SimpleNamespace(max_ramp_mw_per_min=per_min, max_window_swing_mw=swing, window_s=window_s or 5.0,
                           max_ramp_up_mw_per_s=None, max_ramp_down_mw_per_s=None, ramp_window_s=1.0)


def test_the_hand_case():
    assert staircase_step(40.0, 10.0, 5.0) == (30.0, 300.0)
    # not a multiple of L: 5 (35 + 25 + 15 + 5) = 400 MW s
    assert staircase_step(45.0, 10.0, 5.0) == (35.0, 400.0)
    # a step within the limit needs nothing; the sign of the step does not matter
    assert staircase_step(8.0, 10.0, 5.0) == (0.0, 0.0)
    assert staircase_step(-40.0, 10.0, 5.0) == (30.0, 300.0)
    # for a multiple of L: dP (dP - L) w / (2 L), above the triangle (dP - L)^2 w / (2 L)
    assert staircase_step(40.0, 10.0, 5.0)[1] == pytest.approx(40 * 30 * 5 / 20)
    assert staircase_step(40.0, 10.0, 5.0)[1] > 30 ** 2 * 5 / 20
    with pytest.raises(ValueError):
        staircase_step(40.0, 0.0, 5.0)


@pytest.mark.parametrize("dt_s", [0.05, 0.1, 0.5, 1.0])
def test_the_greedy_path_is_the_staircase_on_any_grid(dt_s):
    """The guard's rule (each step as low as the window allows) on an instant drop of 40 MW."""
    s = greedy_step(np.zeros(int(40 / dt_s)), 40.0, window_limits(_spec(5.0, 10.0), dt_s), dt_s)
    assert s.max() == pytest.approx(30.0)
    assert s.min() >= -1e-12
    assert s.sum() * dt_s == pytest.approx(300.0)
    # the PCC path (s + load) never moves more than L within a window
    p = np.concatenate([np.full(int(5 / dt_s), 40.0), s])
    n = int(round(5 / dt_s))
    swing = max(p[max(0, i - n):i + 1].max() - p[max(0, i - n):i + 1].min() for i in range(p.size))
    assert swing <= 10.0 + 1e-9


@settings(max_examples=40, deadline=None)
@given(dp=st.floats(1.0, 200.0), lim=st.floats(0.5, 50.0), k=st.integers(2, 40), dt_s=st.sampled_from([0.05, 0.1, 0.25]))
def test_the_closed_form_is_the_greedy_path(dp, lim, k, dt_s):
    """Property: for any step, limit and window (a whole number of steps), the numeric greedy
    path needs exactly the closed form's power and energy; per-minute ramps are the same
    with w = 60 s."""
    w = k * dt_s
    n = int(math.ceil(dp / lim) + 2) * k
    s = greedy_step(np.zeros(n), dp, window_limits(_spec(w, lim), dt_s), dt_s)
    p, e = staircase_step(dp, lim, w)
    assert s.max(initial=0.0) == pytest.approx(p, abs=1e-9)
    assert s.sum() * dt_s == pytest.approx(e, rel=1e-9, abs=1e-9)


def test_with_two_limits_the_smallest_l_sets_the_power_and_the_energy_is_at_least_either():
    """ERCOT's 10 MW / 5 s and 20 MW / min: 40 MW falls 10 MW at once (power 30 MW), but the
    per-minute ramp holds it for 60 s after 20 MW: at least 60 (40 - 20) = 1200 MW s."""
    dt = 0.1
    both = _spec(5.0, 10.0, per_min=20.0)
    s = greedy_step(np.zeros(3000), 40.0, window_limits(both, dt), dt)
    assert s.max() == pytest.approx(30.0)
    e = s.sum() * dt
    assert e >= staircase_step(40.0, 20.0, 60.0)[1] - 1e-9
    assert e >= staircase_step(40.0, 10.0, 5.0)[1] - 1e-9
    # by hand: 30 MW for 5 s, 20 MW for 55 s, then the window lets 10 MW more, 10 MW for 5 s
    assert e == pytest.approx(30 * 5 + 20 * 55 + 10 * 5)


SCENARIO = {
    "schema_version": 1, "name": "step_floor", "seed": 1,
    "time": {"horizon_s": 120.0, "dt_s": 0.05},
    "jobs": [{"name": "pretrain", "n_gpus": 30000, "gpu": "gb200", "workload": "square", "period_s": 2.0,
              "compute_frac": 0.7, "p_low_frac": 0.5, "ramp_s": 0.0,
              "failures": {"crash_times_s": [40.0], "crash_drop_s": 0.0, "restart_after_s": 30.0}}],
    "site": {"non_gpu_frac": 0.25, "pue": 1.1, "cooling_tau_s": 0.0},
    "bess": {"enabled": True, "extendable": True, "max_p_rated_mw": 100.0, "max_e_rated_mwh": 10.0,
             "eff_charge_frac": ETA_C, "eff_discharge_frac": ETA_D, "min_soc_frac": SOC_MIN,
             "max_soc_frac": SOC_MAX, "initial_soc_frac": 0.5},
    "spec": {"window_s": 5.0, "max_window_swing_mw": 10.0},
    "controller": {"kind": "mpc", "crash_reserve_mw": 40.0, "guard_margin_frac": 0.0},
}


def test_the_floor_of_a_crash_and_its_restart_by_hand():
    """ΔP = crash_reserve_mw = 40 MW, an instant crash and an instant restart under 10 MW / 5 s:
    P = 30 MW; the crash stores η_c 300 MW s above the SoC target, the restart draws
    300 / η_d MW s below it: E = max(E_c / (max_soc - s*), E_d / (s* - min_soc))."""
    f = step_floor(scenario_from_dict(SCENARIO))
    assert f["p_mw_min"] == pytest.approx(30.0)
    assert f["e_charge_mwh"] == pytest.approx(ETA_C * 300 / 3600)
    assert f["e_discharge_mwh"] == pytest.approx(300 / ETA_D / 3600)
    # from the SoC target 0.5 (initial_soc_frac): the restart's energy below it binds
    assert f["e_mwh_min"] == pytest.approx(max(ETA_C / (SOC_MAX - 0.5), 1 / ETA_D / (0.5 - SOC_MIN)) * 300 / 3600)
    # the SoC target that balances them: both in the window
    mid = SOC_MIN + (SOC_MAX - SOC_MIN) / (1 + ETA_D * ETA_C)
    g = step_floor(scenario_from_dict({**SCENARIO, "controller": {**SCENARIO["controller"], "soc_target_frac": mid}}))
    assert g["e_mwh_min"] == pytest.approx((ETA_C + 1 / ETA_D) * 300 / 3600 / (SOC_MAX - SOC_MIN))
    assert [e["kind"] for e in f["events"]] == ["crash", "restart"]
    # the guard holds 90 % of the limit (guard_margin_frac 0.1): L = 9 MW, 5 (31 + 22 + 13 + 4)
    g = step_floor(scenario_from_dict({**SCENARIO, "controller": {**SCENARIO["controller"], "guard_margin_frac": 0.1}}))
    assert g["p_mw_min"] == pytest.approx(31.0)
    assert g["e_charge_mwh"] == pytest.approx(ETA_C * 350 / 3600)
    assert g["guard_margin_frac"] == 0.1


def test_the_floor_follows_the_jobs_drop_and_the_restart_ramp():
    """Without crash_reserve_mw ΔP is the job's iteration-mean power above idle
    (crash_drop_mw); a restart ramped slower than L / w needs no storage."""
    from facility.control.crash import crash_drop_mw

    sc = scenario_from_dict({**SCENARIO, "controller": {"kind": "mpc", "guard_margin_frac": 0.0}})
    dp = crash_drop_mw(sc)
    assert dp > 20.0
    ev = unannounced_steps(sc)
    assert [e["dp_mw"] for e in ev] == [pytest.approx(dp)] * 2
    assert step_floor(sc)["p_mw_min"] == pytest.approx(staircase_step(dp, 10.0, 5.0)[0])
    slow = {**SCENARIO["jobs"][0], "ramp_s": 1.2 * dp / 2.0}       # 1/1.2 of L / w = 2 MW/s
    f = step_floor(scenario_from_dict({**SCENARIO, "jobs": [slow]}))
    assert f["e_discharge_mwh"] == pytest.approx(0.0, abs=1e-12)
    assert f["e_charge_mwh"] == pytest.approx(ETA_C * 300 / 3600)
    # a restart after the horizon does not count; no failures, no limits or 0 MW: no floor
    late = {**SCENARIO["jobs"][0], "failures": {**SCENARIO["jobs"][0]["failures"], "restart_after_s": 500.0}}
    assert [e["kind"] for e in unannounced_steps(scenario_from_dict({**SCENARIO, "jobs": [late]}))] == ["crash"]
    assert step_floor(scenario_from_dict({**SCENARIO, "jobs": [{**SCENARIO["jobs"][0], "failures": None}]})) is None
    assert step_floor(scenario_from_dict({**SCENARIO, "spec": {}})) is None
    assert step_floor(scenario_from_dict({**SCENARIO, "controller": {"kind": "mpc", "crash_reserve_mw": 0.0}})) is None
    # the guard off: the spec's own limits
    off = step_floor(scenario_from_dict({**SCENARIO, "controller": {**SCENARIO["controller"], "guard": False,
                                                                    "guard_margin_frac": 0.5}}))
    assert off["p_mw_min"] == pytest.approx(30.0)


def test_a_design_is_raised_to_the_floor_never_lowered():
    inf = float("inf")
    floor = {"p_mw_min": 30.0, "e_mwh_min": 0.2, "events": [{"dp_mw": 40.0}]}
    b = {"bess": (inf, inf)}
    assert floored_design({"bess": (10.0, 0.1)}, floor, b) == {"bess": (30.0, 0.2)}
    assert floored_design({"bess": (50.0, 0.5)}, floor, b) == {"bess": (50.0, 0.5)}
    assert floored_design({"bess": (10.0, 0.5)}, None, b) == {"bess": (10.0, 0.5)}
    # two storages grow by the same factor; one at its bound leaves the rest to the other
    two = floored_design({"bess": (10.0, 0.05), "rack": (5.0, 0.05)}, floor,
                         {"bess": (inf, inf), "rack": (inf, inf)})
    assert two["bess"][0] == pytest.approx(20.0) and two["rack"][0] == pytest.approx(10.0)
    assert two["bess"][1] + two["rack"][1] == pytest.approx(0.2)
    capped = floored_design({"bess": (10.0, 0.05), "rack": (5.0, 0.05)}, floor,
                            {"bess": (inf, inf), "rack": (6.0, inf)})
    assert capped["rack"][0] == pytest.approx(6.0) and capped["bess"][0] == pytest.approx(24.0)
    # nothing sized: the last unit takes it; a 1-h minimum duration brings the energy along
    assert floored_design({"rack": (0.0, 0.0), "bess": (0.0, 0.0)}, floor,
                          {"rack": (inf, inf), "bess": (inf, inf)})["bess"] == (30.0, 0.2)
    assert floored_design({"bess": (10.0, 10.0)}, floor, b, {"bess": (1.0, None)})["bess"] == (30.0, 30.0)
    with pytest.raises(InfeasibleError, match="max_p_rated_mw"):
        floored_design({"bess": (10.0, 0.1)}, floor, {"bess": (20.0, inf)})


@pytest.mark.parametrize("storage", [{"cost_usd_per_kw": 150.0, "cost_usd_per_kwh": 250.0},
                                     {"technology": "lfp_2h"}], ids=["costs", "lfp_2h"])
def test_the_ratings_cost_is_the_annual_costs_capex_and_fixed_om(storage):
    """The resize's bracket stops on the ratings' cost: it must be annual_cost's capex annuity
    and fixed O&M of the same ratings (a design that never charges: no other term), the fixed
    O&M per kWh too (lfp_2h: 9.77 USD/kWh-yr; the ratings' cost once left it out)."""
    from facility.sizing import mix
    from facility.optimize import SizingResult
    from facility.sizing.resize import ratings_cost

    sc = scenario_from_dict({**SCENARIO, "bess": {**SCENARIO["bess"], **storage}})
    if "technology" in storage:
        assert sc.bess.fixed_om_usd_per_kwh_year == 9.77
    z = np.zeros(10)
    sol = SizingResult(p_rated_mw_opt={"bess": 30.0}, e_rated_mwh_opt={"bess": 0.2}, p_storage_mw={"bess": z},
                       p_charge_mw={"bess": z}, p_discharge_mw={"bess": z}, soc_frac={}, p_pcc_mw=z, info=None)
    c = mix.annual_cost(sc, sol)["cost"]
    assert ratings_cost(sc, {"bess": (30.0, 0.2)}) == pytest.approx(
        c["storage_capex_usd_per_year"] + c["fixed_om_usd_per_year"])
    assert ratings_cost(sc, {"bess": (30.0, 0.4)}) > ratings_cost(sc, {"bess": (30.0, 0.2)})


def _synthetic(p_need: float, e_need: float, c_p: float, c_e: float):
    """A site whose verification is compliant iff P >= p_need and E >= e_need; it reports the
    resource that fell short as saturated; the ratings cost c_p P + c_e E."""
    calls = []

    def verify(pt):
        p, e = pt["bess"]
        calls.append((p, e))
        ok = p >= p_need and e >= e_need
        return ok, {"bess": (int(p < p_need), int(e < e_need))}, (c_p * p + c_e * e) if ok else None

    return verify, (lambda pt: c_p * pt["bess"][0] + c_e * pt["bess"][1]), calls


def test_the_search_trades_p_and_e_and_returns_the_cheapest_compliant_design():
    """From (10 MW, 0.1 MWh) to a site that needs 31 MW and 0.5 MWh: each resource grows by 1.5
    when it is short (never both at once), then the expensive one is trimmed back toward where
    it last fell short; the design returned is compliant, within RESIZE_TOL_FRAC of the
    power it needs and the cheapest verified."""
    from facility.sizing.resize import RESIZE_TOL_FRAC, grown, search_design

    inf = float("inf")
    verify, cost, calls = _synthetic(31.0, 0.5, 100.0, 10.0)
    best, ok, hist = search_design({"bess": (10.0, 0.1)}, verify,
                                   lambda pt, sat: grown(pt, sat, {"bess": (inf, inf)}), cost, 30)
    assert ok
    p, e = best["bess"]
    assert p >= 31.0 and e >= 0.5
    assert p <= 31.0 * (1 + RESIZE_TOL_FRAC) ** 2
    # never grew both at once
    for (p0, e0), (p1, e1) in zip(calls, calls[1:]):
        assert not (p1 > p0 * 1.01 and e1 > e0 * 1.01)
    # the cheapest of the compliant designs verified
    assert cost(best) == min(c for _, k, c in hist if k)
    # a run budget: the first compliant design or the start's last failure
    best2, ok2, hist2 = search_design({"bess": (10.0, 0.1)}, _synthetic(31.0, 0.5, 100.0, 10.0)[0],
                                      lambda pt, sat: grown(pt, sat, {"bess": (inf, inf)}), cost, 2)
    assert len(hist2) == 2 and not ok2
    # a start that is compliant (the step floor holds): one run
    best3, ok3, hist3 = search_design({"bess": (40.0, 1.0)}, verify,
                                      lambda pt, sat: grown(pt, sat, {"bess": (inf, inf)}), cost, 8)
    assert ok3 and len(hist3) == 1 and best3 == {"bess": (40.0, 1.0)}


def test_a_cheap_resource_is_not_trimmed():
    """The energy of a power-priced battery: a bracket on it saves less than
    RESIZE_COST_TOL_FRAC of the cost, so no run is spent on it."""
    from facility.sizing.resize import grown, search_design

    inf = float("inf")
    verify, cost, calls = _synthetic(10.0, 0.5, 100.0, 1.0)
    best, ok, hist = search_design({"bess": (10.0, 0.1)}, verify,
                                   lambda pt, sat: grown(pt, sat, {"bess": (inf, inf)}), cost, 30)
    assert ok and best["bess"][0] == 10.0
    # E grew 0.1 -> 0.15 -> ... until >= 0.5, and stopped there (no bisection of E)
    assert len(hist) == sum(1 for _ in range(5) if 0.1 * 1.5 ** _ < 0.5) + 1
