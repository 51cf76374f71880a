"""A hybrid storage section in the closed loop: each unit is a storage of its own; the filter
and moving-average controllers give the fast unit the part of the dispatch above its crossover
(facility.control.split) and the battery the rest, each within its power and energy."""

import numpy as np
import pytest

from facility.config.schema import Scenario
from facility.control import run_control
from facility.control.split import crossover_tau_s, lowpass_split
from facility.scenario import resolve
from facility.storage import StorageParams

from .conftest import check_invariants, square

#: a 10 MW fast unit with 10 s of usable energy between its SoC target 0.5 and the nearer
#: bound (0.9 - 0.5 = 0.4 of E): τ = 0.4 E / P = 10 s; a slow unit of 10 MW / 10 MWh
P_FAST, E_FAST = 10.0, 10.0 * 10.0 / 3600.0 / 0.4


def _hybrid(kind: str, *, eff: float = 1.0, e_fast: float = E_FAST, **ctrl):
    sc = resolve(Scenario(jobs=[{"n_gpus": 1000}], controller={"kind": kind, **ctrl},
                  bess={"enabled": True, "technologies": ["supercap", "lfp_1h"],
                        "unit_p_rated_mw": {"supercap": P_FAST, "lfp_1h": 10.0},
                        "unit_e_rated_mwh": {"supercap": e_fast, "lfp_1h": 10.0},
                        "eff_charge_frac": eff, "eff_discharge_frac": eff,
                        "self_discharge_frac_per_h": 0.0}))
    sto = {n: StorageParams.from_config(n, c) for n, c in sc.storage_units().items()}
    return sc, sto


def test_filter_gives_the_fast_unit_the_high_pass_of_a_step_at_its_crossover():
    # hand case: lossless units, no SoC recovery or reservoir refill, a 5 MW load step at
    # t = 20 s. The grid sees LP_s(m), the slow unit takes LP_s - LP_f, the fast one closes the
    # gap: LP_f - m, the step's high-frequency part, A e^{-t/τ} with τ the fast unit's
    # crossover (split.crossover_tau_s: 10 s). The controller's own cutoff 1 / (2 pi window_s)
    # is lower (window_s = 50 s): the fast unit could not hold a full-rating step of that band,
    # so the crossover sets the cutoff.
    sc, sto = _hybrid("filter", window_s=50.0, soc_gain_per_s=0.0, reservoir_gain_per_s=0.0, warm_start=False,
                      slow_cutoff_hz=1.0 / (2 * np.pi * 100.0))
    tau = crossover_tau_s(P_FAST, 0.4 * E_FAST)
    assert tau == pytest.approx(10.0)
    dt = 0.1
    t = np.arange(int(120 / dt)) * dt
    load = 50.0 + np.where(t >= 20.0, 5.0, 0.0)
    res = run_control(load, dt, sc, sto)
    check_invariants(res, sto, dt)
    fast, slow = res.p_storage_mw["bess.supercap"], res.p_storage_mw["bess.lfp_1h"]
    # the kernel's low-pass: y_t = y_{t-1} + a (m_t - y_{t-1}), a = 1 - exp(-2 pi f_c dt)
    a_f = -np.expm1(-dt / tau)
    lp_f, _ = lowpass_split(load, dt, tau)
    np.testing.assert_allclose(fast, lp_f - load, atol=1e-9)
    k = int(round(20.0 / dt))
    np.testing.assert_allclose(fast[k:], -5.0 * (1 - a_f) ** np.arange(1, t.size - k + 1), atol=1e-9)
    # its energy: A τ (5 MW x 10 s), within what it holds
    assert -np.sum(fast) * dt == pytest.approx(5.0 * tau, rel=0.01)
    lp_s, _ = lowpass_split(load, dt, 100.0)
    np.testing.assert_allclose(slow, lp_s - lp_f, atol=1e-9)
    # the slow unit has no step: its largest change per step is a_f x 5 MW
    assert np.max(np.abs(np.diff(slow))) <= 5.0 * a_f + 1e-9
    assert np.max(np.abs(np.diff(fast))) == pytest.approx(5.0 * (1 - a_f), rel=1e-6)


@pytest.mark.parametrize("kind", ["filter", "moving_average"])
def test_split_keeps_each_unit_within_its_power_and_energy(kind):
    # a 2 s square wave of 6 MW on a 12 MW job start at t = 30 s: the fast unit (6 MW, 10 s)
    # saturates in power on the start and in energy soon after; the battery takes the rest
    sc, sto = _hybrid(kind, eff=0.95, e_fast=6.0 * 10.0 / 3600.0 / 0.4, window_s=20.0)
    sto["bess.supercap"] = StorageParams.from_config(
        "bess.supercap", sc.storage_units()["bess.supercap"].model_copy(update={"p_rated_mw": 6.0}))
    dt = 0.1
    t = np.arange(int(240 / dt)) * dt
    load = 40.0 + square(t, 2.0, 0.6, 6.0, 0.0) + np.where(t >= 30.0, 12.0, 0.0)
    res = run_control(load, dt, sc, sto)
    check_invariants(res, sto, dt)   # energy balance, SoC bounds, PCC = load + storage, per unit
    for n, p in sto.items():
        assert np.max(np.abs(res.p_storage_mw[n])) <= p.p_rated_mw * (1 + 1e-9)
    fast, slow = res.p_storage_mw["bess.supercap"], res.p_storage_mw["bess.lfp_1h"]
    # the fast unit carries the iteration swing, the battery hardly sees it
    ripple = lambda x: np.std(np.diff(x[t > 60]))
    assert ripple(fast) > 5 * ripple(slow)
    # the fast unit ran out of energy on the start (SoC at its bound) and the battery took the
    # rest of the step in the same steps (overflow): the grid saw no part of it at once
    soc_f = res.soc_frac["bess.supercap"]
    assert soc_f.min() <= sto["bess.supercap"].min_soc_frac + 1e-3
    k = int(round(30.0 / dt))
    assert np.max(np.abs(np.diff(res.p_pcc_mw[k - 5:k + 200]))) < 0.5 * 12.0
    if kind == "filter":
        # the filter's grid target follows the start over its slow time constant: the lasting
        # part of it is the battery's
        late = t > 60
        assert -np.mean(slow[late]) > 3 * abs(np.mean(fast[late]))


def test_mpc_and_optimal_carry_each_unit():
    from facility.optimize import solve_dispatch

    sc, sto = _hybrid("optimal")
    dt = 0.5
    t = np.arange(int(120 / dt)) * dt
    load = 40.0 + square(t, 4.0, 0.5, 4.0, 0.0) + np.where(t >= 30.0, 6.0, 0.0)
    spec = sc.spec.model_copy(update={"window_s": 5.0, "max_window_swing_mw": 1.0})
    sol = solve_dispatch(load, dt, sc.storages(), spec, sc.optimize)
    assert set(sol.p_storage_mw) == {"bess.supercap", "bess.lfp_1h"}   # the LP's per-unit plan
    res = run_control(load, dt, sc, sto, plan=sol.p_storage_mw)
    check_invariants(res, sto, dt)
    for n in sto:   # the optimal controller replays each unit's plan
        np.testing.assert_allclose(res.p_storage_mw[n], sol.p_storage_mw[n], atol=1e-6)
