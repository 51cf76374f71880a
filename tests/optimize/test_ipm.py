"""The interior-point solve (facility.optimize.solvers.ipm.solve_ipm) and the Lagrangian lower bound
that holds for any row duals (facility.optimize.solvers.ipm.lagrangian_bound)."""

import numpy as np
import pytest
import scipy.sparse as sp

from facility.optimize.solvers.ipm import lagrangian_bound, solve_ipm
from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.solvers.lp import solve_highs


def small_lp():
    """min x + 2y  s.t.  x + y >= 1,  x <= 0.7,  0 <= x, y <= 10: optimum 1.3 at (0.7, 0.3)
    with row duals y1 = 2 (x + y >= 1) and y2 = -1 (x <= 0.7)."""
    lp = LinearProgram()
    x = lp.add_columns("x", 1, 0.0, 10.0, 1.0)
    y = lp.add_columns("y", 1, 0.0, 10.0, 2.0)
    lp.add_rows("cover", [(x, 1.0), (y, 1.0)], 1.0, np.inf)
    lp.add_rows("cap", [(x, 1.0)], -np.inf, 0.7)
    return lp


def bound(lp, y, keep=None, lo=None, hi=None):
    A, c, lb, ub, rlo, rhi = lp.assemble()
    return lagrangian_bound(A, c, np.asarray(y, float), rlo, rhi,
                            lb if lo is None else lo, ub if hi is None else hi, keep)


def test_exact_duals_give_the_optimum_and_any_duals_a_bound():
    lp = small_lp()
    assert bound(lp, [2.0, -1.0]) == pytest.approx(1.3)
    rng = np.random.default_rng(0)
    for _ in range(200):
        assert bound(lp, rng.normal(0, 3, 2)) <= 1.3 + 1e-12
    # a sign with no bound on its side cannot push: y2 > 0 on an upper-only row counts as 0
    assert bound(lp, [2.0, 5.0]) == bound(lp, [2.0, 0.0])


def test_left_out_rows_give_a_bound_of_the_lp_without_them():
    lp = small_lp()
    keep = np.array([True, False])  # without x <= 0.7 the optimum is 1 (x = 1)
    assert bound(lp, [1.0, -1.0], keep=keep) == pytest.approx(1.0)
    assert bound(lp, [2.0, -1.0], keep=keep) <= 1.0 + 1e-12


def test_an_infinite_box_under_a_nonzero_reduced_cost_gives_no_bound():
    lp = small_lp()
    A, c, lb, ub, rlo, rhi = lp.assemble()
    hi = ub.copy()
    hi[1] = np.inf
    assert lagrangian_bound(A, c, np.array([3.0, -1.0]), rlo, rhi, lb, hi) == -np.inf
    # a zero reduced cost on an infinite box is fine
    assert lagrangian_bound(A, c, np.array([2.0, -1.0]), rlo, rhi, lb, hi) == pytest.approx(1.3)


def test_solve_ipm_matches_the_simplex_and_its_duals_bound_it():
    rng = np.random.default_rng(3)
    n, m = 40, 30
    lp = LinearProgram()
    x = lp.add_columns("x", n, 0.0, rng.uniform(1, 5, n), rng.uniform(0.5, 2, n))
    A = sp.random(m, n, density=0.3, random_state=4, data_rvs=lambda k: rng.uniform(0.1, 1, k)).tocsr()
    for i in range(m):
        cols = A.indices[A.indptr[i]:A.indptr[i + 1]]
        lp.add_row("r", x[cols], A.data[A.indptr[i]:A.indptr[i + 1]], 0.5, np.inf)
    ref = solve_highs(lp)
    got = solve_ipm(lp)
    assert ref.status == "ok" and got.status == "ok"
    assert got.objective == pytest.approx(ref.objective, rel=1e-6)
    Aa, c, lb, ub, rlo, rhi = lp.assemble()
    low = lagrangian_bound(Aa, c, got.y, rlo, rhi, lb, ub)
    assert low <= ref.objective * (1 + 1e-9) and low == pytest.approx(ref.objective, rel=1e-6)
