r"""Interior-point solves of the assembled LP, and a lower bound that holds whatever their accuracy.

HiGHS' simplex needs a time that grows about with the square of the horizon on these LPs
(:mod:`facility.optimize.strategies.interior` says why); an interior-point method with a sparse direct
factorization grows about linearly, because the window rows only couple steps a bounded lag
apart. :func:`solve_ipm` hands an assembled :class:`~facility.optimize.model.linear_program.LinearProgram` to
PIQP (a proximal interior-point solver with a sparse LDLᵀ factorization; column bounds are
native there, so they add no rows) and returns the primal point and the row duals.

An interior point is not a vertex and its duals are feasible only to the solver's tolerance,
so its objective is not a proof. :func:`lagrangian_bound` makes one: for *any* row duals y and
finite boxes l ≤ x ≤ u that contain an optimal solution,

.. math::

    z^* \ \ge\ L(y) = \sum_i \big(y_i^+\, r^{lo}_i - y_i^-\, r^{hi}_i\big)
                     + \sum_j \min\big((c - A^\top y)_j\, l_j,\ (c - A^\top y)_j\, u_j\big)

(weak duality of the LP with the rows ``r_lo ≤ A x ≤ r_hi`` dualized and the box kept: for
every feasible x, cᵀx = yᵀAx + (c − Aᵀy)ᵀx ≥ the right side, since yᵢ (Ax)ᵢ ≥ yᵢ⁺ r^lo_i −
yᵢ⁻ r^hi_i). Rows may be left out (yᵢ = 0): the bound then holds for the LP without them, a
relaxation. With the solver's duals the bound is within the tolerance-sized residuals times
the box widths of the optimum.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from facility.optimize.model.linear_program import LinearProgram

__all__ = ["IpmSolution", "IPM_OPTIONS", "solve_ipm", "solve_assembled", "lagrangian_bound"]

#: PIQP settings: primal, dual and gap tolerances 1e-8 (relative); infeasibility is only
#: declared on a certificate of 1e-14 (the default 1e-4 declared a feasible 30,000-step LP
#: infeasible after 23 iterations); ``max_iter`` bounds a stalled tail (the bound and the
#: plan's check do not need the solver's own convergence flag).
#: Columns with a box narrower than this are scaled to unit width before the solve. [column unit]
NARROW_BOX = 1e-2

IPM_OPTIONS = {"eps_abs": 1e-8, "eps_rel": 1e-8, "eps_duality_gap_abs": 1e-8,
               "eps_duality_gap_rel": 1e-8, "eps_primal_inf": 1e-14, "eps_dual_inf": 1e-14,
               "max_iter": 150}


@dataclass
class IpmSolution:
    """What an interior-point solve returns.

    Attributes
    ----------
    status : str
        ``"ok"`` (converged), ``"max_iter"`` (stopped at ``max_iter``: the point is usually
        usable, the caller checks it), ``"infeasible"`` or ``"failed"``.
    termination : str
        PIQP's status text.
    x : numpy.ndarray
        Primal point (NaN when failed).
    y : numpy.ndarray
        Row duals in the convention c − Aᵀy = reduced costs (yᵢ > 0: the lower row bound
        pushes, yᵢ < 0: the upper one).
    objective : float
        cᵀx. [the LP's unit]
    iterations : int
    solve_s : float
        Wall time of setup and solve. [s]
    """

    status: str
    termination: str
    x: np.ndarray
    y: np.ndarray
    objective: float
    iterations: int
    solve_s: float


def solve_assembled(A, c, lb, ub, rlo, rhi, *, options: dict | None = None) -> IpmSolution:
    """Solve ``min cᵀx, rlo ≤ A x ≤ rhi, lb ≤ x ≤ ub`` with PIQP (see :func:`solve_ipm`).

    Equal row bounds become PIQP's equality block, the others its two-sided inequality block.
    Fixed columns (lb = ub: a complementarity repair's direction fixes) are substituted out
    first: a barrier on a box of zero width is singular.
    """
    import piqp

    t0 = time.perf_counter()
    A = sp.csc_matrix(A)
    lb, ub, c = np.asarray(lb, float), np.asarray(ub, float), np.asarray(c, float)
    c0 = c
    fixed = np.isfinite(lb) & (lb == ub)
    x = np.where(fixed, lb, 0.0)
    if fixed.any():
        shift = A[:, np.flatnonzero(fixed)] @ lb[fixed]
        rlo, rhi = rlo - shift, rhi - shift
        A = A[:, np.flatnonzero(~fixed)]
    lb, ub, c = lb[~fixed], ub[~fixed], c[~fixed]
    # a column whose box is narrow (a cap piece of 0.001 of TDP and its chords) is solved in
    # units of its width: its barrier terms are then as large as the others'
    w = ub - lb
    scale = np.where(np.isfinite(w) & (w > 0) & (w < NARROW_BOX), w, 1.0)
    if np.any(scale != 1.0):
        A = A @ sp.diags(scale)
        lb, ub, c = lb / scale, ub / scale, c * scale
    A = A.tocsr()
    n = A.shape[1]
    eq = np.isfinite(rlo) & (rlo == rhi)
    s = piqp.SparseSolver()
    s.settings.verbose = False
    for k, v in {**IPM_OPTIONS, **(options or {})}.items():
        setattr(s.settings, k, v)
    s.setup(sp.csc_matrix((n, n)), c, sp.csc_matrix(A[eq]), rlo[eq],
            sp.csc_matrix(A[~eq]), rlo[~eq], rhi[~eq], lb, ub)
    st = s.solve()
    r = s.result
    status = {piqp.PIQP_SOLVED: "ok", piqp.PIQP_MAX_ITER_REACHED: "max_iter",
              piqp.PIQP_PRIMAL_INFEASIBLE: "infeasible",
              piqp.PIQP_DUAL_INFEASIBLE: "infeasible"}.get(st, "failed")
    x[~fixed] = np.asarray(r.x, dtype=float) * scale
    y = np.zeros(A.shape[0])
    # PIQP: c + A_eqᵀ y_eq + Gᵀ (z_u − z_l) + (z_bu − z_bl) = 0
    y[eq] = -np.asarray(r.y, dtype=float)
    y[~eq] = np.asarray(r.z_l, dtype=float) - np.asarray(r.z_u, dtype=float)
    if status == "failed" or not np.all(np.isfinite(x)):
        status = "failed"
    return IpmSolution(status, str(st), x, y, float(np.dot(c0, x)) if np.all(np.isfinite(x)) else np.nan,
                       int(r.info.iter), time.perf_counter() - t0)


def solve_ipm(lp: LinearProgram, *, options: dict | None = None) -> IpmSolution:
    """Solve an assembled LP by PIQP's interior-point method (:data:`IPM_OPTIONS`).

    PIQP has no time limit of its own; callers that must stop run it in a child process
    (:func:`facility.optimize.certificates.bracket_jobs.run_solves`).
    """
    A, c, lb, ub, rlo, rhi = lp.assemble()
    return solve_assembled(A, c, lb, ub, rlo, rhi, options=options)


def lagrangian_bound(A, c: np.ndarray, y: np.ndarray, rlo: np.ndarray, rhi: np.ndarray,
                     box_lo: np.ndarray, box_hi: np.ndarray, keep: np.ndarray | None = None) -> float:
    r"""A lower bound on ``min cᵀx, rlo ≤ A x ≤ rhi, box_lo ≤ x ≤ box_hi`` from any row duals.

    .. math::  L(y) = \sum_i (y_i^+ r^{lo}_i - y_i^- r^{hi}_i)
               + \sum_j \min((c - A^\top y)_j\, l_j, (c - A^\top y)_j\, u_j)

    Parameters
    ----------
    A : scipy.sparse matrix (m, n)
    c : numpy.ndarray (n,)
        The true costs (not those of a modified LP the duals may come from).
    y : numpy.ndarray (m,)
        Row duals, convention c − Aᵀy = reduced costs. A sign without a finite bound on its
        side is set to 0 (that row cannot push).
    rlo, rhi : numpy.ndarray (m,)
        Row bounds.
    box_lo, box_hi : numpy.ndarray (n,)
        Finite column boxes that contain an optimal solution (the caller's proof).
    keep : numpy.ndarray of bool (m,), optional
        Rows whose duals are used; the others count as left out of the LP (yᵢ = 0), so the
        bound holds for the LP without them.

    Returns
    -------
    float
        The bound, -inf when a column with a nonzero reduced cost has an infinite box.
    """
    y = np.asarray(y, dtype=float).copy()
    if keep is not None:
        y[~keep] = 0.0
    lo_ok, hi_ok = np.isfinite(rlo), np.isfinite(rhi)
    y[(y > 0) & ~lo_ok] = 0.0
    y[(y < 0) & ~hi_ok] = 0.0
    rows = float(np.sum(np.where(y > 0, y * np.where(lo_ok, rlo, 0.0),
                                 y * np.where(hi_ok, rhi, 0.0))))
    z = np.asarray(c, dtype=float) - A.T @ y
    with np.errstate(invalid="ignore"):
        cols = np.minimum(z * box_lo, z * box_hi)
    cols = np.where(z == 0.0, 0.0, cols)
    if not np.all(np.isfinite(cols)):
        return -np.inf
    return rows + float(np.sum(cols))
