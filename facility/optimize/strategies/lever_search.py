"""Branch and bound over the GPU levers' piece combinations that the driver did not solve.

With many floor or cap pieces (a load whose power levels jitter has one level per iteration),
:func:`facility.optimize.driver.api.solve_levers` solves only the pieces that contain an even grid of
floor and cap values (:data:`facility.optimize.model.levers.MAX_PIECES`). The cheapest of those is a
plan; this module proves how far it can be from the cheapest piece of all.

A *box* is, per job, a run of consecutive floor pieces and a run of cap pieces. Its bound is
the optimum of the LP of :func:`facility.optimize.strategies.lever_boxes.box_levers`, a relaxation of every
piece in the box (a box of one combination is that piece's own LP, whose plan is a candidate).
Best first: the box of least bound is split in two along its longest run (in the middle, or
next to the best plan's piece when that ends the run: :func:`_split`), each half bounded
(at least its parent's bound), until the least bound left is within ``optimize.max_gap_frac``
of the best plan, or ``optimize.time_limit_s`` is spent. A box whose bound is at or above the
best plan cannot hold a cheaper one and is dropped; an infeasible relaxation drops its box.

The reported lower bound is the least over the open boxes, the solved pieces' own lower
bounds and the best plan (a dropped box's bound is above the latter): every piece lies in one
of them, so the optimum over all pieces is not below it.

*Bounds without a solve* (``carried``, :mod:`facility.optimize.strategies.box_bounds`): on long horizons
a box or piece is first bounded with the duals of the boxes solved before (a Lagrangian bound
of its own LP, valid for any duals). A box whose carried bound reaches the best plan is
dropped, a piece whose carried bound does is closed, both without a solve; a box that holds the
best plan's piece is split without one (no bound of it can reach that plan, and its solve would
repeat what the carried duals say), so a solve goes only to boxes that may be dropped.
"""

from __future__ import annotations

import heapq
import itertools
import time

import numpy as np

from facility.errors import InfeasibleError, SolverTimeLimit
from facility.optimize.strategies.lever_boxes import box_levers
from facility.optimize.model.levers import piece_lists
from facility.optimize.model.result import gap_frac
from facility.optimize.solvers.solve import is_time_limit

__all__ = ["search_boxes", "leaf_key"]


def leaf_key(ls) -> tuple:
    """The pieces of a solved :class:`~facility.optimize.model.levers.LeverSet` (per job its floor
    and cap piece), to match it to the leaves of the search."""
    return tuple((jl.floor, jl.cap) for jl in ls.jobs)


def search_boxes(pb, levers, solved: dict, best, solve_piece, bound_relaxed, *, t_start: float,
                 carried=None):
    """Bound the piece combinations, best first (module text).

    Parameters
    ----------
    pb : Problem
        The problem (its load without the levers' constants).
    levers : LeverInputs
    solved : dict
        ``leaf_key`` → SizingResult of the pieces solved already.
    best : SizingResult or None
        The cheapest plan so far.
    solve_piece : callable
        ``f(problem) -> SizingResult`` for one exact piece (any strategy).
    bound_relaxed : callable
        ``f(problem, upper_usd) -> float``: a lower bound [USD] of a relaxed box's LP (its
        optimum); ``upper_usd`` is the best plan's cost so far (inf before one), below which
        the box must prove nothing else (a bound that may exceed the box's optimum only
        where that optimum is above ``upper_usd`` still drops the box rightly).
    t_start : float
        ``time.perf_counter()`` when the driver started (the time limit counts from it).
    carried : BoxBounds, optional
        Bounds without a solve (:class:`facility.optimize.strategies.box_bounds.BoxBounds`): a piece
        whose bound with the duals of a box solved before reaches the best plan (at or above
        it, or within ``optimize.max_gap_frac``) is closed with that bound and not solved; a
        box that holds the best plan's piece takes its carried bound and is split unsolved.
        ``carried.n_carried`` counts both (and the boxes ``bound_relaxed`` bounds that way).

    Returns
    -------
    (best, lower_bound_usd, n_lps, complete) : the cheapest plan, the bound over all pieces,
        the LPs this search solved, and whether it closed the gap.
    """
    opt = pb.optimize
    target, limit = float(opt.max_gap_frac), float(opt.time_limit_s)
    per_job = piece_lists(levers)
    sizes = [(len(pf), len(pc)) for _, pf, pc in per_job]
    root = tuple(((0, nf - 1), (0, nc - 1)) for nf, nc in sizes)
    heap, tie, n_lps = [], itertools.count(), 0

    def best_usd():
        return np.inf if best is None else best.info.objective_usd

    def low_of(res):
        lo = res.info.lower_bound_usd
        return lo if np.isfinite(lo) else res.info.objective_usd

    def push(bound, box, final):
        if bound < best_usd():
            heapq.heappush(heap, (bound, next(tie), box, final))

    def bound_box(box, parent: float):
        """(bound, final) of a box: a leaf's own LP, else its relaxation (≥ the parent's)."""
        nonlocal best, n_lps
        leaf = all(f0 == f1 and c0 == c1 for (f0, f1), (c0, c1) in box)
        got = box_levers(levers, per_job, box, pb.dt_s, opt.slowdown_usd_per_gpu_h)
        if got is None:
            return np.inf, leaf  # the floor lies above the cap on all of it
        ls, d = got
        key = leaf_key(ls)
        if leaf and key in solved:
            return low_of(solved[key]), True
        sub = pb.on_piece(ls, d)
        if carried is not None and best is not None:
            if leaf:
                low = carried.carried(sub, best_usd())
                if carried.reaches(sub, low, best_usd()):
                    carried.n_carried += 1
                    return max(parent, low), True
            elif _incumbent_in(per_job, solved, best, box) is not None:
                # it holds the best plan's piece, so no bound of it reaches that plan: it is
                # split without a solve (a solve here would only repeat the carried bound)
                low = carried.carried(sub, best_usd())
                if np.isfinite(low):
                    carried.n_carried += 1
                    return max(parent, low), False
        n_before = carried.n_carried if carried is not None else 0
        try:
            res = solve_piece(sub) if leaf else bound_relaxed(sub, best_usd())
        except InfeasibleError as exc:
            if isinstance(exc, SolverTimeLimit) or is_time_limit(
                    str((exc.diagnosis or {}).get("termination", ""))):
                return parent, leaf  # not proven: the parent's bound stays (a leaf: for good)
            return np.inf, leaf  # infeasible (relaxation): no piece of the box is feasible
        finally:
            # an LP solved, unless the bound came from carried duals alone
            n_lps += 1 if carried is None or carried.n_carried == n_before else 0
        if leaf:
            solved[key] = res
            if best is None or res.info.objective_usd < best.info.objective_usd:
                best = res
            return max(parent, low_of(res)), True
        return max(parent, res if np.isfinite(res) else parent), False

    b, fin = bound_box(root, -np.inf)
    push(b, root, fin)
    complete = False
    while heap:
        bound, _, box, final = heap[0]
        if gap_frac(best_usd(), bound) <= target or final:
            complete = gap_frac(best_usd(), bound) <= target
            break
        if time.perf_counter() - t_start > limit:
            break
        heapq.heappop(heap)
        j, side, (a, z) = max(((j, side, rng) for j, rngs in enumerate(box) for side, rng in enumerate(rngs)),
                              key=lambda r: r[2][1] - r[2][0])
        for half in _split(a, z, _incumbent_at(per_job, solved, best, box, j, side)):
            child = list(box)
            rngs = list(child[j])
            rngs[side] = half
            child[j] = tuple(rngs)
            cb, cfin = bound_box(tuple(child), bound)
            push(cb, tuple(child), cfin)
    lows = [h[0] for h in heap] + [best_usd()]
    lows += [low_of(r) for r in solved.values()]
    low = float(min(lows))
    # every box dropped or closed (the heap empty) proves as much as the target
    complete = complete or (best is not None and gap_frac(best_usd(), low) <= target)
    return best, low, n_lps, complete


#: A box whose run ends at the best plan's piece is cut ``1 / ZOOM`` of the way from that end
#: (:func:`_split`). [-]
ZOOM = 16


def _split(a: int, z: int, inc: int | None) -> tuple:
    """The two halves of the run [a, z] of a box. Halved in the middle, unless the best plan's
    piece ``inc`` is one of its ends: then the ``1 / ZOOM`` of the run next to it is cut off.
    The box that holds the best plan cannot bound above it, so the search has to narrow it
    down to that piece; the near part relaxes little (its pieces differ little from the best
    one) and the far part leaves out the pieces most like the best, so both bounds tend to
    reach the best plan's cost in fewer splits than halving (a jittered load has thousands of
    cap pieces, and the cheapest plan is often at an end of the range: no cap)."""
    if inc is not None and z - a >= 2:
        w = max(1, (z - a + 1) // ZOOM)
        if inc == z:
            return (a, z - w), (z - w + 1, z)
        if inc == a:
            return (a, a + w - 1), (a + w, z)
    mid = (a + z) // 2
    return (a, mid), (mid + 1, z)


def _incumbent_in(per_job: list, solved: dict, best, box: tuple) -> list | None:
    """Per job the indices [floor, cap] of the best plan's piece in ``box``, or None when it is
    not a solved leaf or lies outside the box."""
    key = next((k for k, r in solved.items() if r is best), None)
    if key is None or len(key) != len(per_job):
        return None
    at = []
    for (_, pf, pc), (fl, cp), rngs in zip(per_job, key, box):
        idx = []
        for pieces, v, (a, z) in ((pf, fl, rngs[0]), (pc, cp, rngs[1])):
            hit = [i for i in range(a, z + 1) if pieces[i] == v]
            if not hit:
                return None
            idx.append(hit[0])
        at.append(idx)
    return at


def _incumbent_at(per_job: list, solved: dict, best, box: tuple, j: int, side: int) -> int | None:
    """The index of the best plan's piece on run (j, side) of ``box`` (0 floor, 1 cap), or None
    when it is not a solved leaf or lies outside the box."""
    at = _incumbent_in(per_job, solved, best, box)
    return None if at is None else at[j][side]

