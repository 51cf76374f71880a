"""Moving-average and filter controllers, measurement delay and sampling, saturation."""

import numpy as np
import pytest

from facility.control import run_control
from facility.errors import ScenarioError

from .conftest import check_invariants, make, square

DT = 0.01


def test_none_leaves_storage_idle(rack):
    sc, sto = make(rack_storage=rack)
    load = square(np.arange(0, 10, DT))
    r = run_control(load, DT, sc, sto)
    np.testing.assert_array_equal(r.p_storage_mw["rack_storage"], 0.0)
    np.testing.assert_array_equal(r.p_pcc_mw, load)
    check_invariants(r, sto, DT)


def test_constant_load_needs_no_storage(rack):
    sc, sto = make(rack_storage=rack, controller={"kind": "moving_average"})
    r = run_control(np.full(3000, 50.0), DT, sc, sto)
    np.testing.assert_allclose(r.p_storage_mw["rack_storage"], 0.0, atol=1e-12)
    np.testing.assert_allclose(r.p_pcc_mw, 50.0)


def test_moving_average_fig7_soc_band(rack):
    """Fig. 7: MA target over 10 s on a 2 s square wave keeps SoC in a few-percent band."""
    sc, sto = make(rack_storage=rack, controller={"kind": "moving_average", "window_s": 10.0})
    t = np.arange(0, 200, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    soc = r.soc_frac["rack_storage"]
    steady = soc[t >= 20]
    # dE per cycle = D (1 - D) (P_hi - P_lo) T = 29.4 MJ = 8.2 kWh = 4.1 % of 0.2 MWh
    assert 0.035 < steady.max() - steady.min() < 0.06
    assert 0.4 < soc.min() and soc.max() < 0.6
    pcc = r.p_pcc_mw[t >= 20]
    assert pcc.max() - pcc.min() < 1.0                        # 70 MW swing flattened
    assert abs(pcc.mean() - 79.0) < 1.5                       # mean load + losses
    assert r.saturation == {"rack_storage": None}


def test_loss_compensation_keeps_soc_from_drifting(rack):
    rack = dict(rack, eff_charge_frac=0.9, eff_discharge_frac=0.9)
    sc, sto = make(rack_storage=rack, controller={"kind": "moving_average", "soc_gain_per_s": 0.0})
    t = np.arange(0, 300, DT)
    soc = run_control(square(t), DT, sc, sto).soc_frac["rack_storage"]
    first, last = soc[(t >= 50) & (t < 100)].mean(), soc[t >= 250].mean()
    # uncompensated, 10 % losses each way would drain ~3 MW x 200 s = 0.17 MWh (83 %)
    assert abs(last - first) < 0.02


def test_filter_splits_bands_between_fast_and_slow_storage(rack):
    bess = {"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 5.0, "response_s": 0.2}
    sc, sto = make(rack_storage=rack, bess=bess,
                   controller={"kind": "filter", "cutoff_hz": 0.05, "slow_cutoff_hz": 0.002})
    t = np.arange(0, 400, DT)
    slow = 20.0 * np.sin(2 * np.pi * 0.01 * t)          # 0.01 Hz: between the cutoffs
    fast = square(t, p_hi=35.0, p_lo=-35.0)               # 0.5 Hz: above the cutoff
    load = 200.0 + slow + fast
    r = run_control(load, DT, sc, sto)
    check_invariants(r, sto, DT)
    sel = t >= 100
    f = np.fft.rfftfreq(sel.sum(), DT)

    def amp(x, f0):
        a = 2 * np.abs(np.fft.rfft(x[sel] - x[sel].mean())) / sel.sum()
        return a[np.argmin(np.abs(f - f0))]

    p_rack, p_bess = r.p_storage_mw["rack_storage"], r.p_storage_mw["bess"]
    assert amp(p_rack, 0.5) > 10 * amp(p_bess, 0.5)       # high band -> rack storage
    assert amp(p_bess, 0.01) > 3 * amp(p_rack, 0.01)      # slow band -> BESS
    assert amp(r.p_pcc_mw, 0.5) < 0.05 * amp(load, 0.5)
    assert amp(r.p_pcc_mw, 0.01) < 0.5 * amp(load, 0.01)


def test_filter_rejects_inverted_cutoffs(rack):
    sc, sto = make(rack_storage=rack, bess={"enabled": True, "p_rated_mw": 1, "e_rated_mwh": 1},
                   controller={"kind": "filter", "cutoff_hz": 0.01, "slow_cutoff_hz": 0.1})
    with pytest.raises(ScenarioError, match="slow_cutoff_hz"):
        run_control(np.ones(10), DT, sc, sto)


def test_measurement_delay_controller_sees_only_the_past(rack):
    load = np.where(np.arange(0, 20, DT) >= 10.0, 80.0, 50.0)
    for delay in (0.0, 0.5):
        sc, sto = make(rack_storage=rack,
                       controller={"kind": "moving_average", "measurement_delay_s": delay})
        p = run_control(load, DT, sc, sto).p_storage_mw["rack_storage"]
        first = np.flatnonzero(np.abs(p) > 1e-6)[0] * DT
        assert first == pytest.approx(10.0 + delay)


def test_sampling_holds_setpoints(rack):
    sc, sto = make(rack_storage=rack, controller={"kind": "moving_average", "sample_s": 0.1})
    t = np.arange(0, 30, DT)
    p = run_control(square(t), DT, sc, sto).p_storage_mw["rack_storage"]
    blocks = p[: (p.size // 10) * 10].reshape(-1, 10)
    np.testing.assert_allclose(blocks, blocks[:, :1].repeat(10, axis=1), atol=1e-12)


@pytest.mark.parametrize("kind", ["moving_average", "filter"])
def test_undersized_storage_saturates_and_reports_when(kind):
    small = {"enabled": True, "p_rated_mw": 20.0, "e_rated_mwh": 0.002}
    sc, sto = make(rack_storage=small, controller={"kind": kind}, spec={"max_window_swing_mw": 5.0})
    t = np.arange(0, 60, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    tr = r.traces["rack_storage"]
    t_sat = r.saturation["rack_storage"]
    assert t_sat is not None
    assert t_sat == pytest.approx(np.flatnonzero(tr.saturated)[0] * DT)
    ev = [e for e in r.events if e["kind"] == "storage_saturated"]
    assert ev and ev[0]["t_s"] == t_sat and ev[0]["storage"] == "rack_storage"
    assert np.abs(tr.p_mw).max() <= 20.0 + 1e-9
    assert tr.soc_frac.min() >= 0.1 - 1e-12 and tr.soc_frac.max() <= 0.9 + 1e-12


def test_optimal_applies_plan_and_matches_simulate_soc(rack):
    from facility.storage import simulate_soc

    sc, sto = make(rack_storage=rack, controller={"kind": "optimal"})
    t = np.arange(0, 20, DT)
    load = square(t)
    plan = {"rack_storage": 79.0 - load}
    r = run_control(load, DT, sc, sto, plan=plan)
    check_invariants(r, sto, DT)
    ref = simulate_soc(plan["rack_storage"], sto["rack_storage"], DT)
    np.testing.assert_allclose(r.p_storage_mw["rack_storage"], plan["rack_storage"], atol=1e-9)
    np.testing.assert_allclose(r.soc_frac["rack_storage"], ref.soc_frac, atol=1e-12)
    np.testing.assert_allclose(r.p_pcc_mw, 79.0, atol=1e-9)
    with pytest.raises(ScenarioError, match="plan"):
        run_control(load, DT, sc, sto)


def test_fast_storage_covers_a_lagging_bess(rack):
    """With several storages the fast one closes the gap a slow inverter leaves."""
    bess = {"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 5.0, "response_s": 1.0,
            "max_ramp_mw_per_s": 20.0}
    sc, sto = make(rack_storage=rack, bess=bess, controller={"kind": "moving_average"})
    t = np.arange(0, 100, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    pcc = r.p_pcc_mw[t >= 20]
    assert pcc.max() - pcc.min() < 1.0
    assert np.abs(r.p_storage_mw["bess"]).max() > 5.0        # the BESS does take its share


def test_ups_reserve_is_never_used_for_smoothing():
    ups = {"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": 0.02, "min_soc_frac": 0.1,
           "reserve_frac": 0.3, "initial_soc_frac": 0.5}
    sc, sto = make(ups=ups, controller={"kind": "moving_average"})
    t = np.arange(0, 60, DT)
    r = run_control(square(t, period_s=20.0, duty=0.5), DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.soc_frac["ups"].min() == pytest.approx(0.4, abs=1e-9)     # min_soc + reserve
    assert r.saturation["ups"] is not None


def test_target_ramp_limit_bounds_the_grid_ramp():
    big = {"enabled": True, "p_rated_mw": 100.0, "e_rated_mwh": 1.0}
    sc, sto = make(rack_storage=big, controller={"kind": "moving_average", "target_ramp_mw_per_s": 2.0})
    t = np.arange(0, 60, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    # the target moves at most 2 MW/s; SoC recovery and loss compensation add a little
    assert np.abs(np.diff(r.p_pcc_mw)).max() <= 1.1 * 2.0 * DT


@pytest.mark.parametrize("kind", ["moving_average", "filter"])
def test_warm_start_has_no_start_up_transient(rack, kind):
    t = np.arange(0, 60, DT)
    load = square(t)
    swing = {}
    for warm in (True, False):
        sc, sto = make(rack_storage=rack, controller={"kind": kind, "warm_start": warm})
        r = run_control(load, DT, sc, sto)
        check_invariants(r, sto, DT)
        first = r.p_pcc_mw[t < 10]
        swing[warm] = first.max() - first.min()
    assert swing[True] < 5.0 < 10.0 < swing[False]      # filter: ~3 MW ripple remains


def test_slow_storage_takes_the_fast_ones_overflow_in_the_same_step():
    small_rack = {"enabled": True, "p_rated_mw": 20.0, "e_rated_mwh": 0.2}
    ups = {"enabled": True, "p_rated_mw": 100.0, "e_rated_mwh": 10.0}
    sc, sto = make(rack_storage=small_rack, ups=ups, controller={"kind": "filter"})
    t = np.arange(0, 60, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.saturation["rack_storage"] is not None                 # the rack alone is too small
    pcc = r.p_pcc_mw[t >= 5]
    assert pcc.max() - pcc.min() < 5.0                              # no one-step spikes
    # a rack at its power limit hands over instead of engaging GPU controls
    assert not [e for e in r.events if e["kind"] == "codesign_engage"]


def test_slow_storage_recharges_the_fast_one_not_the_grid():
    rack = {"enabled": True, "p_rated_mw": 20.0, "e_rated_mwh": 0.05, "initial_soc_frac": 0.3}
    ups = {"enabled": True, "p_rated_mw": 50.0, "e_rated_mwh": 10.0}
    sc, sto = make(rack_storage=rack, ups=ups,
                   controller={"kind": "moving_average", "soc_target_frac": 0.5})
    r = run_control(np.full(12000, 50.0), DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.soc_frac["rack_storage"][-1] > 0.48                    # recovered in 120 s
    # the grid sees only the UPS's own losses, not the ~0.9 MW recharge of the rack
    assert np.abs(r.p_pcc_mw - 50.0).max() < 0.2
    assert r.soc_frac["ups"][-1] < 0.5                              # the UPS paid for it
