"""HiGHS' objective scaling (``lp.objective_scale_exponent``): tiny k$ costs solved to their
true optimum, so that a relaxation's optimum is a lower bound."""

import sys

import numpy as np
import pytest

from facility.config.schema import OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.solvers.lp import TYPICAL_COST_EXPONENT, objective_scale_exponent, solve_highs
from tests.optimize.test_periodic import bess

#: the sizing benchmark's limits (``benchmarks/bench_sizing.py``)
SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=2.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)


def test_the_typical_cost_is_scaled_to_about_two_to_the_minus_five():
    c = np.array([0.0, 1.7e-7, 1.7e-7, 2.0e-7, 3.1e-3])
    k = objective_scale_exponent(c)
    assert abs(np.log2(np.median(c[c > 0]) * 2.0 ** k) - TYPICAL_COST_EXPONENT) <= 0.5
    assert objective_scale_exponent(np.zeros(4)) == 0
    assert objective_scale_exponent(np.array([5.0, 8.0])) == 0  # never scaled down


def _captured_lps(monkeypatch, load, dt_s):
    """The LPs ``size_storage`` hands to HiGHS on the periodic path."""
    solve_mod = sys.modules["facility.optimize.solvers.solve"]
    seen = []

    def spy(lp, **kw):
        seen.append(lp)
        return solve_highs(lp, **kw)

    monkeypatch.setattr(solve_mod, "solve_highs", spy)
    size_storage(load, dt_s, {"bess": bess()}, SPEC, OptimizeConfig(annualize=True))
    monkeypatch.undo()
    return seen


def test_the_periodic_relaxation_is_solved_to_its_optimum(monkeypatch):
    """The relaxation of an hour of square wave (costs of 1e-7 to 3e-3 k$): without the
    objective scaling, HiGHS' scaling by largest value stopped 1e-4 above its optimum, a
    lower bound above the optimum it bounds. Scaled, dual simplex with either scaling and the
    interior point (no crossover) agree to 1e-9."""
    i = np.arange(36_000)  # the benchmark's square wave: 100/40 MW, 4 s, duty 0.8 (exact steps)
    lps = _captured_lps(monkeypatch, np.where(i % 40 < 32, 100.0, 40.0), 0.1)
    assert len(lps) == 2  # restriction and relaxation
    lower = lps[1]
    ipm = solve_highs(lower, options={"solver": "ipm", "run_crossover": "on"})
    for opts in ({"simplex_scale_strategy": 4}, {"simplex_scale_strategy": 2}, None):
        sol = solve_highs(lower, options=opts)
        assert sol.status == "ok"
        assert sol.objective == pytest.approx(ipm.objective, rel=1e-9), opts


def test_costs_set_on_a_solved_model_are_scaled_too():
    """A warm re-solve after a cost change (``resolve_with_cost``) gives the cold optimum."""
    from facility.optimize.solvers.lp import resolve_with_cost

    lp = LinearProgram()
    n = 50
    c = 1e-7 * (1.0 + 1e-3 * np.arange(n))
    x = lp.add_columns("x", n, 0.0, 1.0, c)
    lp.add_row("sum", x, np.ones(n), 3.0, np.inf)
    sol = solve_highs(lp)
    assert sol.objective == pytest.approx(float(np.sum(np.sort(c)[:3])), rel=1e-12)
    c2 = c[::-1].copy()
    warm = resolve_with_cost(sol, x, c2)
    assert warm.objective == pytest.approx(float(np.sum(np.sort(c2)[:3])), rel=1e-12)
    assert np.flatnonzero(warm.x > 0.5).tolist() == [n - 3, n - 2, n - 1]

