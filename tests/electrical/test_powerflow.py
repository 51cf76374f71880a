"""Batch time-series power flow: closed forms, pandapower cross-check, invariants, errors."""

import math

import numpy as np
import pytest

import facility.electrical.network as network_mod
import facility.electrical.powerflow as pf_mod
from facility.electrical.network import build_network
from facility.electrical.powerflow import electrical_metrics, run_power_flow
from facility.electrical.reference import runpp_step
from facility.electrical.solver import solve_newton, solve_zbus, solve_zbus_warm
from facility.errors import PowerFlowError, ScenarioError

from .conftest import scenario


def assert_balance(res, tol_mw=1e-6):
    """PCC = loads + storage + losses on every step."""
    np.testing.assert_allclose(res.p_pcc_mw, res.p_load_mw + res.losses_mw, rtol=0, atol=tol_mw)


def test_single_load_closed_form_transformer_loss(monkeypatch):
    """One feeder, no shunts, no UPS loss: a series R + jX chain fed from a stiff source.

    |V|^2 solves |V|^4 - (Vs^2 - 2(PR + QX)) |V|^2 + |S|^2 |Z|^2 = 0 and the transformer
    losses are (R_sub + R_lv) |S|^2 / |V|^2 (per unit on 1 MVA = MW).
    """
    monkeypatch.setattr(network_mod, "LV_PFE_FRAC", 0.0)
    monkeypatch.setattr(network_mod, "LV_I0_PERCENT", 0.0)
    g = {"trafo_sn_mva": 50.0, "trafo_pfe_kw": 0.0, "trafo_i0_percent": 0.0, "lv_trafo_sn_mva": 40.0,
         "ups_type": "none", "sc_mva": 2000.0, "rx_ratio": 0.1, "vm_pu": 1.02, "power_factor": 0.95}
    net = build_network(scenario(grid=g), np.array([30.0]))
    p_mw = np.array([[5.0], [20.0], [30.0], [40.0]])
    res = run_power_flow(net, p_mw)

    tan = math.tan(math.acos(0.95))
    zs = 1.0 / 2000.0
    r_src, x_src = 0.1 * zs / math.sqrt(1.01), zs / math.sqrt(1.01)
    def rx(vk, vkr, sn):
        return vkr / 100 / sn, math.sqrt((vk / 100) ** 2 - (vkr / 100) ** 2) / sn
    r1, x1 = rx(12.0, 0.3, 50.0)
    r2, x2 = rx(6.0, 0.8, 40.0)
    r, x = r_src + r1 + r2, x_src + x1 + x2
    for k, p in enumerate(p_mw[:, 0]):
        q = p * tan
        b = 1.02 ** 2 - 2 * (p * r + q * x)
        v2 = (b + math.sqrt(b * b - 4 * (p * p + q * q) * (r * r + x * x))) / 2
        loss = (r1 + r2) * (p * p + q * q) / v2
        assert res.losses_mw[k] == pytest.approx(loss, rel=1e-9, abs=1e-12)
        assert res.p_pcc_mw[k] == pytest.approx(p + loss, abs=1e-9)
        assert res.vm_min_pu[k] == pytest.approx(math.sqrt(v2), abs=1e-10)
    assert_balance(res)


def test_batch_matches_runpp_on_random_steps(site_net, site_inputs):
    p, st = site_inputs
    res = run_power_flow(site_net, p, st, chunk_steps=64, store_bus_vm=True)
    assert res.max_mismatch_mva <= pf_mod.TOL_MVA
    for s in np.random.default_rng(1).choice(p.shape[0], 8, replace=False):
        ref = runpp_step(site_net, p[s], {k: v[s] for k, v in st.items()}, numba=False)
        assert abs(ref["p_pcc_mw"] - res.p_pcc_mw[s]) <= 1e-4
        assert abs(ref["q_pcc_mvar"] - res.q_pcc_mvar[s]) <= 1e-4
        np.testing.assert_allclose(res.vm_bus_pu[s], ref["vm_bus_pu"], atol=1e-6)
        assert abs(ref["vm_min_pu"] - res.vm_min_pu[s]) <= 1e-6
        for k in ("trafo_loading_percent", "sub_trafo_loading_percent", "lv_trafo_loading_percent",
                  "bess_trafo_loading_percent"):
            assert abs(ref[k] - getattr(res, k)[s]) <= 1e-4, k
        assert abs(ref["losses_mw"] - res.losses_mw[s]) <= 1e-4
    assert_balance(res)


def test_power_balance_and_losses_positive(site_net, site_inputs):
    p, st = site_inputs
    res = run_power_flow(site_net, p, st)
    assert_balance(res)
    assert np.all(res.network_losses_mw > 0) and np.all(res.ups_losses_mw > 0)
    assert np.all(res.vm_min_pu <= res.vm_pcc_pu + 1e-15) and np.all(res.vm_pcc_pu <= res.vm_max_pu)


def test_chunking_does_not_change_results(site_net, site_inputs):
    p, st = site_inputs
    a = run_power_flow(site_net, p, st, chunk_steps=7)
    b = run_power_flow(site_net, p, st)
    # warm starts differ at chunk edges: equal within the solver tolerance
    np.testing.assert_allclose(a.p_pcc_mw, b.p_pcc_mw, atol=1e-8)
    np.testing.assert_allclose(a.vm_min_pu, b.vm_min_pu, atol=1e-10)


def test_storage_shares_follow_the_headroom():
    from facility.electrical.powerflow import storage_shares

    p_max = np.array([20.0, 40.0, 10.0])
    p = np.array([[10.0, 30.0, 10.0],    # charging: headroom 10, 10, 0
                  [10.0, 30.0, 10.0],    # discharging: 30, 70, 20
                  [25.0, 45.0, 12.0]])   # every feeder above its rating: by rating
    w = storage_shares(p, np.array([5.0, -5.0, 1.0]), p_max)
    np.testing.assert_allclose(w[0], [0.5, 0.5, 0.0])
    np.testing.assert_allclose(w[1], [0.25, 70 / 120, 20 / 120])
    np.testing.assert_allclose(w[2], p_max / p_max.sum())
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_storage_split_over_feeders(site_net):
    from facility.electrical.powerflow import feeder_injections

    pmax = site_net.limits.feeder_p_max_mw
    assert np.allclose(pmax, pmax[0]) and pmax.sum() == pytest.approx(site_net.limits.feeder_capacity_mw)
    p = np.array([[10.0, 30.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [10.0, 30.0, 0.0, 0.0]])
    out, inp = feeder_injections(site_net, p, np.array([4.0, 4.0, 0.0]), np.array([-2.0, 0.0, 0.0]))
    h = pmax[0] - p[0]
    np.testing.assert_allclose(out[0], p[0] + 2.0 * h / h.sum())  # charge goes where there is room
    np.testing.assert_allclose(out[1], [1.0, 1.0, 1.0, 1.0])      # equal headroom: evenly
    np.testing.assert_allclose(out[2], p[2])                        # no storage power
    assert np.all(inp > out)
    # every feeder within its rating as long as the sum is within the site-wide headroom
    room = site_net.limits.feeder_capacity_mw - p[0].sum()
    out, _ = feeder_injections(site_net, p[:1], np.array([room]), np.array([0.0]))
    assert np.all(out[0] <= pmax + 1e-9) and out[0].sum() == pytest.approx(pmax.sum())


def test_storage_moves_pcc_one_to_one_plus_losses(site_net):
    p = np.full((2, 4), 20.0)
    res = run_power_flow(site_net, p, {"bess": np.array([0.0, 10.0])})
    d = res.p_pcc_mw[1] - res.p_pcc_mw[0]
    assert 10.0 < d < 10.2  # charging 10 MW costs a little extra in transformer losses
    assert_balance(res)


def test_grid_disabled_is_lossless_sum():
    net = build_network(scenario(grid={"enabled": False}, bess={"enabled": True, "p_rated_mw": 5.0, "e_rated_mwh": 1.0}),
                        np.array([10.0, 10.0]))
    p = np.array([[1.0, 2.0], [3.0, 4.0]])
    st = {"rack_storage": np.array([0.5, -0.5]), "bess": np.array([1.0, 0.0])}
    res = run_power_flow(net, p, st)
    assert res.p_pcc_mw == pytest.approx([4.5, 6.5])
    assert np.all(res.losses_mw == 0) and np.all(res.vm_min_pu == 1) and np.all(res.vm_max_pu == 1)
    assert_balance(res, 0.0)


def test_newton_fallback_gives_same_answer(site_net, site_inputs, monkeypatch):
    p, st = site_inputs
    ref = run_power_flow(site_net, p[:20], {k: v[:20] for k, v in st.items()})
    monkeypatch.setattr(pf_mod, "ZBUS_MAX_ITER", 2)
    res = run_power_flow(site_net, p[:20], {k: v[:20] for k, v in st.items()})
    assert res.n_newton_steps > 0
    np.testing.assert_allclose(res.p_pcc_mw, ref.p_pcc_mw, atol=1e-8)
    np.testing.assert_allclose(res.vm_min_pu, ref.vm_min_pu, atol=1e-10)


def test_solvers_agree_on_a_tiny_network():
    # one bus behind z = 0.01 + 0.05j from a 1 pu slack, 3 steps
    z = 0.01 + 0.05j
    y_ll = np.array([[1 / z]])
    s = np.array([[0.5 + 0.2j], [1.0 + 0.3j], [0.0 + 0.0j]])
    v_a, _, mis_a, _ = solve_zbus(s, np.array([[z]]), np.array([1.0 + 0j]), 1e-12, 200)
    v_b, _, mis_b, _ = solve_zbus_warm(s, np.array([[z]]), np.array([1.0 + 0j]), 1e-12, 200)
    v_c, mis_c = solve_newton(s, y_ll, np.array([-1 / z]), np.ones((3, 1), complex), 1e-12)
    for v in (v_b, v_c):
        np.testing.assert_allclose(v, v_a, atol=1e-11)
    # closed form: V = 1 - z conj(S / V)
    np.testing.assert_allclose(v_a, 1 - z * np.conj(s / v_a), atol=1e-11)
    assert max(mis_a.max(), mis_b.max(), mis_c.max()) <= 1e-12


def test_non_convergence_raises_power_flow_error(site_net):
    p = np.full((5, 4), 20.0)
    p[3] = 2000.0  # far beyond what 12 % + 6 % impedances can transfer
    with pytest.raises(PowerFlowError, match=r"time step 3 .*largest mismatch.*overloaded") as exc:
        run_power_flow(site_net, p)
    assert exc.value.exit_code == 4


def test_bad_inputs(site_net):
    with pytest.raises(ScenarioError, match="expected"):
        run_power_flow(site_net, np.ones((3, 2)))
    with pytest.raises(ScenarioError, match="unknown"):
        run_power_flow(site_net, np.ones((3, 4)), {"battery": np.ones(3)})
    net = build_network(scenario(), np.array([10.0]))
    with pytest.raises(ScenarioError, match="no BESS"):
        run_power_flow(net, np.ones((3, 1)), {"bess": np.ones(3)})


def test_electrical_metrics_closed_form(site_net):
    p = np.full((100, 4), 15.0)
    res = run_power_flow(site_net, p)
    m = electrical_metrics(res, dt_s=36.0)  # 100 x 36 s = 1 h of constant losses
    assert m["losses_mwh"] == pytest.approx(res.losses_mw[0], rel=1e-9)
    assert m["min_vm_pu"] == pytest.approx(res.vm_min_pu[0])
    assert m["max_vm_pu"] == pytest.approx(res.vm_max_pu[0])
    assert m["max_trafo_loading_percent"] == pytest.approx(res.trafo_loading_percent[0])
    assert 0 < m["max_trafo_loading_percent"] < 100 and 0.9 < m["min_vm_pu"] < 1.0
    assert m["network_losses_mwh"] + m["ups_losses_mwh"] == pytest.approx(m["losses_mwh"], rel=1e-12)
    assert m["min_vm_pcc_pu"] >= m["min_vm_pu"]


def test_types_taps_and_parallel_units_match_runpp():
    import copy

    g = {"trafo_type": "sub_230_34p5_200mva", "lv_trafo_type": "pad_34p5_0p48_3mva", "n_trafos": 2,
         "trafo_tap_pos": -3}
    net = build_network(scenario(grid=g), np.array([20.0, 35.0, 50.0]))
    p = np.array([[18.0, 30.0, 45.0], [5.0, 1.0, 0.0]])
    res = run_power_flow(net, p)
    for s in range(2):
        pp_net = copy.deepcopy(net.net)
        ref = runpp_step(net, p[s], None, net=pp_net, numba=False)
        lv = pp_net.res_trafo.loading_percent.to_numpy()[2:].max()
        assert res.lv_trafo_loading_percent[s] == pytest.approx(lv, abs=1e-6)
        assert res.sub_trafo_loading_percent[s] == pytest.approx(ref["sub_trafo_loading_percent"], abs=1e-6)
        assert res.trafo_loading_percent[s] == pytest.approx(ref["trafo_loading_percent"], abs=1e-6)
        assert res.vm_max_pu[s] == pytest.approx(ref["vm_max_pu"], abs=1e-8)
        assert res.p_pcc_mw[s] == pytest.approx(ref["p_pcc_mw"], abs=1e-6)
    assert res.vm_max_pu[1] > 1.0  # tap -3 x 1.25 % raises the MV side at light load


def test_star_split_and_kernel_match_dense(site_net, site_inputs):
    from facility.electrical.solver import solve_zbus_warm_star, star_split

    m = site_net.matrices
    k = np.concatenate([m.k_feeder, [m.k_bess]])
    z = m.z_ll[np.ix_(k, k)]
    d, u = star_split(z)
    np.testing.assert_allclose(np.diag(d) + np.outer(u, u), z, rtol=0, atol=1e-12 * np.abs(z).max())
    p, _ = site_inputs
    s_k = np.concatenate([p * (1 + 0.2j), np.full((p.shape[0], 1), 5.0 + 0j)], axis=1)
    a = solve_zbus_warm(s_k, z, m.v0_l[k], 1e-10, 60)
    b = solve_zbus_warm_star(s_k, d, u, m.v0_l[k], 1e-10, 60)
    np.testing.assert_allclose(b[0], a[0], atol=1e-11)
    # not rank one off the diagonal -> None (dense kernel)
    z4 = np.array([[1.0, 0.5, 0.1, 0.2], [0.5, 1.0, 0.3, 0.1], [0.1, 0.3, 1.0, 0.4], [0.2, 0.1, 0.4, 1.0]], complex)
    assert star_split(z4) is None


def test_many_feeders_match_runpp():
    net = build_network(scenario(grid={"n_feeders": 32}), np.full(32, 3.0))
    rng = np.random.default_rng(3)
    p = 3.0 * rng.uniform(0, 1, (4, 32))
    res = run_power_flow(net, p, {"rack_storage": np.array([1.0, -1.0, 0.0, 5.0])}, store_bus_vm=True)
    for s in (0, 3):
        ref = runpp_step(net, p[s], {"rack_storage": res.p_load_mw[s] - p[s].sum()}, numba=False)
        np.testing.assert_allclose(res.vm_bus_pu[s], ref["vm_bus_pu"], atol=1e-6)
        assert res.p_pcc_mw[s] == pytest.approx(ref["p_pcc_mw"], abs=1e-6)
    assert_balance(res)


def test_run_timeseries_baseline_agrees(site_net, site_inputs):
    from facility.electrical.reference import run_timeseries_loop

    p, st = site_inputs
    res = run_power_flow(site_net, p, st)
    ts = run_timeseries_loop(site_net, p, st, steps=np.arange(5), numba=False)
    np.testing.assert_allclose(ts["p_pcc_mw"], res.p_pcc_mw[:5], atol=1e-4)
    np.testing.assert_allclose(ts["vm_min_pu"], res.vm_min_pu[:5], atol=1e-6)
