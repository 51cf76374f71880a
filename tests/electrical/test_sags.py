"""Voltage sags: the UPS's transfer, retransfer and walk-in, its battery's limits, the cooling
load; closed forms by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

from facility.electrical.sags import (UpsSagSettings, battery_support, cooling_response, sag_voltage_pu, time_true_s,
                                      time_since_true_s, ups_grid_share, ups_need_mw)

DT = 0.01


def _sag(start_s, duration_s, depth_pu):
    return SimpleNamespace(kind="sag", start_s=start_s, duration_s=duration_s, depth_pu=depth_pu, trace_file=None)


def _vm(n, *sags):
    return sag_voltage_pu(np.arange(n) * DT, list(sags))


def test_time_true_counts_runs():
    m = np.array([0, 1, 1, 1, 0, 1], dtype=bool)
    assert time_true_s(m, 0.5) == pytest.approx([0, 0.5, 1.0, 1.5, 0, 0.5])
    assert time_since_true_s(np.array([0, 1, 0, 0], dtype=bool), 0.5) == pytest.approx([np.inf, 0, 0.5, 1.0])


def test_rectangular_sag_and_overlap_take_the_lowest_voltage():
    vm = _vm(400, _sag(1.0, 0.5, 0.7), _sag(1.2, 0.1, 0.4))
    assert np.sum(vm < 1) == 50                    # 0.5 s at 10 ms
    assert vm[100] == 0.7 and vm[125] == 0.4 and vm[150] == 1.0


def test_trace_is_interpolated_from_its_start():
    ev = SimpleNamespace(kind="sag", start_s=2.0, duration_s=None, depth_pu=None, trace_file="x.csv")
    t = np.arange(0, 4, DT)
    vm = sag_voltage_pu(t, [ev], {0: (np.array([0.0, 0.1, 0.3]), np.array([1.0, 0.5, 1.0]))})
    assert vm[199] == 1.0 and vm[205] == pytest.approx(0.75) and vm[210] == pytest.approx(0.5)
    assert vm[300] == 1.0


def test_sag_shorter_than_the_transfer_delay_loses_no_load():
    s = UpsSagSettings(transfer_vm_pu=0.85, transfer_delay_s=0.1)
    vm = _vm(500, _sag(1.0, 0.09, 0.7))            # 9 steps < 10 steps of delay
    share, on_bat, transfers = ups_grid_share(vm, DT, s)
    assert transfers == [] and not on_bat.any() and np.all(share == 1.0)
    # with a current limit the rectifier still carries the full load at 0.7 pu: 1.2 * 0.7 * 125 > 100
    grid, need = ups_need_mw(np.full((500, 1), 100.0), vm, share, np.array([125.0]), 1.2)
    assert np.all(need == 0.0) and np.all(grid == 100.0)
    bs = battery_support(need[:, 0], DT, p_rated_mw=0.0, e_rated_mwh=0.0, eff_charge_frac=1, eff_discharge_frac=1,
                         floor_soc_frac=0.0, recharge_frac=0.1)
    assert np.all(bs.lost_mw == 0.0)


def test_transfer_retransfer_and_walk_in_by_hand():
    s = UpsSagSettings(transfer_vm_pu=0.85, transfer_delay_s=0.005, retransfer_vm_pu=0.9, retransfer_delay_s=1.0,
                       walk_in_s=2.0)
    vm = _vm(800, _sag(1.0, 0.5, 0.7))
    share, on_bat, transfers = ups_grid_share(vm, DT, s)
    # transfer at the sag's first step; back after 1 s of good voltage (t = 2.5 s); ramp over 2 s
    assert transfers == [(100, 250)]
    assert on_bat.sum() == 150
    assert share[250] == pytest.approx(0.005) and share[449] == pytest.approx(1.0) and share[349] == pytest.approx(0.5)
    # battery energy: P (on battery 1.5 s + walk-in 2 s / 2), the ramp's steps end at k dt: - dt / 2
    _, need = ups_need_mw(np.full((800, 1), 100.0), vm, share, np.array([125.0]), 1.2)
    assert need.sum() * DT == pytest.approx(100.0 * (1.5 + 1.0 - DT / 2), rel=1e-12)


def test_current_limit_rides_through_with_battery_help():
    # never transfers (delay longer than the sag); at 0.5 pu the rectifier gives 1.2 * 0.5 * 125 = 75 of 100 MW
    s = UpsSagSettings(transfer_delay_s=2.0)
    vm = _vm(300, _sag(1.0, 0.5, 0.5))
    share, _, transfers = ups_grid_share(vm, DT, s)
    assert transfers == []
    grid, need = ups_need_mw(np.full((300, 1), 100.0), vm, share, np.array([125.0]), 1.2)
    assert grid[120, 0] == pytest.approx(75.0) and need[120, 0] == pytest.approx(25.0)
    assert need.sum() * DT == pytest.approx(25.0 * 0.5)


def test_battery_power_limit_loses_the_rest():
    need = np.r_[np.zeros(10), np.full(50, 80.0), np.zeros(40)]
    bs = battery_support(need, DT, p_rated_mw=60.0, e_rated_mwh=10.0, eff_charge_frac=0.95, eff_discharge_frac=0.95,
                         floor_soc_frac=0.1, recharge_frac=0.1, initial_soc_frac=0.9)
    assert bs.supplied_mw.max() == pytest.approx(60.0)
    assert bs.lost_mw[10:60] == pytest.approx(np.full(50, 20.0))
    assert np.abs(bs.p_mw).max() <= 60.0 + 1e-9


def test_battery_empty_in_a_long_sag_loses_the_load():
    # 110 MW from 0.9 down to 0.1 of 1 MWh at eta_d = 0.9: 0.8 MWh * 0.9 = 0.72 MWh delivered,
    # 0.72 * 3600 / 110 = 23.5636 s: full steps 0..2355, a part of step 2356, then nothing
    n = 4000
    need = np.full(n, 110.0)
    bs = battery_support(need, DT, p_rated_mw=150.0, e_rated_mwh=1.0, eff_charge_frac=0.9, eff_discharge_frac=0.9,
                         floor_soc_frac=0.1, recharge_frac=0.1, initial_soc_frac=0.9)
    assert bs.supplied_mw.sum() * DT / 3600 == pytest.approx(0.72, rel=1e-12)
    assert bs.empty_steps == [2356]
    assert np.all(bs.supplied_mw[:2356] == 110.0) and 0 < bs.supplied_mw[2356] < 110.0
    assert np.all(bs.lost_mw[2357:] == 110.0)
    assert bs.soc_frac.min() == pytest.approx(0.1, abs=1e-12)
    assert bs.soc_frac[-1] == pytest.approx(0.1, abs=1e-12)


def test_recharge_returns_the_energy_then_follows_the_controller():
    n = 3000
    need = np.r_[np.zeros(100), np.full(100, 36.0), np.zeros(n - 200)]   # 36 MW for 1 s = 0.01 MWh
    p_ctl = np.zeros(n)
    soc_ctl = np.full(n, 0.5)
    bs = battery_support(need, DT, p_rated_mw=36.0, e_rated_mwh=1.0, eff_charge_frac=1.0, eff_discharge_frac=1.0,
                         floor_soc_frac=0.1, recharge_frac=0.1, p_ctl_mw=p_ctl, soc_ctl_frac=soc_ctl)
    assert bs.soc_frac[199] == pytest.approx(0.49)
    # recharge at 3.6 MW: 0.01 MWh in 10 s = 1000 steps
    assert np.all(bs.p_mw[200:1200] == pytest.approx(3.6))
    assert np.all(bs.p_mw[1201:] == 0.0)
    assert bs.soc_frac[-1] == pytest.approx(0.5, abs=1e-12)


def test_cooling_constant_impedance_and_dropout():
    vm = _vm(3000, _sag(1.0, 0.5, 0.7))
    p = np.full(3000, 10.0)
    drawn, tripped = cooling_response(p, vm, DT, 2.0, None, 10.0)
    assert drawn[120] == pytest.approx(4.9) and drawn[0] == 10.0 and not tripped.any()
    drawn, tripped = cooling_response(p, vm, DT, 2.0, 0.75, 10.0)
    assert drawn[120] == 0.0
    # back above 0.75 pu at step 150; off 10 s more
    assert tripped[149 + 1000] and not tripped[150 + 1000]
    assert drawn[1500] == 10.0


def test_recharge_stays_within_the_network_headroom():
    n = 3000
    need = np.r_[np.zeros(100), np.full(100, 36.0), np.zeros(n - 200)]
    room = np.full(n, 1.2)                                                 # 1.2 MW left on the feeders
    bs = battery_support(need, DT, p_rated_mw=36.0, e_rated_mwh=1.0, eff_charge_frac=1.0, eff_discharge_frac=1.0,
                         floor_soc_frac=0.1, recharge_frac=0.1, initial_soc_frac=0.5, max_recharge_mw=room)
    assert bs.p_mw[200:].max() == pytest.approx(1.2)
    # 0.01 MWh at 1.2 MW: 30 s, longer than the 28 s left -> not all back by the end
    assert bs.soc_frac[-1] == pytest.approx(0.49 + 1.2 * 28.0 / 3600, rel=1e-9)
