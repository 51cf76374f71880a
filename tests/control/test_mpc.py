"""MPC: re-planning with the simulator's state, what it hands the solver, fallbacks (solver
stubbed; the real LP is in test_with_optimizer.py)."""

import time
from types import SimpleNamespace

import numpy as np
import pytest

import facility.control.plan as plan
from facility.control import run_control
from facility.control.plan import allowed_rate_mw_per_s, mpc_spec, variation_cost_usd_per_mw
from facility.control.schedule import SiteSchedule
from facility.errors import InfeasibleError

from .conftest import check_invariants, make, square

DT = 0.01
SPEC = {"window_s": 5.0, "max_window_swing_mw": 10.0}


class FlatStub:
    """Plans a flat PCC at the forecast mean; the fast storage takes the rest."""

    def __init__(self):
        self.calls = []

    def __call__(self, p_load_mw, dt_s, storages, spec, optimize, **kw):
        self.calls.append(dict(p_load_mw=np.array(p_load_mw), dt_s=dt_s, kw=kw,
                               cfg={n: c for n, c in storages.items()}, optimize=optimize))
        m = float(np.mean(p_load_mw))
        ps = {n: np.zeros(len(p_load_mw)) for n in storages}
        ps["rack_storage"] = m - p_load_mw
        return SimpleNamespace(p_storage_mw=ps, p_pcc_mw=np.full(len(p_load_mw), m))


def _mpc(rack, **ctrl):
    c = {"kind": "mpc", "replan_s": 5.0, "horizon_s": 10.0, "mpc_dt_s": 0.1}
    c.update(ctrl)
    return make(rack_storage=rack, controller=c, spec=SPEC)


def test_spec_rate_and_variation_price():
    sc, sto = make(spec={"window_s": 5.0, "max_window_swing_mw": 10.0, "max_ramp_up_mw_per_s": 1.5,
                         "max_ramp_mw_per_min": 60.0})
    assert allowed_rate_mw_per_s(sc.spec) == pytest.approx(1.0)       # 60 MW / min
    assert allowed_rate_mw_per_s(make()[0].spec) == np.inf
    s = mpc_spec(sc.spec, 0.3)
    assert s.max_window_swing_mw == pytest.approx(7.0) and s.max_band_energy_frac is None
    # c = T lam price / 14400: a 60 s crossover, round-trip loss 1/0.95 - 0.95, 60 USD/MWh
    sc, sto = make(rack_storage={"enabled": True, "p_rated_mw": 10.0, "e_rated_mwh": 1.0})
    lam = 1 / 0.95 - 0.95
    assert variation_cost_usd_per_mw(60.0, sto, 60.0) == pytest.approx(60 * lam * 60 / 14400)


@pytest.mark.parametrize("forecast", ["perfect", "periodic", "persistence"])
def test_mpc_replans_with_the_simulator_state(monkeypatch, rack, forecast):
    stub = FlatStub()
    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    sc, sto = _mpc(rack, forecast=forecast, mpc_reuse_max=0)    # every re-plan solves (counted)
    t = np.arange(0, 40, DT)
    load = square(t)
    r = run_control(load, DT, sc, sto)
    check_invariants(r, sto, DT)
    assert len(stub.calls) == 8 and r.info["n_replans"] == 8
    soc = r.soc_frac["rack_storage"]
    e_rated = sto["rack_storage"].e_rated_mwh
    for k, c in enumerate(stub.calls):
        # 10 s horizon at 0.1 s, cut where the simulation ends
        assert c["dt_s"] == pytest.approx(0.1) and c["p_load_mw"].size == min(100, 400 - 50 * k)
        step = int(round(k * 5.0 / DT))
        s0 = c["kw"]["initial_soc_frac"]["rack_storage"]
        assert c["cfg"]["rack_storage"].initial_soc_frac == pytest.approx(s0)
        if step == 0:
            assert s0 == pytest.approx(0.5)
        elif forecast == "periodic":
            # the SoC level: averaged over the last detected period (2 s)
            e = np.asarray(r.traces["rack_storage"].e_mwh)
            assert s0 == pytest.approx(e[step - 200:step].mean() / e_rated, rel=1e-9)
        else:
            assert s0 == pytest.approx(soc[step - 1])
        assert c["kw"]["terminal"] == "free" and c["kw"]["pcc_variation_cost_usd_per_mw"] > 0
        lo, hi = c["kw"]["terminal_soc_frac"]["rack_storage"]
        assert lo <= 0.5 <= hi                                   # toward the SoC target
        if step > 0:                                             # PCC of the last window
            assert c["kw"]["p_pcc_history_mw"].size == 50
        # the planning window keeps room for the ripple the plan does not see
        cfg = c["cfg"]["rack_storage"]
        if forecast == "periodic" and step > 0:
            assert cfg.min_soc_frac > 0.1 and cfg.max_soc_frac < 0.9
        assert c["optimize"].time_limit_s == pytest.approx(5.0)   # deadline = replan_s
    if forecast == "perfect":
        np.testing.assert_allclose(stub.calls[1]["p_load_mw"], load[500:1500].reshape(-1, 10).mean(1))
    if forecast == "periodic":
        # the level over whole periods: the mean of the square wave (79 MW), plus what the
        # loop's loss compensation draws (the rack's conversion losses, a few % of its flow)
        fc = stub.calls[3]["p_load_mw"]
        assert np.ptp(fc) < 1e-9 and 79.0 < fc[0] < 80.5
    assert len(r.info["mpc_solve_times_s"]) == 8 and r.info["mpc_solve_median_s"] >= 0


def test_schedule_moves_the_level_forecast(monkeypatch, rack):
    stub = FlatStub()
    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    sc, sto = _mpc(rack)
    t = np.arange(0, 20, DT)
    load = square(t)
    level = np.where(t < 12.0, 79.0, 40.0)                     # a declared drop at 12 s
    r = run_control(load, DT, sc, sto, schedule=SiteSchedule(level, level))
    fc = stub.calls[2]["p_load_mw"]                            # planned at 10 s
    assert np.ptp(fc[:20]) < 1e-9 and np.ptp(fc[20:]) < 1e-9
    assert fc[0] - fc[20] == pytest.approx(39.0)               # the declared drop
    assert 79.0 < fc[0] < 80.5
    assert r.info["n_replans"] == 4


def test_waveform_forecast_where_the_load_follows_the_nominal_one(monkeypatch, rack):
    stub = FlatStub()
    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    sc, sto = _mpc(rack, mpc_reuse_max=0)                     # every re-plan solves (counted)
    t = np.arange(0, 20, DT)
    load = square(t)                                          # exactly the nominal wave
    nominal = load.copy()
    level = np.full_like(load, 79.0)
    r = run_control(load, DT, sc, sto, schedule=SiteSchedule(level, nominal))
    assert r.info["n_waveform_plans"] == 4
    np.testing.assert_allclose(stub.calls[1]["p_load_mw"], nominal[500:1500].reshape(-1, 10).mean(1))
    # a jittered load does not follow the nominal wave: level forecast
    stub.calls.clear()
    jit = square(t * (1 + 0.03 * np.sin(t / 3)))
    r = run_control(jit, DT, sc, sto, schedule=SiteSchedule(level, nominal))
    assert r.info.get("n_waveform_plans", 0) == 0


def test_infeasible_tries_wider_then_slack_then_falls_back_to_the_filter(monkeypatch, rack):
    calls = []

    def stub(p, dt, storages, spec, optimize, **kw):
        calls.append((optimize.allow_slack, kw.get("terminal_soc_frac")))
        if not optimize.allow_slack or len(calls) > 4:
            raise InfeasibleError("too tight")
        return FlatStub()(p, dt, storages, spec, optimize, **kw)

    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    sc, sto = _mpc(rack)
    r = run_control(square(np.arange(0, 10, DT)), DT, sc, sto)
    # first re-plan: band, keep-band, free, then slack (ok); second: all fail -> filter
    assert [c[0] for c in calls[:4]] == [False, False, False, True]
    assert calls[0][1] is not None and calls[2][1] is None
    kinds = [e["kind"] for e in r.events]
    assert kinds == ["mpc_slack", "mpc_fallback"]
    assert r.info["n_fallbacks"] == 1 and r.info["fallback_frac"] == pytest.approx(0.5)
    check_invariants(r, sto, DT)


def test_fallback_is_the_filter(monkeypatch, rack):
    def fail(*a, **k):
        raise InfeasibleError("never")

    monkeypatch.setattr(plan, "_solve_dispatch", fail)
    t = np.arange(0, 60, DT)
    load = square(t)
    sc, sto = _mpc(rack)
    r = run_control(load, DT, sc, sto)
    sc_f, _ = make(rack_storage=rack, controller={"kind": "filter"}, spec=SPEC)
    f = run_control(load, DT, sc_f, sto)
    assert r.info["fallback_frac"] == 1.0
    # the filter, with its grid target moving at most at the MPC's allowed rate: as good
    from facility.metrics import max_window_swing_mw
    assert max_window_swing_mw(r.p_pcc_mw, DT, 5.0) <= max_window_swing_mw(f.p_pcc_mw, DT, 5.0) + 1e-9
    # (plus the slow SoC recovery and loss compensation, which the filter also adds)
    assert np.abs(np.diff(r.p_pcc_mw)).max() <= 1.2 * 0.7 * 2.0 * DT
    check_invariants(r, sto, DT)


def test_late_plan_falls_back_and_the_transfer_is_bumpless(monkeypatch, rack):
    stub = FlatStub()

    def slow_later(p, dt, storages, spec, optimize, **kw):
        if stub.calls:
            time.sleep(0.05)
        return stub(p, dt, storages, spec, optimize, **kw)

    monkeypatch.setattr(plan, "_solve_dispatch", slow_later)
    sc, sto = _mpc(rack, mpc_deadline_s=0.02)
    t = np.arange(0, 30, DT)
    r = run_control(square(t, p_hi=110.0), DT, sc, sto)
    late = [e for e in r.events if e["kind"] == "mpc_fallback"]
    assert late and all("late" in e["detail"] for e in late)
    assert r.info["n_replans"] == 1
    # the filter's grid target starts from the last planned PCC power and moves at most at
    # the MPC's allowed rate (0.7 x 10 MW / 5 s; the filter's SoC recovery and loss
    # compensation start with it and add a little)
    assert r.saturation["rack_storage"] is None
    step = np.abs(np.diff(r.p_pcc_mw[499:]))
    assert step[0] <= 3 * 0.7 * 2.0 * DT and step[1:].max() <= 1.2 * 0.7 * 2.0 * DT


def test_mpc_without_spec_limits_runs_and_flattens(rack):
    """An MPC with nothing to hold (no [spec] limits) chooses its grid from the horizon alone
    (it raised OverflowError: no window caps the step) and still smooths the load."""
    sc, sto = make(rack_storage=rack, controller={"kind": "mpc", "replan_s": 5.0})
    t = np.arange(0, 30, DT)
    load = square(t)
    r = run_control(load, DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.info["n_replans"] + r.info.get("n_replans_reused", 0) >= 5
    assert np.ptp(r.p_pcc_mw[1000:]) < 0.5 * np.ptp(load)


def test_level_plans_are_made_on_the_coarser_level_grid(monkeypatch, rack):
    """A level forecast (no nominal waveform to follow) is planned on the longest step up to a
    quarter of the 5-s window that divides it (1 s = 10 MPC steps of 0.1 s) and held over
    each of those steps; the PCC history it is given is on the same grid."""
    stub = FlatStub()
    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    sc, sto = _mpc(rack, mpc_dt_s=None)
    t = np.arange(0, 40, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.info["mpc_dt_s"] == pytest.approx(0.1) and r.info["mpc_level_dt_s"] == pytest.approx(1.0)
    for k, c in enumerate(stub.calls):
        assert c["dt_s"] == pytest.approx(1.0) and c["p_load_mw"].size == -(-min(100, 400 - 50 * k) // 10)
        hist = c["kw"].get("p_pcc_history_mw")
        if k:
            # 5 s of history (the swing window) on the 1-s grid: the block means of the PCC
            step = int(round(k * 5.0 / DT))
            want = r.p_pcc_mw[step - 500:step].reshape(5, 100).mean(axis=1)
            np.testing.assert_allclose(hist, want, rtol=1e-12)


def test_level_grid_given_or_the_mpc_step(monkeypatch, rack):
    stub = FlatStub()
    monkeypatch.setattr(plan, "_solve_dispatch", stub)
    t = np.arange(0, 20, DT)
    sc, sto = _mpc(rack, mpc_dt_s=None, mpc_level_dt_s=0.5)
    assert run_control(square(t), DT, sc, sto).info["mpc_level_dt_s"] == pytest.approx(0.5)
    assert stub.calls and all(c["dt_s"] == pytest.approx(0.5) for c in stub.calls)
    # mpc_dt_s set and no level step: levels are planned on the MPC step itself
    sc, sto = _mpc(rack)
    assert run_control(square(t), DT, sc, sto).info["mpc_level_dt_s"] == pytest.approx(0.1)
    # a level step that does not divide the window is refused, naming the key
    sc, sto = _mpc(rack, mpc_dt_s=None, mpc_level_dt_s=1.5)
    with pytest.raises(Exception, match="mpc_level_dt_s"):
        run_control(square(t), DT, sc, sto)
