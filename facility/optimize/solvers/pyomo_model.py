"""The same LP as a Pyomo model, solved with HiGHS through Pyomo's APPSI interface.

Used with ``optimize.solver = "appsi_highs"`` (and by the tests that check both paths agree).
The model is built from the assembled matrix with one ``LinearExpression`` per row, so it is
the formulation of :mod:`facility.optimize.model.formulation`, not a second one.
"""

from __future__ import annotations

import time

import numpy as np

from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.solvers.lp import LpSolution, objective_scale_exponent

__all__ = ["to_pyomo", "solve_pyomo"]


def to_pyomo(lp: LinearProgram):
    """Build a ``pyomo.environ.ConcreteModel`` with variables ``x[j]`` and rows ``rows[i]``."""
    import pyomo.environ as pyo
    from pyomo.core.expr.numeric_expr import LinearExpression

    A, c, lb, ub, rlo, rhi = lp.assemble()
    R = A.tocsr()
    n = A.shape[1]
    m = pyo.ConcreteModel()
    m.J = pyo.RangeSet(0, n - 1)
    fin = lambda v: None if not np.isfinite(v) else float(v)  # noqa: E731
    m.x = pyo.Var(m.J, bounds=lambda _m, j: (fin(lb[j]), fin(ub[j])))
    xs = [m.x[j] for j in range(n)]
    m.I = pyo.RangeSet(0, A.shape[0] - 1)

    def row(_m, i):
        s, e = R.indptr[i], R.indptr[i + 1]
        expr = LinearExpression(constant=0.0, linear_coefs=R.data[s:e].tolist(),
                                linear_vars=[xs[j] for j in R.indices[s:e]])
        return (fin(rlo[i]), expr, fin(rhi[i]))

    m.rows = pyo.Constraint(m.I, rule=row)
    nz = np.nonzero(c)[0]
    m.obj = pyo.Objective(expr=LinearExpression(constant=0.0, linear_coefs=c[nz].tolist(),
                                                linear_vars=[xs[j] for j in nz]))
    return m


def solve_pyomo(lp: LinearProgram, *, time_limit_s: float = 600.0) -> tuple[LpSolution, float]:
    """Build the Pyomo model and solve it with ``appsi_highs``; return (solution, build_s).

    HiGHS gets the objective scaling of the ``highspy`` path
    (:func:`facility.optimize.solvers.lp.objective_scale_exponent`), so that its absolute dual
    tolerance means the same on both paths (with HiGHS' default equilibration, which this path
    keeps, no case measured here went wrong without it)."""
    import pyomo.environ as pyo
    from pyomo.contrib.appsi.solvers import Highs

    t0 = time.perf_counter()
    m = to_pyomo(lp)
    build_s = time.perf_counter() - t0
    opt = Highs()
    opt.config.load_solution = False
    opt.config.time_limit = time_limit_s
    opt.highs_options = {"user_objective_scale": objective_scale_exponent(np.concatenate(lp.cost))
                         if lp.cost else 0}
    t0 = time.perf_counter()
    res = opt.solve(m)
    solve_s = time.perf_counter() - t0
    term = str(res.termination_condition)
    ok = res.termination_condition.name == "optimal"
    if ok:
        res.solution_loader.load_vars()
        x = np.array([pyo.value(m.x[j]) for j in m.J], dtype=float)
        obj = float(res.best_feasible_objective)
    else:
        x = np.full(lp.n_cols, np.nan)
        obj = float("nan")
    return LpSolution("ok" if ok else "failed", term, obj, x, solve_s), build_s
