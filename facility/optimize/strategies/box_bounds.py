"""Lower bounds of the relaxed GPU-lever boxes of :mod:`facility.optimize.strategies.lever_search`, and
bounds that cost no solve: another box's duals carried over.

*Why it is valid.* For an LP ``min cᵀx, rlo ≤ A x ≤ rhi, lo ≤ x ≤ hi`` every vector of row
multipliers y gives the Lagrangian lower bound

.. math::  L(y) = \\sum_i (y_i^+ r^{lo}_i - y_i^- r^{hi}_i)
           + \\sum_j \\min\\big((c - A^\\top y)_j\\, l_j, (c - A^\\top y)_j\\, u_j\\big)

(weak duality; :func:`facility.optimize.solvers.ipm.lagrangian_bound`), whatever y is. Two boxes of
one search have LPs built by the same steps: the same storages, windows and lever columns,
with other loads (the constant clip and floor burn of the box), other column bounds (the room
to clip or burn more) and other constants (the slowdown at the box's loosest cap). So the
duals of a box that was solved, placed on the rows of another box's LP that have the same
family and time index (0 on the rows it lacks), are a y for that LP, and L(y) bounds it at the
cost of a product with its matrix, no solve. Close boxes have close duals: a child of a box
solved a moment ago mostly inherits its parent's prices and adds its own slowdown as a
constant, which is what drops the children of a box next to "no cap" whose caps clip enough
to slow the job.

*How it is used* (:class:`BoxBounds`): a box is first bounded with the duals of the last few
boxes solved; if one of those bounds reaches the best plan's cost (to within
``optimize.max_gap_frac``), that is its bound; else its LP is solved
(:func:`lp_lower_bound_usd`) and its duals join the donors.
"""

from __future__ import annotations

import numpy as np

from facility.errors import InfeasibleError, SolverTimeLimit
from facility.optimize.strategies import interior
from facility.optimize.certificates.bracket_jobs import (BOUND_IPM_OPTIONS, bound_at, processes_allowed,
                                            run_solves, solve_job)
from facility.optimize.strategies.full import LpBounds
from facility.optimize.model.pcc_grid import box_template, build_grid_model
from facility.optimize.model.problem import Problem
from facility.optimize.model.result import gap_frac

__all__ = ["BoxBounds", "carry_duals", "bound_with_duals", "lp_lower_bound_usd", "N_DONORS",
           "UPPER_SLACK_FRAC"]

#: How many solved boxes lend their duals to the next boxes (each try costs one LP build and
#: one product with its matrix, ~1 s on an hour at 0.1 s against ~100 s for a solve).
N_DONORS = 3

_RANK = 1 << 20  # rows per time index in one block stay below this


def _ranked(t: np.ndarray) -> np.ndarray:
    """One integer per row of a block: its time index and its rank among the rows with the same
    time index (in order), so rows can be matched between two blocks. int64 (n,)"""
    order = np.argsort(t, kind="stable")
    ts = t[order]
    first = np.r_[0, np.flatnonzero(np.diff(ts)) + 1] if ts.size else np.zeros(0, np.int64)
    run = np.diff(np.r_[first, ts.size])
    rank = np.empty(ts.size, dtype=np.int64)
    rank[order] = np.arange(ts.size) - np.repeat(first, run)
    return (t.astype(np.int64) + 1) * _RANK + rank


def carry_duals(rows_to: list, n_rows_to: int, rows_from: list, y_from: np.ndarray) -> np.ndarray:
    """Row values of one LP placed on the rows of another built by the same steps.

    Parameters
    ----------
    rows_to, rows_from : list
        :meth:`facility.optimize.model.linear_program.LinearProgram.row_index` of the two LPs.
    n_rows_to : int
        Rows of the receiving LP.
    y_from : numpy.ndarray
        The values (duals) on the rows of the giving LP.

    Returns
    -------
    numpy.ndarray (n_rows_to,)
        Each row's value from the row of the same block key, time index and rank among equal
        time indices; 0 where the giving LP has no such row.
    """
    y = np.zeros(n_rows_to)
    donor = {key: (start, t) for key, start, t in rows_from}
    for key, start, t in rows_to:
        hit = donor.get(key)
        if hit is None or t.size == 0:
            continue
        d_start, d_t = hit
        if d_t.size == t.size and np.array_equal(d_t, t):
            y[start:start + t.size] = y_from[d_start:d_start + t.size]
            continue
        kt, kd = _ranked(t), _ranked(d_t)
        order = np.argsort(kd)
        pos = np.minimum(np.searchsorted(kd[order], kt), max(kd.size - 1, 0))
        ok = kd[order][pos] == kt if kd.size else np.zeros(t.size, dtype=bool)
        y[start + np.flatnonzero(ok)] = y_from[d_start + order[pos[ok]]]
    return y


def bound_with_duals(pb: Problem, upper_usd: float, donor: dict) -> float:
    """The Lagrangian bound of ``pb``'s LP with the duals of another box's
    (:func:`lp_lower_bound_usd` with ``donors``): the same LP as that
    bound (on steps of one: the relaxation with its long-lag block rows, or the restriction with
    them left out; either is a relaxation of the problem's LP), the same column boxes from
    ``upper_usd``. [USD]"""
    mode = donor["mode"]
    gm = build_grid_model(pb, 1, mode, None)
    lp = gm.m.lp
    A, c, _, _, rlo, rhi = lp.assemble()
    keep = np.ones(A.shape[0], dtype=bool)
    if mode == "restrict":
        for a, b in gm.block_rows:
            keep[a:b] = False
    y = carry_duals(lp.row_index(), A.shape[0], donor["rows"], donor["y"])
    return bound_at({"A": A, "c": c, "y": y, "rlo": rlo, "rhi": rhi, "keep": keep,
                              "boxes": box_template(gm)}, pb, float(upper_usd))


def _on_interior(pb: Problem) -> bool:
    """Whether ``pb``'s boxes are bounded by the interior strategy (long enough, and it applies)."""
    return pb.n_steps >= interior.MIN_STEPS and interior.applies(pb)


class BoxBounds:
    """Lower bounds of the relaxed lever boxes of :func:`~facility.optimize.strategies.lever_search.search_boxes`:
    on long horizons, where the interior strategy applies (:data:`~facility.optimize.strategies.interior.MIN_STEPS`
    steps and more), first the bounds with the duals of the last :data:`N_DONORS` boxes solved
    (module text), then, when none reaches the best plan, the Lagrangian bound of one
    interior-point restriction (:func:`lp_lower_bound_usd`; the
    simplex grows as T² there and does not finish an hour); on shorter ones the LP's optimum,
    warm from the last box's basis (:class:`~facility.optimize.strategies.full.LpBounds`).

    Attributes
    ----------
    n_carried : int
        Boxes bounded by carried duals alone (no solve).
    """

    def __init__(self):
        self._lp = LpBounds()
        self._donors: list = []
        self.n_carried = 0

    def carried(self, pb: Problem, upper_usd: float) -> float:
        """The best bound of ``pb``'s LP with the donors' duals (-inf without donors, a plan's
        cost or the interior strategy). [USD]"""
        if not (self._donors and np.isfinite(upper_usd) and _on_interior(pb)):
            return -np.inf
        return max(bound_with_duals(pb, upper_usd, d) for d in self._donors)

    def reaches(self, pb: Problem, bound_usd: float, upper_usd: float) -> bool:
        """Whether ``bound_usd`` drops a box or piece beside a plan of ``upper_usd`` (at or
        above it, or within ``optimize.max_gap_frac``)."""
        return bound_usd >= upper_usd or gap_frac(upper_usd, bound_usd) <= pb.optimize.max_gap_frac

    def __call__(self, pb: Problem, upper_usd: float = np.inf) -> float:
        if not _on_interior(pb):
            return self._lp(pb, upper_usd)
        carried = self.carried(pb, upper_usd)
        if self.reaches(pb, carried, upper_usd):
            self.n_carried += 1
            return carried
        donors: list = []
        solved = lp_lower_bound_usd(pb, upper_usd, donors=donors)
        self._donors = (donors + self._donors)[:N_DONORS]
        return max(solved, carried)


#: Without a plan's cost, the column boxes of :func:`lp_lower_bound_usd` take the restriction's
#: LP optimum this much higher (the interior point meets it to ~1e-8). [-]
UPPER_SLACK_FRAC = 1e-3


def lp_lower_bound_usd(pb: Problem, upper_usd: float = np.inf, donors: list | None = None) -> float:
    """A lower bound of the problem's LP without a plan: one interior-point solve on steps of
    one, its duals priced by weak duality (:func:`~facility.optimize.solvers.ipm.lagrangian_bound`)
    with the band rows left out (leaving rows out only relaxes). With ``upper_usd`` the LP
    solved is the relaxation (``mode="relax"``: its long-lag block rows are implied by the
    lag bounds, so they stay and the bound sees a per-minute limit); without it the
    restriction, whose optimum is a plan's cost for the column boxes, its block rows left out
    (they restrict). A job start or stop under a per-minute limit is where this matters: the
    restriction's duals without its block rows bounded the relaxed lever boxes of a 5-min
    start/stop load at −114 to −83 USD against a plan of 34.3 USD.

    This is what a relaxed lever box needs on a long horizon
    (:func:`facility.optimize.strategies.lever_search.search_boxes`): the full LP does not finish there.
    The column boxes come from ``upper_usd``, the cost of a plan of the problem or the best
    plan of a search the box competes with. Where the box's optimum costs more than that,
    the boxes may cut its optimum off and the bound may lie above it, but then it lies above
    ``upper_usd`` too and the box is dropped rightly (the search's bound is the least of its
    boxes' and that plan's). Without ``upper_usd``, the restriction's own optimum (a plan of
    the LP, as it restricts it) with :data:`UPPER_SLACK_FRAC`.

    ``donors``: a list the solve's duals and row index are appended to, for the bounds of other
    boxes without a solve (:mod:`facility.optimize.strategies.box_bounds`).

    Raises
    ------
    SolverTimeLimit
        The solve did not end within ``optimize.time_limit_s`` or did not converge.
    InfeasibleError
        The restriction is infeasible (it is a restriction: the LP may not be).
    """
    if not interior.applies(pb):
        raise ValueError("lp_lower_bound_usd: the interior strategy does not apply to this problem")
    local = not processes_allowed() or pb.n_steps < interior.PROCESS_MIN_STEPS
    mode = "relax" if np.isfinite(upper_usd) else "restrict"
    res = run_solves([(solve_job, (pb, mode, 1, None, mode == "restrict", None, BOUND_IPM_OPTIONS))],
                     float(pb.optimize.time_limit_s), in_process=local)[0]
    if res is None or res["status"] == "failed":
        raise SolverTimeLimit(f"the {mode} LP for a lower bound did not end",
                              {"termination": "time limit" if res is None else res["termination"]})
    if res["status"] == "infeasible":
        raise InfeasibleError(f"the {mode} LP for a lower bound: {res['termination']}")
    if "bound" not in res:
        raise SolverTimeLimit(f"the {mode} LP gave no duals", {"termination": res["termination"]})
    if not np.isfinite(upper_usd):
        upper_usd = 1000.0 * (res["objective_kusd"] + UPPER_SLACK_FRAC * abs(res["objective_kusd"]))
    if donors is not None:
        donors.append(dict(res["bound"], mode=mode))
    return bound_at(res["bound"], pb, float(upper_usd))
