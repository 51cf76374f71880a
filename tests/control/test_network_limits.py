"""Controllers keep storage within the network's headroom: feeders (rack storage + UPS),
substation (everything), BESS transformer; the network stops a storage, never forces it."""

import numpy as np
import pytest

from facility.control import run_control
from facility.storage import LIMIT_NAMES

from .conftest import check_invariants, make, square

DT = 0.01


def _load(t):
    # a 100 MW square wave with a long dip (a checkpoint): storage charges to fill it
    p = square(t, p_hi=100.0, p_lo=40.0)
    p[(t > 20) & (t < 30)] = 20.0
    return p


@pytest.mark.parametrize("kind", ["moving_average", "filter"])
def test_storage_behind_the_ups_stays_within_the_feeders_headroom(kind):
    sc, sto = make(rack_storage={"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": 2.0},
                   ups={"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": 5.0},
                   controller={"kind": kind, "window_s": 10.0})
    t = np.arange(0, 40, DT)
    load = _load(t)
    free = run_control(load, DT, sc, sto)
    cap = 60.0  # below the mean load: the storage would charge the feeders beyond it
    r = run_control(load, DT, sc, sto, network_limits={"max_feeder_p_mw": cap})
    check_invariants(r, sto, DT)
    behind = r.p_storage_mw["rack_storage"] + r.p_storage_mw["ups"]
    free_behind = free.p_storage_mw["rack_storage"] + free.p_storage_mw["ups"]
    assert np.max((r.p_load_mw + free_behind)[free_behind > 0]) > cap + 5  # overloaded without the limit
    charging = behind > 1e-9
    assert charging.any() and np.max((r.p_load_mw + behind)[charging]) <= cap + 1e-9
    assert np.min(r.p_load_mw + behind) >= -cap - 1e-9
    lim = {n: tr.limit for n, tr in r.traces.items()}
    assert any((lim[n] == 4).any() for n in lim)
    sat = [e for e in r.events if e["kind"] == "storage_saturated" and e["limit"] == LIMIT_NAMES[4]]
    assert sat and "network" in sat[0]["detail"]


def test_substation_bounds_every_storage_and_the_bess_its_transformer():
    sc, sto = make(rack_storage={"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 2.0},
                   bess={"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 10.0},
                   controller={"kind": "moving_average", "window_s": 10.0})
    t = np.arange(0, 40, DT)
    load = _load(t)
    r = run_control(load, DT, sc, sto, network_limits={"max_site_p_mw": 105.0, "max_bess_p_mw": 12.0})
    check_invariants(r, sto, DT)
    assert np.max(r.p_pcc_mw) <= 105.0 + 1e-9
    assert np.max(np.abs(r.p_storage_mw["bess"])) <= 12.0 + 1e-9


def test_the_network_never_forces_a_storage():
    """A load that alone exceeds the capacity leaves the storage with no room to charge; it is
    not made to discharge for it (its controller still decides)."""
    sc, sto = make(rack_storage={"enabled": True, "p_rated_mw": 50.0, "e_rated_mwh": 1.0},
                   controller={"kind": "moving_average", "window_s": 5.0})
    load = np.full(2000, 100.0)
    r = run_control(load, DT, sc, sto, network_limits={"max_feeder_p_mw": 80.0})
    np.testing.assert_allclose(r.p_storage_mw["rack_storage"], 0.0, atol=1e-12)


def test_without_limits_nothing_changes(rack):
    sc, sto = make(rack_storage=rack, controller={"kind": "moving_average"})
    load = square(np.arange(0, 20, DT))
    a = run_control(load, DT, sc, sto)
    b = run_control(load, DT, sc, sto, network_limits={"max_feeder_p_mw": None, "max_site_p_mw": None})
    np.testing.assert_array_equal(a.p_pcc_mw, b.p_pcc_mw)


def test_gap_mode_lets_a_fast_discharge_make_room_for_a_slow_charge():
    """Optimal plan: UPS charging 40 MW while the rack storage discharges 30 MW on a 100 MW
    load with 15 MW of feeder headroom: the sum (10 MW) fits, so both run as planned."""
    sc, sto = make(rack_storage={"enabled": True, "p_rated_mw": 30.0, "e_rated_mwh": 1.0},
                   ups={"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 10.0},
                   controller={"kind": "optimal"})
    n = 500
    load = np.full(n, 100.0)
    plan = {"rack_storage": np.full(n, -30.0), "ups": np.full(n, 40.0)}
    r = run_control(load, DT, sc, sto, plan=plan, network_limits={"max_feeder_p_mw": 115.0})
    np.testing.assert_allclose(r.p_storage_mw["ups"], 40.0, atol=1e-9)
    np.testing.assert_allclose(r.p_storage_mw["rack_storage"], -30.0, atol=1e-9)
    np.testing.assert_allclose(r.p_pcc_mw, 110.0, atol=1e-9)
