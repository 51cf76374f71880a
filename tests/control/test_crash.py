"""The MPC through a crash nobody announced: the PCC falls from its history at the allowed
rate, the storage charges the rest, and the crash reserve keeps room for it.

Hand solution (tests/optimize/test_crash_closed_form.py, no foresight): a load drop of dP
under a per-minute limit R costs the storage ``dP^2 / (2 R)`` [MW min] of charging at up to
dP; the rolling-window staircase (fall R, hold a minute) a little less.
"""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import SpecConfig
from facility.control import run_control
from facility.control.crash import crash_reserve_mwh, descent, step_level, window_limits

from .conftest import check_invariants, make

DP, BASE, R = 60.0, 20.0, 20.0            # a 60 MW job crashes onto 20 MW; 20 MW/min
HAND_MWH = DP ** 2 / (2 * R) / 60.0      # 90 MW min = 1.5 MWh
DT = 1.0


def test_descent_is_the_rolling_window_staircase():
    # per-minute limit R = 10 MW on a 5 s grid (12 lags): from a flat 80 MW history the PCC
    # falls 10 MW, holds until the 80 MW leaves the window (12 steps), falls again...
    lim = window_limits(SpecConfig(max_ramp_mw_per_min=10.0), 5.0)
    assert lim == [(12, 10.0, 10.0)]
    s, de = descent(np.full(12, 80.0), np.full(72, 20.0), lim, 5.0)
    want = np.repeat([50.0, 40.0, 30.0, 20.0, 10.0, 0.0], 12)
    np.testing.assert_allclose(s, want)
    assert de == pytest.approx(60.0 * 150.0 / 3600.0)          # 2.5 MWh
    # lossy: eta_c of it is stored
    assert descent(np.full(12, 80.0), np.full(72, 20.0), lim, 5.0, 0.9)[1] == pytest.approx(0.9 * de)


def test_descent_under_a_per_second_ramp_is_the_triangle():
    lim = window_limits(SpecConfig(max_ramp_down_mw_per_s=1.0, ramp_window_s=1.0), 1.0)
    s, de = descent(np.array([80.0]), np.full(100, 20.0), lim, 1.0)
    np.testing.assert_allclose(s[:60], 59.0 - np.arange(60.0).clip(max=59))
    assert de * 3600 == pytest.approx(59 * 60 / 2)               # sum 1..59 [MW s]
    # a rise (an unannounced restart) the same way, the storage discharging
    s_up, de_up = descent(np.array([20.0]), np.full(100, 80.0),
                          window_limits(SpecConfig(max_ramp_up_mw_per_s=2.0, ramp_window_s=1.0), 1.0), 1.0)
    assert s_up[0] == pytest.approx(-58.0) and de_up * 3600 == pytest.approx(-(58 + 2) * 29 / 2)  # 58 + 56 + ... + 2


def test_crash_reserve_and_step_level_by_hand():
    assert crash_reserve_mwh(DP, R / 60.0) == pytest.approx(HAND_MWH)
    assert crash_reserve_mwh(DP, R / 60.0, 0.95) == pytest.approx(0.95 * HAND_MWH)
    assert crash_reserve_mwh(DP, np.inf) == 0.0 and crash_reserve_mwh(0.0, 1.0) == 0.0
    h = np.r_[np.full(80, 80.0), np.full(20, 20.0)]
    assert step_level(h, float(h.mean()), 10) == (pytest.approx(20.0), 20)
    # half-way through the fall: the last block is still a step below the others
    h = np.r_[np.full(80, 80.0), np.full(5, 50.0), np.full(10, 20.0)]
    assert step_level(h, float(h.mean()), 10) == (pytest.approx(20.0), 10)
    # a jittered steady load (block means within +-5 % of the level) has none
    rng = np.random.default_rng(0)
    h = 80.0 + rng.uniform(-4.0, 4.0, 200)
    assert step_level(h, 80.0, 10) is None
    assert step_level(np.full(100, 80.0) + np.tile([30.0, -30.0], 50), 80.0, 10) is None


def _crash_run(e_mwh, p_mw=1.2 * DP, soc0=0.1, reserve_mw=0.0, t_crash=300.0, horizon=600.0,
               dt=None, **ctrl):
    dt = DT if dt is None else dt
    c = {"kind": "mpc", "replan_s": 5.0, "mpc_limit_margin_frac": 0.1,
         "crash_reserve_mw": reserve_mw}
    c.update(ctrl)
    sc, sto = make(bess={"enabled": True, "p_rated_mw": p_mw, "e_rated_mwh": e_mwh,
                         "initial_soc_frac": soc0, "min_soc_frac": 0.1, "max_soc_frac": 0.9,
                         "eff_charge_frac": 0.95, "eff_discharge_frac": 0.95},
                   controller=c, spec={"max_ramp_mw_per_min": R})
    t = np.arange(0.0, horizon, dt)
    # the job's power falls to idle within a second at t_crash (no schedule: unannounced)
    load = BASE + DP * np.clip(t_crash + 1.0 - t, 0.0, 1.0)
    r = run_control(load, dt, sc, sto)
    check_invariants(r, sto, dt)
    return r, metrics.max_ramp_mw_per_min(r.p_pcc_mw, dt)


def test_mpc_holds_the_minute_limit_through_an_unannounced_crash():
    # 1.2 x the hand solution's energy (usable, SoC 0.1-0.9) and power, starting empty
    e = 1.2 * HAND_MWH / 0.8
    r, ramp = _crash_run(e)
    assert ramp <= R + 1e-6
    # the PCC leaves its pre-crash level only downward (up to the loop's loss compensation
    # of the storage's charging before the first re-plan: at most (1 - eta_c) dP)
    k = int(300.0 / DT)
    assert r.p_pcc_mw[k:].max() <= r.p_pcc_mw[k - 1] + 0.05 * DP
    # the storage took about the hand figure (the staircase a little less; the first
    # re-plan comes up to 5 s after the crash)
    soc = r.soc_frac["bess"]
    taken = (soc.max() - soc[k - 1]) * e / 0.95
    assert 0.7 * HAND_MWH < taken < HAND_MWH
    assert any(ev["kind"] == "mpc_descent" for ev in r.events)


def test_mpc_without_enough_storage_breaks_the_limit():
    r, ramp = _crash_run(0.6 * HAND_MWH / 0.8)
    assert ramp > R + 1.0


@pytest.mark.slow          # two 900 s closed loops with re-plans: ~30 s
def test_crash_reserve_keeps_charging_room():
    # the storage starts at 0.6 of 0.1-0.9: without a reserve the MPC holds it there and
    # the crash fills it; with crash_reserve_mw = dP it first moves its SoC target down
    # eta_c dP^2 / (2 rho) of room (rho at the MPC's margin) and the crash fits
    e = 1.2 * HAND_MWH / 0.8
    kw = dict(soc0=0.6, t_crash=600.0, horizon=900.0, soc_gain_per_s=0.01)
    _, ramp_none = _crash_run(e, **kw)
    r, ramp_res = _crash_run(e, reserve_mw=DP, **kw)
    assert ramp_none > R + 1.0
    assert ramp_res <= R + 1e-6
    need = crash_reserve_mwh(DP, 0.9 * R / 60.0, 0.95) / e
    assert r.soc_frac["bess"][int(599.0 / DT)] <= 0.9 - need + 0.02


def test_crash_drop_of_the_jobs_that_can_fail():
    # 20,000 H100 (700 W TDP, 75 W idle) at 0.75 x 1.0 + 0.25 x 0.3 of TDP = 577.5 W: a crash
    # drops 20,000 x 502.5 W x 1.25 (non-GPU) x 1.1 (PUE) = 13.82 MW; a job without
    # [jobs.failures] is not counted
    from facility.config.schema import Scenario
    from facility.control.crash import crash_drop_mw
    from facility.scenario import resolve

    job = {"name": "a", "n_gpus": 20000, "gpu": "h100", "workload": "square", "compute_frac": 0.75,
           "p_high_frac": 1.0, "p_low_frac": 0.3}
    fail = {"crash_times_s": [100.0]}
    site = {"non_gpu_frac": 0.25, "pue": 1.1}
    sc = resolve(Scenario(jobs=[{**job, "failures": fail}, {**job, "name": "b", "n_gpus": 40000}], site=site))
    assert crash_drop_mw(sc) == pytest.approx(20000 * 502.5 * 1.25 * 1.1 / 1e6)
    assert crash_drop_mw(resolve(Scenario(jobs=[job], site=site))) == 0.0
