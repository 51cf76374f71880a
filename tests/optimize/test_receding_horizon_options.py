"""solve_dispatch's receding-horizon options: end-of-horizon SoC band, PCC variation price."""

import numpy as np
import pytest

from facility.config.schema import Scenario
from facility.errors import InfeasibleError, ScenarioError
from facility.optimize import solve_dispatch

DT = 0.1


def _case(**spec):
    sc = Scenario(jobs=[{"n_gpus": 1000}],
                  rack_storage={"enabled": True, "p_rated_mw": 60.0, "e_rated_mwh": 0.2},
                  bess={"enabled": True, "p_rated_mw": 20.0, "e_rated_mwh": 2.0},
                  spec=spec or {"window_s": 5.0, "max_window_swing_mw": 10.0})
    return sc.storages(), sc.spec, sc.optimize


def _square(n=300):
    t = np.arange(n) * DT
    return np.where((t % 2.0) < 1.4, 100.0, 30.0)


def test_soc_band_at_the_end_is_met():
    sto, spec, opt = _case()
    band = {"rack_storage": (0.6, 0.62), "bess": (0.45, 0.46)}
    r = solve_dispatch(_square(), DT, sto, spec, opt, terminal="free", terminal_soc_frac=band)
    for n, (lo, hi) in band.items():
        assert lo - 1e-7 <= r.soc_frac[n][-1] <= hi + 1e-7
    # a band no storage can reach in the horizon: infeasible, with a diagnosis
    with pytest.raises(InfeasibleError, match="terminal_soc_band"):
        solve_dispatch(_square(30), DT, sto, spec, opt, terminal="free",
                       terminal_soc_frac={"bess": (0.9, 0.9)})
    with pytest.raises(ScenarioError, match="band"):
        solve_dispatch(_square(), DT, sto, spec, opt, terminal_soc_frac={"bess": (0.6, 0.5)})


def test_variation_price_flattens_the_pcc_within_the_same_limits():
    sto, spec, opt = _case()
    load = _square()
    hist = np.full(50, 79.0)
    plain = solve_dispatch(load, DT, sto, spec, opt, p_pcc_history_mw=hist, terminal="free")
    flat = solve_dispatch(load, DT, sto, spec, opt, p_pcc_history_mw=hist, terminal="free",
                          pcc_variation_cost_usd_per_mw=1.0)
    tv = lambda p: np.abs(np.diff(np.concatenate([hist[-1:], p]))).sum()   # noqa: E731
    assert tv(plain.p_pcc_mw) > 50.0              # the loss-only plan uses the 10 MW swing
    assert tv(flat.p_pcc_mw) < 1.0                # the priced one stays flat (storage pays)
    # the objective counts the variation: the flat plan's loss share is the higher one
    assert flat.info.objective_usd > plain.info.objective_usd
    with pytest.raises(ScenarioError, match="pcc_variation_cost"):
        solve_dispatch(load, DT, sto, spec, opt, pcc_variation_cost_usd_per_mw=-1.0)


def test_variation_price_moves_energy_with_a_low_plateau():
    # a flat load, the BESS asked to end 1 point fuller: the path of least variation that
    # stores the energy is one step up at the start (against the history) held to the end
    # (any other rising path with the same area ends higher), not a short high pulse
    sto, spec, opt = _case()
    load = np.full(300, 80.0)
    r = solve_dispatch(load, DT, sto, spec, opt, p_pcc_history_mw=np.full(50, 80.0),
                       terminal="free", terminal_soc_frac={"rack_storage": (0.5, 0.5), "bess": (0.51, 0.51)},
                       pcc_variation_cost_usd_per_mw=1.0)
    p = r.p_pcc_mw
    assert np.ptp(p) < 1e-6                       # one level over the whole horizon
    e_in = 0.01 * 2.0 / 0.95                      # MWh drawn to store 0.02 MWh at eta_c 0.95
    assert (p[0] - 80.0) * 300 * DT / 3600 == pytest.approx(e_in, rel=1e-6)


def test_variation_over_one_period_lets_the_ripple_through_and_prices_the_level():
    # the same square load (period 2 s = 20 steps): priced step to step the plan is flat;
    # priced over one period (the mean's variation) the periodic ripple costs nothing and the
    # plan lets the grid follow it within the 10 MW / 5 s swing (less storage loss), while
    # the level of the plan stays flat
    sto, spec, opt = _case()
    load = _square()
    # (no history: a flat one would price the first period's departure from it)
    kw = dict(terminal="free", pcc_variation_cost_usd_per_mw=1.0)
    flat = solve_dispatch(load, DT, sto, spec, opt, **kw)
    lag = solve_dispatch(load, DT, sto, spec, opt, pcc_variation_lag_steps=20, **kw)
    p = lag.p_pcc_mw
    assert np.ptp(p) > 5.0                        # the grid carries part of the ripple
    assert np.ptp(p) <= 10.0 + 1e-6               # within the window limit
    loss = lambda r: sum(np.abs(v).sum() for v in r.p_storage_mw.values())   # noqa: E731
    assert loss(lag) < 0.95 * loss(flat)          # the storages cycle less
    # the mean over each period barely moves (the level is still priced)
    means = p[: (p.size // 20) * 20].reshape(-1, 20).mean(axis=1)
    assert np.ptp(means[1:]) < 0.5
    with pytest.raises(ScenarioError, match="pcc_variation_lag_steps"):
        solve_dispatch(load, DT, sto, spec, opt, pcc_variation_lag_steps=0, **kw)


@pytest.mark.parametrize("options", [{"random_seed": 7}, {"simplex_strategy": 4}, {"presolve": "off"}])
def test_tie_break_makes_the_priced_plan_the_same_whatever_the_solver_path(monkeypatch, options):
    """Two storages of the same efficiency split a flow in any ratio at equal cost, and the L1
    variation price leaves the PCC's path free: without the tie-break
    (formulation.TIE_BREAK_FRAC) HiGHS' options (a stand-in for another build or CPU) pick
    different optima. With it every path returns the same plan."""
    import facility.optimize.solvers.lp as lp

    sc = Scenario(jobs=[{"n_gpus": 1000}],
                  ups={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 1.0},
                  bess={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 1.0},
                  spec={"window_s": 5.0, "max_window_swing_mw": 10.0})
    sto, spec, opt = sc.storages(), sc.spec, sc.optimize
    kw = dict(terminal="free", pcc_variation_cost_usd_per_mw=0.05)
    ref = solve_dispatch(_square(), DT, sto, spec, opt, **kw)
    monkeypatch.setattr(lp, "HIGHS_OPTIONS", {**lp.HIGHS_OPTIONS, **options})
    other = solve_dispatch(_square(), DT, sto, spec, opt, **kw)
    np.testing.assert_allclose(other.p_pcc_mw, ref.p_pcc_mw, atol=1e-6)
    for n in sto:
        np.testing.assert_allclose(other.p_storage_mw[n], ref.p_storage_mw[n], atol=1e-6)
