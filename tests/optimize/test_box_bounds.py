"""Bounds of the lever search's relaxed boxes with another box's duals carried over
(:mod:`facility.optimize.strategies.box_bounds`): valid (below each box's LP optimum), close to it, and
what lets the search drop a box without a solve."""

from __future__ import annotations

import numpy as np
import pytest

from facility.optimize.strategies import box_bounds, interior
from facility.optimize.strategies.box_bounds import BoxBounds, bound_with_duals, carry_duals
from facility.optimize.strategies.full import lp_bound_usd
from facility.optimize.strategies.lever_boxes import box_levers
from facility.optimize.model.levers import piece_lists

from tests.optimize.test_interior import DT, problem
from tests.optimize.test_interior import SPEC as SPEC_OF_TEST
from tests.optimize.test_interior_bands import load  # noqa: F401 (a fixture)
from tests.optimize.test_interior_levers import _mix


def test_duals_are_carried_by_block_time_and_rank():
    """Rows match on their block (family and its count), time index and rank among equal
    time indices; a row the giver lacks gets 0; a block the giver lacks gets 0."""
    giver = [(("soc", 0), 0, np.array([0, 1, 2, 3])),
             (("window_up", 0), 4, np.array([5, 5, 6])),
             (("only_here", 0), 7, np.array([0]))]
    y_from = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 11.0, 12.0, 99.0])
    taker = [(("window_up", 0), 0, np.array([6, 5, 5, 7])),   # reordered, one new row (t = 7)
             (("soc", 0), 4, np.array([0, 1, 2, 3])),          # the same rows: copied
             (("soc", 1), 8, np.array([0, 1]))]                # a second soc block: none given
    y = carry_duals(taker, 10, giver, y_from)
    assert y.tolist() == [12.0, 10.0, 11.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def boxes(load):
    """A relaxed cap box of the jittered load solved for its bound (the donor), and a box
    maker for the others."""
    levers, _, opt = _mix(load, 60.0, cap_range=(0.5, 1.0))
    per_job = piece_lists(levers)
    k = len(per_job[0][2]) - 1
    assert k > 8
    pb = problem(load, opt=opt, initial_soc_frac=0.5)

    def box(c0, c1):
        return pb.on_piece(*box_levers(levers, per_job, (((0, 0), (c0, c1)),), DT, opt.slowdown_usd_per_gpu_h))

    floor = interior.MIN_STEPS
    interior.MIN_STEPS = 0
    try:
        donors = []
        parent = box(k // 3, k)
        solved = box_bounds.lp_lower_bound_usd(parent, donors=donors)
    finally:
        interior.MIN_STEPS = floor
    return box, k, parent, solved, donors[0]


def test_another_boxs_duals_bound_each_box_below_its_optimum(boxes):
    """The duals of one box's restriction, carried to the rows of another box's LP, bound that
    LP below its optimum (the simplex's) and close to it (within 3 % here, 0.04 % next to the
    donor); on the donor's own LP they give the donor's bound."""
    box, k, parent, solved, donor = boxes
    assert bound_with_duals(parent, solved * 1.001, donor) == pytest.approx(solved, rel=1e-7)
    for c0, c1 in ((k // 3, k - 1), (k // 3, (k // 3 + k) // 2), ((k // 3 + k) // 2 + 1, k), (k, k)):
        sub = box(c0, c1)
        exact = lp_bound_usd(sub)
        for upper in (exact * 1.01, exact * 2.0):
            carried = bound_with_duals(sub, upper, donor)
            assert carried <= exact * (1 + 1e-9)
            assert carried >= exact * (1 - 3e-2)


def _count_solves(monkeypatch) -> list:
    """The interior strategy forced on the test's short load, and a list that records each box
    LP solved for a bound (:func:`facility.optimize.strategies.box_bounds.lp_lower_bound_usd`)."""
    monkeypatch.setattr(interior, "MIN_STEPS", 0)
    calls = []
    real = box_bounds.lp_lower_bound_usd

    def counted(pb, upper_usd=np.inf, donors=None):
        calls.append(upper_usd)
        return real(pb, upper_usd, donors=donors)

    monkeypatch.setattr(box_bounds, "lp_lower_bound_usd", counted)
    return calls


def test_a_box_whose_carried_bound_reaches_the_best_plan_is_not_solved(boxes, monkeypatch):
    """BoxBounds solves a box only when no donor's duals bound it at the best plan's cost: a
    box of low caps (much slowdown) above the plan is dropped without a solve, a box next to
    the plan's piece is solved and its duals join the donors."""
    box, k, parent, solved, _ = boxes
    calls = _count_solves(monkeypatch)
    bb = BoxBounds()
    plan_usd = lp_bound_usd(box(k, k)) * 1.01     # a plan 1 % above the best piece's LP
    assert bb(parent, plan_usd) == pytest.approx(solved, rel=1e-3) and len(calls) == 1
    low = box(k // 3, (k // 3 + k) // 2)                 # caps that slow the job: far above
    assert lp_bound_usd(low) > 2.0 * plan_usd
    assert bb(low, plan_usd) >= plan_usd and len(calls) == 1 and bb.n_carried == 1
    near = box(k - 1, k)                                  # next to the plan: solved
    got = bb(near, plan_usd)
    assert len(calls) == 2 and got <= lp_bound_usd(near) * (1 + 1e-9)
    assert len(bb._donors) == 2 and bb._donors[0]["y"].size > 0
    # without a plan's cost the columns have no finite boxes: nothing is carried, it is solved
    bb(low, np.inf)
    assert len(calls) == 3 and bb.n_carried == 1


def test_the_search_with_carried_duals_solves_fewer_boxes_for_the_same_plan(load, monkeypatch):
    """The lever search on the jittered load (interior strategy forced): with carried duals it
    solves fewer relaxed boxes than without (a box is dropped by another's duals, a box that
    holds the best plan's piece is split without a solve, a piece whose carried bound reaches
    the best plan is not solved) and returns the same plan, with a bound below the full LP's
    optimum over all pieces."""
    from facility.optimize import size_storage

    from tests.optimize.test_interior_bands import _quiet

    levers, storages, opt = _mix(load, 5.0)   # a price where the search goes past the root box
    full = _quiet(size_storage, load, DT, storages, SPEC_OF_TEST, opt, levers=levers)
    calls = _count_solves(monkeypatch)
    res = _quiet(size_storage, load, DT, storages, SPEC_OF_TEST, opt, levers=levers)
    with_carry = len(calls)
    calls.clear()
    monkeypatch.setattr(BoxBounds, "carried", lambda self, pb, upper_usd: -np.inf)
    ref = _quiet(size_storage, load, DT, storages, SPEC_OF_TEST, opt, levers=levers)
    assert with_carry < len(calls)
    assert res.info.n_lever_carried > 0 and ref.info.n_lever_carried == 0
    assert res.info.n_lever_pieces < ref.info.n_lever_pieces
    assert res.info.objective_usd == pytest.approx(ref.info.objective_usd, rel=1e-9)
    for r in (res, ref):
        assert r.info.lower_bound_usd <= full.info.relaxed_objective_usd * (1 + 1e-7)
        assert r.info.gap_frac <= opt.max_gap_frac
