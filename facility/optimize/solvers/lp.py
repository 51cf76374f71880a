"""HiGHS on a :class:`~facility.optimize.model.linear_program.LinearProgram`: solve, warm re-solves.

The assembled matrix of the model goes to HiGHS either straight through ``highspy``
(``solver = "highs"``, the fast path) or through a Pyomo model built from the same blocks (``solver = "appsi_highs"``,
:mod:`facility.optimize.solvers.pyomo_model`). Both solve the same LP.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.solvers.warm import keep_basis, start_from

__all__ = ["LpSolution", "solve_highs", "extend_highs", "resolve_same_matrix",
           "resolve_with_zero_upper", "restore_upper", "resolve_with_cost", "new_highs", "highs_lp"]


@dataclass
class LpSolution:
    """What a solve returns: status, objective and the primal values."""

    status: str
    termination: str
    objective: float
    x: np.ndarray
    solve_s: float
    handle: object = None
    #: the assembled matrix, kept by callers that re-solve warm (:func:`resolve_same_matrix`)
    matrix: object = None


#: HiGHS options of the fast path, chosen by measurement (benchmarks/bench_sizing.py):
#: dual simplex on the (small-presolved) LP; the interior point and PDLP solvers of this HiGHS
#: build were slower on these staircase LPs. Scaling by the largest value (4) instead of
#: equilibration and Devex pricing instead of steepest edge, with the objective scaled
#: (:func:`objective_scale_exponent`), on the periodic reduction of the benchmark's hour
#: (restriction / relaxation): storage only 0.08 / 0.60 s → 0.05 / 0.27 s; with a band limit
#: 1.8 / 4.4 s → 0.7 / 1.7 s. Without the objective scaling, scaling by the largest value made
#: "optimal" solutions up to 1e-3 above the optimum; with it both scalings agree to 1e-9.
HIGHS_OPTIONS = {"solver": "simplex", "simplex_strategy": 1, "presolve": "on",
                 "simplex_scale_strategy": 4, "simplex_dual_edge_weight_strategy": 1}

#: Exponent bounds of :func:`objective_scale_exponent`. [-]
MAX_OBJECTIVE_SCALE_EXPONENT = 30
#: The typical (median nonzero) cost is scaled to about 2^this. [-]
TYPICAL_COST_EXPONENT = -5


def objective_scale_exponent(cost: np.ndarray) -> int:
    """Exponent k of the power of two 2^k by which HiGHS scales the objective
    (``user_objective_scale``): the median nonzero cost becomes about 2^-5.

    The LPs' costs are in k$ per column unit, and most are per-step energy costs, tiny
    (60 USD/MWh on steps of 0.1 s: 1.7e-6 k$ per MW). HiGHS' dual feasibility tolerance
    (1e-7) is absolute, so on such costs an "optimal" basis may leave reduced costs of the
    order of the costs themselves, and its objective may lie above the optimum. Measured on the
    periodic relaxation of the benchmark's mix case (``bench_sizing.py --mix 0.5``, a lower
    bound) with HiGHS' scaling by the largest value: "optimal" at 0.0582192 k$ where the
    optimum is 0.0581696 (8.5e-4 above it); with the GPU levers 0.034 USD above. Scaled by
    2^9 to 2^22 the results agree with each other and with the interior-point solver to 1e-9,
    and dual simplex is faster (2.1 s instead of 4.4 s). The median, not the largest cost,
    sets k: with a power cap the slowdown chords cost up to 259 k$ per unit while the step
    costs stay at 1e-6. HiGHS reports the objective, the solution and the duals unscaled.
    """
    c = np.abs(np.asarray(cost, dtype=float))
    c = c[np.isfinite(c) & (c > 0.0)]
    if c.size == 0:
        return 0
    k = round(TYPICAL_COST_EXPONENT - float(np.log2(np.median(c))))
    return int(min(max(k, 0), MAX_OBJECTIVE_SCALE_EXPONENT))


def new_highs():
    """A silent ``highspy.Highs`` (its constructor prints a banner on the C-level stdout)."""
    import highspy

    try:
        sys.stdout.flush()
        fd = os.dup(1)
    except (OSError, ValueError):  # no real stdout (e.g. captured): construct as is
        h = highspy.Highs()
    else:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            h = highspy.Highs()
        finally:
            os.dup2(fd, 1)
            os.close(fd)
            os.close(devnull)
    h.setOptionValue("output_flag", False)
    return h


def highs_lp(A, c, lb, ub, rlo, rhi):
    """A ``highspy.HighsLp`` of an assembled matrix and its bounds."""
    import highspy

    model = highspy.HighsLp()
    model.num_col_ = A.shape[1]
    model.num_row_ = A.shape[0]
    model.col_cost_ = c
    model.col_lower_ = lb
    model.col_upper_ = ub
    model.row_lower_ = rlo
    model.row_upper_ = rhi
    model.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    model.a_matrix_.start_ = A.indptr.astype(np.int32)
    model.a_matrix_.index_ = A.indices.astype(np.int32)
    model.a_matrix_.value_ = A.data
    return model


def solve_highs(lp: LinearProgram, *, time_limit_s: float = 600.0, options: dict | None = None,
                verbose: bool = False, assembled: tuple | None = None) -> LpSolution:
    """Solve the assembled LP with HiGHS through ``highspy`` (matrix passed directly);
    ``assembled``: ``lp.assemble()`` when the caller has it already."""
    import highspy

    A, c, lb, ub, rlo, rhi = lp.assemble() if assembled is None else assembled
    h = new_highs()
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("time_limit", float(time_limit_s))
    opts = {**HIGHS_OPTIONS, "user_objective_scale": objective_scale_exponent(c), **(options or {})}
    for k, v in opts.items():
        h.setOptionValue(k, v)
    h.passModel(highs_lp(A, c, lb, ub, rlo, rhi))
    # inside a warm_starts block: the basis of the same LP solved before (outside: None, free)
    key = start_from(h, A) if opts.get("solver") == "simplex" else None
    t0 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t0
    ms = h.getModelStatus()
    term = h.modelStatusToString(ms)
    ok = ms == highspy.HighsModelStatus.kOptimal
    keep_basis(h, key, ok)
    x = np.asarray(h.getSolution().col_value, dtype=float) if ok else np.full(A.shape[1], np.nan)
    obj = float(h.getInfo().objective_function_value) if ok else float("nan")
    return LpSolution("ok" if ok else "failed", term, obj, x, solve_s, h)


def _rerun(h, n_nan: int) -> LpSolution:
    """Run a ``highspy`` model again (from its basis) and read its solution (``n_nan`` NaNs
    as ``x`` when it is not optimal)."""
    import highspy

    t0 = time.perf_counter()
    h.run()
    solve_s = time.perf_counter() - t0
    ms = h.getModelStatus()
    ok = ms == highspy.HighsModelStatus.kOptimal
    x = np.asarray(h.getSolution().col_value, dtype=float) if ok else np.full(n_nan, np.nan)
    obj = float(h.getInfo().objective_function_value) if ok else float("nan")
    return LpSolution("ok" if ok else "failed", h.modelStatusToString(ms), obj, x, solve_s, h)


def extend_highs(sol: LpSolution, lp: LinearProgram, mark: tuple[int, int, int]) -> LpSolution:
    """Pass the columns and rows added to ``lp`` since ``mark`` to a solved ``highspy`` model and
    solve again from its basis (new rows only cut the old optimum off: dual simplex restarts
    from a dual feasible basis, a warm start)."""
    h = sol.handle
    c0, r0, k0 = mark
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
    if lp.n_cols > c0:
        cost, lb, ub = (cat(v)[c0:] for v in (lp.cost, lp.col_lb, lp.col_ub))
        h.addCols(int(cost.size), cost, lb, ub, 0, np.zeros(0, np.int32), np.zeros(0, np.int32),
                  np.zeros(0))
    if lp.n_rows > r0:
        ri = cat(lp.row_i[k0:]).astype(np.int64) - r0
        rj = cat(lp.row_j[k0:]).astype(np.int32)
        rv = cat(lp.row_v[k0:]).astype(float)
        A = sp.csr_matrix((rv, (ri, rj)), shape=(lp.n_rows - r0, lp.n_cols))
        A.sum_duplicates()
        lo = cat(lp.row_lo)[r0:]
        hi = cat(lp.row_hi)[r0:]
        h.addRows(int(A.shape[0]), lo, hi, int(A.nnz), A.indptr.astype(np.int32),
                  A.indices.astype(np.int32), A.data)
    return _rerun(h, lp.n_cols)


def restore_upper(sol: LpSolution, cols: np.ndarray, ub: np.ndarray) -> None:
    """Give columns of a solved ``highspy`` model back their upper bounds (undo
    :func:`resolve_with_zero_upper`); nothing is solved."""
    h = sol.handle
    cols = np.asarray(cols, dtype=np.int32)
    lo = np.asarray(h.getLp().col_lower_)[cols]
    h.changeColsBounds(cols.size, cols, lo, np.asarray(ub, dtype=float))


def resolve_with_zero_upper(sol: LpSolution, cols: np.ndarray) -> LpSolution:
    """Set the upper bound of ``cols`` to 0 in a solved ``highspy`` model and solve again.

    Only bounds change, so the previous optimal basis stays dual feasible and HiGHS' dual
    simplex restarts from it (a warm start, not a new solve).
    """
    h = sol.handle
    cols = np.asarray(cols, dtype=np.int32)
    lo = np.asarray(h.getLp().col_lower_)[cols]
    h.changeColsBounds(cols.size, cols, lo, np.zeros(cols.size))
    return _rerun(h, cols.size)


def resolve_with_cost(sol: LpSolution, cols: np.ndarray, cost: np.ndarray) -> LpSolution:
    """Set the objective coefficients of ``cols`` in a solved ``highspy`` model and solve again.

    Only costs change, so the previous optimal basis stays primal feasible; HiGHS restarts
    from it (measured faster with its dual simplex than with the primal one on the periodic
    relaxation: 26 s against 387 s, a cold solve 119 s)."""
    h = sol.handle
    cols = np.asarray(cols, dtype=np.int32)
    h.changeColsCost(cols.size, cols, np.asarray(cost, dtype=float))
    return _rerun(h, int(h.getNumCol()))


def resolve_same_matrix(sol: LpSolution, assembled: tuple, *, time_limit_s: float = 600.0
                        ) -> LpSolution | None:
    """Solve an LP (``assembled``: its :meth:`LinearProgram.assemble`) warm in the ``highspy``
    model of ``sol`` when both have the same matrix (only costs and bounds differ: HiGHS
    restarts from the last basis); None when the matrices differ (solve cold instead)."""
    A, c, lb, ub, rlo, rhi = assembled
    h = sol.handle
    B = sol.matrix
    if h is None or B is None or A.shape != B.shape or A.nnz != B.nnz or not (
            np.array_equal(A.indptr, B.indptr) and np.array_equal(A.indices, B.indices)
            and np.array_equal(A.data, B.data)):
        return None
    n, m = A.shape[1], A.shape[0]
    h.setOptionValue("time_limit", float(time_limit_s))
    h.changeColsBounds(n, np.arange(n, dtype=np.int32), lb, ub)
    h.changeRowsBounds(m, np.arange(m, dtype=np.int32), rlo, rhi)
    h.changeColsCost(n, np.arange(n, dtype=np.int32), c)
    out = _rerun(h, n)
    out.matrix = B
    return out
