"""Ride-through rows against the ERCOT NOGRR282 curve of the bundled spec; UPS energy for the
curve's worst sags by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

from facility.config.events import RideThroughSpec
from facility.config.library import load_spec_table
from facility.electrical.ride_through import curve_worst_sags, ride_through_assessment, ups_energy_for_curve
from facility.electrical.sags import UpsSagSettings, sag_voltage_pu

DT = 0.01
N = 1000


@pytest.fixture(scope="module")
def ercot():
    return RideThroughSpec(**load_spec_table("ercot_2026_proposal")["ride_through"])


def _vm(start_s, duration_s, depth_pu):
    ev = SimpleNamespace(start_s=start_s, duration_s=duration_s, depth_pu=depth_pu, trace_file=None)
    return sag_voltage_pu(np.arange(N) * DT, [ev])


def _disconnect_from(t_s, until_s=None):
    d = np.zeros(N)
    d[int(round(t_s / DT)):int(round(until_s / DT)) if until_s else N] = 50.0
    return d


def test_bundled_curve_is_ercot_nogrr282(ercot):
    assert curve_worst_sags(ercot) == [(0.8, 2.0), (0.5, 0.5), (0.2, 0.25), (0.0, 0.15)]
    assert ercot.recovery_frac == 0.9 and ercot.max_recovery_s == 2.0


def test_connected_through_a_sag_within_the_curve_is_compliant(ercot):
    vm = _vm(1.0, 0.4, 0.7)                               # 0.4 s < 0.5 s allowed at 0.5-0.8 pu
    p = np.full(N, 100.0)
    block, rows, undecided = ride_through_assessment(vm, p, p, np.zeros(N), DT, ercot)
    assert rows == {"ride_through_connected": True, "ride_through_recovery": True} and not undecided
    assert block["sags"]["0"]["within_curve"] and block["sags"]["0"]["recovery_s"] == 0.0


def test_transfer_inside_the_curve_is_non_compliant(ercot):
    vm = _vm(1.0, 0.4, 0.7)
    p = np.full(N, 100.0)
    p_ev = p - _disconnect_from(1.1, 4.0)                 # UPS transfers 0.1 s in, back at 4 s
    block, rows, _ = ride_through_assessment(vm, p_ev, p, _disconnect_from(1.1, 4.0), DT, ercot)
    assert rows["ride_through_connected"] is False
    # voltage back at 1.4 s; 90 % reached at 4.0 s: 2.6 s > 2 s
    assert block["sags"]["0"]["recovery_s"] == pytest.approx(2.6) and rows["ride_through_recovery"] is False
    assert block["max_load_loss_mw"] == pytest.approx(50.0)


def test_sag_longer_than_the_curve_allows_is_flagged(ercot):
    vm = _vm(1.0, 1.0, 0.7)                               # 1 s at 0.7 pu: the curve asks only 0.5 s
    p = np.full(N, 100.0)
    # the load leaves 0.3 s in: inside the required 0.5 s -> non-compliant, sag outside the curve
    block, rows, _ = ride_through_assessment(vm, p, p, _disconnect_from(1.3), DT, ercot)
    assert block["sags"]["0"]["within_curve"] is False
    assert rows["ride_through_connected"] is False
    # leaving 0.6 s in (after the curve's 0.5 s) is allowed; no recovery row for a sag outside the curve
    block, rows, _ = ride_through_assessment(vm, p, p, _disconnect_from(1.6), DT, ercot)
    assert rows["ride_through_connected"] is True and "recovery_s" not in block["sags"]["0"]


def test_recovery_the_horizon_cannot_judge_is_undecided(ercot):
    n_end = N - 50                                        # voltage back 0.5 s before the end
    vm = np.ones(N)
    vm[n_end - 20:n_end] = 0.85
    p = np.full(N, 100.0)
    p_ev = p.copy()
    p_ev[n_end - 20:] = 20.0                              # not back before the end
    disc = np.zeros(N)
    _, rows, undecided = ride_through_assessment(vm, p_ev, p, disc, DT, ercot)
    assert undecided == {"ride_through_recovery": True} and "ride_through_recovery" not in rows


def test_max_load_loss_row_when_the_spec_sets_it(ercot):
    rt = ercot.model_copy(update={"max_load_loss_mw": 30.0})
    vm = _vm(1.0, 0.1, 0.85)
    p = np.full(N, 100.0)
    p_ev = p.copy()
    p_ev[100:110] = 60.0
    block, rows, _ = ride_through_assessment(vm, p_ev, p, np.zeros(N), DT, rt)
    assert block["max_load_loss_mw"] == pytest.approx(40.0) and rows["ride_through_max_load_loss_mw"] is False


def test_ups_energy_for_the_curve_by_hand(ercot):
    # a UPS that transfers at once: the worst band is 0.8 pu for 2 s; on battery from the sag's first
    # step to 1 s after it (retransfer_delay_s), then a 2-s walk-in (half of it on the battery)
    s = UpsSagSettings(transfer_vm_pu=0.85, transfer_delay_s=0.0, retransfer_delay_s=1.0, walk_in_s=2.0)
    out = ups_energy_for_curve(100.0, 125.0, s, ercot, dt_s=0.001, eff_discharge_frac=0.95)
    e_hand = 100.0 * (2.0 + 1.0 + 1.0 - 0.001 / 2) / 3600 / 0.95
    assert out["worst_band"] == 0 and out["e_mwh"] == pytest.approx(e_hand, rel=1e-9)
    assert out["transfers"] == 4
    # a UPS set to ride through (no transfer inside the curve): its battery covers the rectifier's
    # current-limit deficit, worst at 0 pu for 0.15 s: 100 MW * 0.15 s
    s = UpsSagSettings(transfer_vm_pu=0.85, transfer_delay_s=2.0, max_input_current_pu=1.2)
    out = ups_energy_for_curve(100.0, 125.0, s, ercot, dt_s=0.001)
    bands = out["bands"]
    assert out["transfers"] == 0
    assert bands["0"]["e_mwh"] == 0.0                       # 1.2 * 0.8 * 125 = 120 MW > 100 MW
    assert bands["1"]["e_mwh"] == pytest.approx((100 - 75.0) * 0.5 / 3600, rel=1e-9)
    assert bands["2"]["e_mwh"] == pytest.approx((100 - 30.0) * 0.25 / 3600, rel=1e-9)
    assert bands["3"]["e_mwh"] == pytest.approx(100 * 0.15 / 3600, rel=1e-9)
    assert out["worst_band"] == 2 and out["p_mw"] == pytest.approx(100.0)


def test_curve_must_descend():
    with pytest.raises(ValueError, match="descending"):
        RideThroughSpec(band_max_vm_pu=[0.5, 0.8], band_min_ride_s=[1.0, 2.0])
    with pytest.raises(ValueError, match="one value per band"):
        RideThroughSpec(band_max_vm_pu=[0.9, 0.8], band_min_ride_s=[1.0])
