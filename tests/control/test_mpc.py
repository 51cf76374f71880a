"""MPC: forecasts, re-planning with the simulator's SoC, fallbacks (solver stubbed)."""

from types import SimpleNamespace

import numpy as np
import pytest

import facility.control.mpc as mpc
from facility.control import run_control
from facility.control.mpc import estimate_period_steps, forecast_load
from facility.errors import InfeasibleError

from .conftest import check_invariants, make, square

DT = 0.01


class FlatStub:
    """Plans a flat PCC at the forecast mean; the fast storage takes the rest."""

    def __init__(self):
        self.calls = []

    def __call__(self, p_load_mw, dt_s, storages, spec, optimize, initial_soc_frac=None, terminal=None):
        self.calls.append(dict(p_load_mw=np.array(p_load_mw), dt_s=dt_s, soc=dict(initial_soc_frac),
                               cfg_soc={n: c.initial_soc_frac for n, c in storages.items()},
                               allow_slack=optimize.allow_slack))
        m = float(np.mean(p_load_mw))
        ps = {n: np.zeros(len(p_load_mw)) for n in storages}
        ps["rack_storage"] = m - p_load_mw
        return SimpleNamespace(p_storage_mw=ps, p_pcc_mw=np.full(len(p_load_mw), m))


def test_periodic_forecast_and_period_estimate():
    hist = np.tile([1.0, 1.0, 1.0, 0.0, 0.0], 20)           # period 5
    assert estimate_period_steps(hist) == 5
    fc = forecast_load("periodic", hist, 7, lead_steps=1, period_steps=5)
    np.testing.assert_array_equal(fc, np.tile([1.0, 1.0, 1.0, 0.0, 0.0], 2)[:7])
    fc = forecast_load("periodic", hist, 3, lead_steps=3, period_steps=5)   # samples 102..104
    np.testing.assert_array_equal(fc, [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(forecast_load("persistence", hist, 3), [0.0, 0.0, 0.0])
    assert estimate_period_steps(np.random.default_rng(0).normal(size=400)) is None


@pytest.mark.parametrize("forecast", ["perfect", "periodic", "persistence"])
def test_mpc_replans_with_simulator_soc(monkeypatch, rack, forecast):
    stub = FlatStub()
    monkeypatch.setattr(mpc, "_solve_dispatch", stub)
    sc, sto = make(rack_storage=rack, controller={"kind": "mpc", "replan_s": 5.0, "horizon_s": 10.0,
                                                  "mpc_dt_s": 0.1, "forecast": forecast})
    t = np.arange(0, 40, DT)
    load = square(t)
    r = run_control(load, DT, sc, sto)
    check_invariants(r, sto, DT)
    assert len(stub.calls) == 8 and r.info["n_replans"] == 8
    soc = r.soc_frac["rack_storage"]
    for k, c in enumerate(stub.calls):
        # 10 s horizon at 0.1 s, cut where the simulation ends
        assert c["dt_s"] == pytest.approx(0.1) and c["p_load_mw"].size == min(100, 400 - 50 * k)
        step = int(round(k * 5.0 / DT))
        expect = 0.5 if step == 0 else soc[step - 1]
        assert c["soc"]["rack_storage"] == pytest.approx(expect)
        assert c["cfg_soc"]["rack_storage"] == pytest.approx(expect)
    if forecast == "perfect":
        np.testing.assert_allclose(stub.calls[1]["p_load_mw"], load[500:1500].reshape(-1, 10).mean(1))
    if forecast != "persistence":
        pcc = r.p_pcc_mw[(t >= 10) & (t < 35)]     # the stub's last, cut horizon is not whole periods
        assert pcc.max() - pcc.min() < 3.0          # flat between (and across) re-plans


def test_mpc_infeasible_retries_with_slack_then_falls_back(monkeypatch, rack):
    calls = []

    def stub(p, dt, storages, spec, optimize, initial_soc_frac=None, terminal=None):
        calls.append(optimize.allow_slack)
        if not optimize.allow_slack:
            raise InfeasibleError("too tight")
        if len(calls) > 2:
            raise InfeasibleError("even with slack")
        return FlatStub()(p, dt, storages, spec, optimize, initial_soc_frac)

    monkeypatch.setattr(mpc, "_solve_dispatch", stub)
    sc, sto = make(rack_storage=rack, controller={"kind": "mpc", "replan_s": 5.0, "horizon_s": 10.0})
    r = run_control(square(np.arange(0, 10, DT)), DT, sc, sto)
    kinds = [e["kind"] for e in r.events]
    assert kinds == ["mpc_slack", "mpc_fallback"]
    assert calls == [False, True, False, True]
    check_invariants(r, sto, DT)


def test_solver_without_initial_soc_keyword_reads_the_configs(monkeypatch, rack):
    seen = []

    def stub(p_load_mw, dt_s, storages, spec, optimize):
        seen.append(storages["rack_storage"].initial_soc_frac)
        return FlatStub()(p_load_mw, dt_s, storages, spec, optimize, {"rack_storage": seen[-1]})

    monkeypatch.setattr(mpc, "_solve_dispatch", stub)
    sc, sto = make(rack_storage=dict(rack, initial_soc_frac=0.6),
                   controller={"kind": "mpc", "replan_s": 5.0, "horizon_s": 10.0})
    r = run_control(square(np.arange(0, 10, DT)), DT, sc, sto)
    assert seen[0] == pytest.approx(0.6)
    assert seen[1] == pytest.approx(r.soc_frac["rack_storage"][499])
