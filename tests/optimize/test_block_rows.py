"""Long lag bounds on block extremes (facility.optimize.model.windows.add_block_lag_rows): the
restriction's rows imply the lag bound, the lag bound implies the relaxation's rows — checked
on the rows themselves, read back from the assembled matrix, for uniform and refined blocks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.model.pcc_grid import transient_steps
from facility.optimize.model.windows import LagBound, add_block_lag_rows, block_edges


def lag_ok(x, k, b_up, b_down):
    """Whether the series meets both lag bounds (pairs at most k apart)."""
    for lag in range(1, min(k, x.size - 1) + 1):
        d = x[lag:] - x[:-lag]
        if d.max() > b_up + 1e-9 or -d.min() > b_down + 1e-9:
            return False
    return True


def rows_ok(x, edges, k, b_up, b_down, mode):
    """Whether x with its true block extremes meets the block rows of ``mode``."""
    lp = LinearProgram()
    P = lp.add_columns("pcc", x.size, -np.inf, np.inf)
    out = add_block_lag_rows(lp, [LagBound("w", "up", k, b_up), LagBound("w", "down", k, b_down)],
                             P, edges, mode)
    A, _, _, _, rlo, rhi = lp.assemble()
    z = np.zeros(A.shape[1])
    z[P] = x
    a = edges[:-1]
    z[out["M"]] = np.maximum.reduceat(x, a)
    z[out["m"]] = np.minimum.reduceat(x, a)
    v = A @ z
    return bool(np.all(v <= rhi + 1e-9) and np.all(v >= rlo - 1e-9))


series = st.lists(st.floats(-10, 10, allow_nan=False), min_size=30, max_size=90)


@settings(max_examples=150, deadline=None)
@given(series, st.integers(3, 25), st.integers(1, 6), st.floats(1, 8), st.booleans())
def test_restriction_implies_the_bound_and_the_bound_implies_the_relaxation(xs, k, block, bound, refine):
    x = np.asarray(xs)
    fine = np.zeros(x.size, bool)
    if refine:
        fine[x.size // 3: x.size // 2] = True
    edges = block_edges(x.size, block, max(1, block // 3), fine)
    if rows_ok(x, edges, k, bound, bound, "restrict"):
        assert lag_ok(x, k, bound, bound)
    if lag_ok(x, k, bound, bound):
        assert rows_ok(x, edges, k, bound, bound, "relax")


def test_blocks_of_one_step_are_the_exact_lag_bound():
    rng = np.random.default_rng(2)
    for _ in range(50):
        x = np.cumsum(rng.normal(0, 1, 60))
        edges = block_edges(x.size, 1, 1)
        exact = lag_ok(x, 8, 3.0, 3.0)
        assert rows_ok(x, edges, 8, 3.0, 3.0, "restrict") == exact
        assert rows_ok(x, edges, 8, 3.0, 3.0, "relax") == exact


def test_block_edges_refine_only_where_asked():
    fine = np.zeros(100, bool)
    fine[40:45] = True
    e = block_edges(100, 20, 5, fine)
    assert e[0] == 0 and e[-1] == 100
    assert list(e) == [0, 20, 40, 45, 50, 55, 60, 80, 100]
    assert list(block_edges(100, 20, 5)) == [0, 20, 40, 60, 80, 100]


def test_transient_steps_mark_a_job_start_not_a_steady_job():
    rng = np.random.default_rng(1)
    t = np.arange(6000)
    steady = np.where(t % 40 < 32, 100.0, 40.0) + rng.normal(0, 1.5, t.size)
    assert not transient_steps(steady, 600, 20.0).any()
    start = np.where(t < 3000, 12.0, steady)
    mark = transient_steps(start, 600, 20.0)
    assert mark[3000] and mark[2500] and not mark[:1500].any() and not mark[4800:].any()


@pytest.mark.parametrize("mode", ["restrict", "relax"])
def test_rows_are_few_and_short(mode):
    """Blocks of k/12: about 2·12 pair rows per block, two entries each (no row spans k)."""
    lp = LinearProgram()
    P = lp.add_columns("pcc", 6000, -np.inf, np.inf)
    add_block_lag_rows(lp, [LagBound("w", "up", 600, 20.0), LagBound("w", "down", 600, 20.0)],
                       P, block_edges(6000, 50, 10), mode)
    A = lp.assemble()[0].tocsr()
    pair = np.diff(A.indptr)[2 * 6000:]
    assert pair.max() == 2 and pair.size <= 2 * 13 * 120 + 120
