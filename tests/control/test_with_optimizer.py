"""Controllers with the real optimizer (skipped where facility.optimize is not importable)."""

import numpy as np
import pytest

from facility.control import run_control

from .conftest import check_invariants, make, square

optimize = pytest.importorskip("facility.optimize")
if not hasattr(optimize, "solve_dispatch"):
    pytest.skip("facility.optimize.solve_dispatch not available", allow_module_level=True)

DT = 0.1


def _case(kind, **ctrl):
    rack = {"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 0.2}
    bess = {"enabled": True, "p_rated_mw": 20.0, "e_rated_mwh": 2.0, "initial_soc_frac": 0.5}
    return make(rack_storage=rack, bess=bess, controller={"kind": kind, **ctrl},
                spec={"window_s": 5.0, "max_window_swing_mw": 10.0})


def test_optimal_plan_soc_equals_optimizer_soc():
    sc, sto = _case("optimal")
    t = np.arange(0, 60, DT)
    load = square(t)
    res = optimize.solve_dispatch(load, DT, sc.storages(), sc.spec, sc.optimize)
    r = run_control(load, DT, sc, sto, plan=res.p_storage_mw)
    check_invariants(r, sto, DT)
    for n in sto:
        np.testing.assert_allclose(r.p_storage_mw[n], res.p_storage_mw[n], atol=1e-5)
        np.testing.assert_allclose(r.soc_frac[n], np.asarray(res.soc_frac[n])[1:], atol=1e-6)
    np.testing.assert_allclose(r.p_pcc_mw, res.p_pcc_mw, atol=1e-5)
    assert all(v is None for v in r.saturation.values())


def test_mpc_with_the_real_solver_meets_the_window_limit():
    sc, sto = _case("mpc", replan_s=5.0, horizon_s=15.0, mpc_dt_s=0.1, forecast="periodic")
    t = np.arange(0, 60, DT)
    r = run_control(square(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    # every 5 s a re-plan: solved, or the plan in force kept where it still holds
    assert r.info["n_replans"] + r.info.get("n_replans_reused", 0) == 12
    p = r.p_pcc_mw
    n = int(5.0 / DT)
    swing = max(p[k:k + n + 1].max() - p[k:k + n + 1].min() for k in range(p.size - n))
    assert swing <= 10.0 + 1e-6


def test_a_plan_that_still_holds_is_kept_and_the_limit_still_met():
    """A steady square wave: the forecast, the PCC and the SoC keep to the plan, so re-plans
    keep it (at most mpc_reuse_max in a row) instead of solving; the window limit holds as
    with every re-plan solved."""
    runs = {}
    for reuse in (0, 2):
        sc, sto = _case("mpc", replan_s=2.0, horizon_s=15.0, mpc_dt_s=0.1, forecast="periodic",
                        mpc_reuse_max=reuse)
        r = run_control(square(np.arange(0, 80, DT)), DT, sc, sto)
        check_invariants(r, sto, DT)
        runs[reuse] = r
    kept = runs[2].info.get("n_replans_reused", 0)
    assert runs[0].info.get("n_replans_reused", 0) == 0 and kept > 0
    assert runs[2].info["n_replans"] + kept == runs[0].info["n_replans"]
    # never more than 2 in a row: at least a third of the re-plans solve
    assert runs[2].info["n_replans"] >= runs[0].info["n_replans"] / 3
    n = int(5.0 / DT)
    for r in runs.values():
        p = r.p_pcc_mw
        assert max(p[k:k + n + 1].max() - p[k:k + n + 1].min() for k in range(p.size - n)) <= 10.0 + 1e-6
