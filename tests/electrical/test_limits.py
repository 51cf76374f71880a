"""Electrical limits: capacities on the network itself, compliance rows, events with times."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

from facility.electrical.limits import electrical_compliance, violation_events
from facility.electrical.network import build_network
from facility.electrical.powerflow import run_power_flow
from facility.electrical.limits import (CAPACITY_MARGIN_FRAC, MAX_EVENTS_PER_LIMIT, feeder_p_max_mw, limit_rows,
                                        ups_output_for_input_mw, violation_lines)
from facility.electrical.ups import ups_input_mw

from .conftest import scenario


def test_ups_output_for_input_inverts_the_loss_curve():
    p_out = np.array([0.0, 0.3, 2.0, 7.5, 10.0, 12.0])
    sn = np.full(p_out.size, 10.0)
    p_in = ups_input_mw(p_out, sn, 0.96, (0.3, 0.4, 0.3))
    np.testing.assert_allclose(ups_output_for_input_mw(p_in, sn, 0.96, (0.3, 0.4, 0.3)), p_out, atol=1e-12)
    # lossless UPS: output = input; an input below the no-load loss gives no output
    assert ups_output_for_input_mw(np.array([4.0]), np.array([10.0]), 1.0, (0.3, 0.4, 0.3))[0] == pytest.approx(4.0)
    assert ups_output_for_input_mw(np.array([0.0]), np.array([10.0]), 0.9, (1.0, 0.0, 0.0))[0] == 0.0


def test_feeder_capacity_closed_form_without_ups_losses():
    # feeder transformer 40 MVA, UPS 60 MVA (not binding), lossless UPS, pf 0.95, limit 90 %
    g = {"lv_trafo_sn_mva": 40.0, "ups_sn_mva": 60.0, "ups_type": "none", "power_factor": 0.95,
         "max_trafo_loading_percent": 90.0}
    net = build_network(scenario(grid=g), np.array([30.0]))
    assert feeder_p_max_mw(net)[0] == pytest.approx(0.9 * 40.0 * 0.95)
    # the UPS binds when its limit is lower
    net = build_network(scenario(grid={**g, "max_ups_loading_percent": 50.0}), np.array([30.0]))
    assert feeder_p_max_mw(net)[0] == pytest.approx(30.0)


def test_capacities_are_where_the_power_flow_reaches_the_limits(site_net):
    lim = site_net.limits
    g = site_net.grid
    # feeders at their share of the capacity: the binding limit sits at its value (within the
    # interpolation between sweep points); 2 % below it every limit holds
    res = run_power_flow(site_net, np.vstack([lim.feeder_p_max_mw, 0.98 * lim.feeder_p_max_mw]))
    binding = lim.binding["feeder"]
    at = {"feeder transformer loading": res.lv_trafo_loading_percent / g.max_trafo_loading_percent,
          "UPS loading": res.ups_loading_percent / g.max_ups_loading_percent,
          "LV voltage": g.min_lv_vm_pu / res.vm_min_lv_pu}[binding]
    assert at[0] == pytest.approx(1.0 - CAPACITY_MARGIN_FRAC, abs=3e-3)
    assert at[1] < 1.0
    assert res.lv_trafo_loading_percent[1] < 100 and res.ups_loading_percent[1] < 100
    assert res.vm_min_lv_pu[1] > g.min_lv_vm_pu
    assert lim.feeder_capacity_mw == pytest.approx(lim.feeder_p_max_mw.sum())
    assert 0 < lim.site_capacity_mw < math.inf and 0 < lim.bess_capacity_mw < math.inf
    # the BESS transformer at its capacity: at its limit with the feeders loaded (lowest MV
    # voltage, the case it is found for), a little below it at no load
    f = min(1.0, lim.site_capacity_mw / lim.feeder_capacity_mw)
    b = run_power_flow(site_net, np.vstack([f * lim.feeder_p_max_mw, np.zeros(4)]),
                       {"bess": np.full(2, lim.bess_capacity_mw)})
    assert b.bess_trafo_loading_percent[0] == pytest.approx(g.max_trafo_loading_percent * (1 - CAPACITY_MARGIN_FRAC),
                                                            rel=3e-3)
    assert 90.0 < b.bess_trafo_loading_percent[1] < g.max_trafo_loading_percent


def test_capacity_follows_a_set_overload_limit():
    sc = scenario(grid={"max_trafo_loading_percent": 120.0, "max_ups_loading_percent": 130.0,
                        "min_lv_vm_pu": 0.8, "min_vm_pu": 0.9})
    base = build_network(scenario(grid={"min_lv_vm_pu": 0.8, "min_vm_pu": 0.9}), np.array([30.0])).limits
    over = build_network(sc, np.array([30.0])).limits
    assert over.feeder_capacity_mw > 1.1 * base.feeder_capacity_mw


def test_grid_disabled_has_no_limits():
    net = build_network(scenario(grid={"enabled": False}), np.array([10.0]))
    assert math.isinf(net.limits.feeder_capacity_mw) and math.isinf(net.limits.site_capacity_mw)
    assert net.limits.as_metrics() == {}


def _pf(n, **over):
    """A stand-in PowerFlowResult: every quantity comfortably inside the default limits."""
    base = {"vm_min_mv_pu": np.full(n, 0.98), "vm_max_mv_pu": np.full(n, 1.0), "vm_min_lv_pu": np.full(n, 0.96),
            "vm_max_lv_pu": np.full(n, 0.99), "sub_trafo_loading_percent": np.full(n, 50.0),
            "lv_trafo_loading_percent": np.full(n, 60.0), "bess_trafo_loading_percent": np.zeros(n),
            "ups_loading_percent": np.full(n, 55.0)}
    base.update(over)
    return SimpleNamespace(**base)


def test_compliance_rows_times_and_events():
    g = scenario().grid
    n, dt = 100, 0.1
    t = np.arange(n) * dt
    lv = np.full(n, 0.96)
    lv[20:23] = [0.89, 0.85, 0.88]      # 0.3 s below 0.9 pu, lowest 0.85 at t = 2.1 s
    lv[60:61] = 0.899                    # and a second stretch of one step
    ld = np.full(n, 60.0)
    ld[40:50] = 130.0                    # 1 s above 100 %
    pf = _pf(n, vm_min_lv_pu=lv, lv_trafo_loading_percent=ld)
    comp = electrical_compliance(pf, g, dt)
    assert comp["min_lv_vm_pu"] is False and comp["max_lv_trafo_loading_percent"] is False
    assert comp["min_vm_pu"] and comp["max_ups_loading_percent"] and comp["compliant"] is False
    assert comp["violation_s"]["min_lv_vm_pu"] == pytest.approx(0.4)
    assert comp["violation_s"]["max_lv_trafo_loading_percent"] == pytest.approx(1.0)
    ev = violation_events(t, pf, g, dt)
    assert [e["limit"] for e in ev] == ["min_lv_vm_pu", "max_lv_trafo_loading_percent", "min_lv_vm_pu"]
    first = ev[0]
    assert first["t_s"] == pytest.approx(2.0) and first["end_s"] == pytest.approx(2.3)
    assert first["worst"] == pytest.approx(0.85) and first["worst_t_s"] == pytest.approx(2.1)
    assert "grid.min_lv_vm_pu = 0.9 pu" in first["detail"]
    assert ev[1]["duration_s"] == pytest.approx(1.0) and "grid.max_trafo_loading_percent" in ev[1]["detail"]
    metrics = {"electrical_compliance": comp, "electrical": {"min_vm_lv_pu": 0.85, "max_lv_trafo_loading_percent": 130.0}}
    lines = violation_lines(metrics, g)
    assert len(lines) == 2 and "0.85 pu < 0.9 pu" in lines[0] and "130 % > 100 %" in lines[1]


def test_all_held_and_no_bess_row():
    g = scenario().grid
    comp = electrical_compliance(_pf(10), g, 0.1, has_bess=False)
    assert comp["compliant"] is True and "max_bess_trafo_loading_percent" not in comp
    assert {r[0] for r in limit_rows(g, has_bess=False)} == set(comp) - {"compliant", "violation_s"}
    assert violation_events(np.arange(10) * 0.1, _pf(10), g, 0.1) == []


def test_many_stretches_are_counted_not_listed():
    g = scenario().grid
    n = 200
    ld = np.full(n, 60.0)
    ld[::4] = 120.0                      # 50 one-step stretches
    ev = violation_events(np.arange(n) * 0.5, _pf(n, ups_loading_percent=ld), g, 0.5)
    assert len(ev) == MAX_EVENTS_PER_LIMIT + 1
    assert "30 further stretches" in ev[-1]["detail"]


def test_grid_disabled_has_no_rows():
    g = scenario(grid={"enabled": False}).grid
    comp = electrical_compliance(_pf(5, lv_trafo_loading_percent=np.full(5, 500.0)), g, 1.0)
    assert comp == {"compliant": True, "violation_s": {}}


def test_band_order_is_checked():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="grid.min_lv_vm_pu = 1 pu must be below grid.max_lv_vm_pu"):
        scenario(grid={"min_lv_vm_pu": 1.0, "max_lv_vm_pu": 1.0})


def test_storage_caps_take_the_smaller_of_optimize_and_network(site_net):
    from facility.config.schema import OptimizeConfig
    from facility.electrical.limits import storage_caps

    lim = site_net.limits
    caps = storage_caps(site_net.grid, OptimizeConfig(max_site_p_mw=50.0), site_net)
    assert caps["max_site_p_mw"] == 50.0 < lim.site_capacity_mw
    assert caps["max_feeder_p_mw"] == pytest.approx(lim.feeder_capacity_mw)
    assert caps["max_bess_p_mw"] == pytest.approx(lim.bess_capacity_mw)
    off = site_net.grid.model_copy(update={"limit_storage": False})
    assert storage_caps(off, OptimizeConfig(max_site_p_mw=50.0), site_net) == {
        "max_feeder_p_mw": None, "max_site_p_mw": 50.0, "max_bess_p_mw": None}
