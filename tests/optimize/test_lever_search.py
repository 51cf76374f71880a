"""Branch and bound over the GPU levers' pieces (facility.optimize.strategies.lever_search): a load whose
compute level jitters per iteration has one cap piece per level, more than the driver solves;
the pieces left out are bounded by relaxed boxes (lever_boxes.box_levers) and searched."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.driver import api
from facility.optimize.model import levers
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.strategies.full import lp_bound_usd
from facility.optimize.strategies.lever_boxes import box_levers
from facility.optimize.model.levers import piece_lists, single_job_inputs
from facility.optimize.model.problem import Problem

TDP, N, DT = 1000.0, 100_000, 0.5
# swing over 10 s <= 66 MW above a 30 MW communication phase: compute at most 0.96 TDP
SPEC = SpecConfig(window_s=10.0, max_window_swing_mw=66.0)


def jittered_w(n_iter=25, seed=3):
    """Iterations of 8 steps, 4 of compute at a level of its own in [0.95, 1.0] TDP."""
    rng = np.random.default_rng(seed)
    levels = 0.95 + 0.05 * rng.permutation(np.linspace(0.0, 1.0, n_iter))
    return np.concatenate([np.r_[np.full(4, lv), np.full(4, 0.3)] for lv in levels]) * TDP


def storage():  # dear power: the cap is the cheaper lever
    return {"bess": BessConfig(enabled=True, extendable=True, max_p_rated_mw=500.0,
                               max_e_rated_mwh=100.0, min_soc_frac=0.0, max_soc_frac=1.0,
                               initial_soc_frac=0.5, cost_usd_per_kw=1e5, cost_usd_per_kwh=300.0)}


def opt(**kw):
    return OptimizeConfig(annualize=True, energy_price_usd_per_mwh=60.0,
                          slowdown_usd_per_gpu_h=0.01, **kw)


def size(p_w, o=None):
    inp = single_job_inputs(p_w, N, TDP, cap_range=(0.5, 1.0))
    return size_storage(N * p_w / 1e6, DT, storage(), SPEC, o or opt(), levers=inp)


def test_the_pieces_left_out_are_searched_and_bounded(monkeypatch):
    p = jittered_w()
    inp = single_job_inputs(p, N, TDP, cap_range=(0.5, 1.0))
    (_, _, pc), = piece_lists(inp)
    assert len(pc) > levers.MAX_PIECES                       # the driver thins: 26 pieces
    got = size(p)
    monkeypatch.setattr(levers, "MAX_PIECES", 1000)
    every = size(p)                                           # every piece solved
    # the cap that meets the limit, 0.96 TDP, lies in a piece off the thinned grid: the
    # grid alone would have capped at the first piece's top, 0.95 (more slowdown), and
    # reported it as proven
    assert every.levers["job"]["cap_frac"] == pytest.approx(0.96, abs=1e-9)
    assert got.levers["job"]["cap_frac"] == pytest.approx(0.96, abs=1e-9)
    assert got.info.objective_usd == pytest.approx(every.info.objective_usd, rel=1e-9)
    assert got.info.lower_bound_usd <= every.info.objective_usd * (1 + 1e-9)
    assert got.info.gap_frac <= 1e-3
    assert got.info.n_lever_pieces < len(pc)                  # fewer LPs than pieces
    assert metrics.max_window_swing_mw(got.p_pcc_mw, DT, 10.0) <= 66.0 + 1e-6


def test_without_the_search_the_bound_would_be_false(monkeypatch):
    """What the thinned pieces alone find: a dearer plan, 'proven' by its own bound."""
    p = jittered_w()
    monkeypatch.setattr(api, "search_boxes", lambda pb, lv, solved, best, *a, **k:
                        (best, min(r.info.lower_bound_usd for r in solved.values()), 0, True))
    thinned = size(p)
    monkeypatch.undo()
    assert thinned.levers["job"]["cap_frac"] == pytest.approx(0.95, abs=1e-9)
    assert thinned.info.lower_bound_usd > size(p).info.objective_usd * (1 + 1e-4)


def _problem(p_w, o):
    load = N * p_w / 1e6
    h = load.size * DT / 3600.0
    data = {n: resolve_storage(n, c, o, h) for n, c in storage().items()}
    return Problem(load, DT, data, SPEC, o, None)


def _boxes():
    """The test load's pieces and a function from a box to its problem (relaxed or a piece)."""

    p, o = jittered_w(), opt()
    inp = single_job_inputs(p, N, TDP, cap_range=(0.5, 1.0))
    per_job = piece_lists(inp)
    pb = _problem(p, o)

    def problem_of(box):
        return pb.on_piece(*box_levers(inp, per_job, box, DT, o.slowdown_usd_per_gpu_h))

    return per_job, problem_of


def _relaxed(ls) -> bool:
    """Whether a lever set spans several pieces (room columns of a relaxed box)."""
    return any(j.floor_room_mw is not None or j.clip_room_mw is not None for j in ls.jobs)


def test_a_relaxed_box_bounds_every_piece_in_it_and_a_box_of_one_is_the_piece():
    per_job, problem_of = _boxes()

    def lp_of(box):
        sub = problem_of(box)
        return lp_bound_usd(sub), sub.levers

    box = (((0, 0), (3, 12)),)
    relaxed, ls = lp_of(box)
    assert _relaxed(ls) and "(relaxed)" in ls.piece
    pieces = [lp_of((((0, 0), (i, i)),)) for i in range(3, 13)]
    assert all(not _relaxed(q) for _, q in pieces)
    assert relaxed <= min(v for v, _ in pieces) * (1 + 1e-9)
    # a narrower box relaxes less: its bound is at least the wider box's (the search's
    # monotone bounds), and a box of every piece bounds them all
    wider, _ = lp_of((((0, 0), (0, len(per_job[0][2]) - 1)),))
    narrower, _ = lp_of((((0, 0), (6, 9)),))
    assert wider <= relaxed * (1 + 1e-9) and relaxed <= narrower * (1 + 1e-9)
    assert wider <= min(v for v, _ in pieces) * (1 + 1e-9)


def test_warm_box_bounds_equal_the_cold_ones():
    """LpBounds re-solves boxes of one matrix warm from the last basis: same optima."""
    from facility.optimize.strategies.full import LpBounds

    per_job, problem_of = _boxes()
    warm = LpBounds()
    k = len(per_job[0][2]) - 1
    for box in ((((0, 0), (0, k)),), (((0, 0), (k // 2, k)),), (((0, 0), (k // 2, 3 * k // 4)),),
                (((0, 0), (2, 5)),)):
        sub = problem_of(box)
        assert warm(sub) == pytest.approx(lp_bound_usd(sub), rel=1e-9, abs=1e-9)
    assert warm._last is not None and warm._last.matrix is not None


def test_no_cap_is_a_choice_when_the_load_exceeds_tdp():
    """Level noise lifts the compute phase above TDP (1.01 here); a cap range ending at TDP
    would always clip it and charge its slowdown. With no cap as the last choice, dear
    slowdown and cheap storage give no cap and no slowdown."""
    p = np.where(np.arange(400) % 8 < 4, 1.01 * TDP, 0.3 * TDP)
    inp = single_job_inputs(p, N, TDP, cap_range=(0.5, 1.0))
    (_, _, pc), = piece_lists(inp)
    assert pc[-1] is None and pc[-2][1] == 1.0
    cheap = {"bess": storage()["bess"].model_copy(update={"cost_usd_per_kw": 150.0})}
    o = OptimizeConfig(annualize=True, energy_price_usd_per_mwh=60.0, slowdown_usd_per_gpu_h=10.0)
    r = size_storage(N * p / 1e6, DT, cheap, SPEC, o, levers=inp)
    assert r.levers["job"]["cap_frac"] is None
    assert r.levers["job"]["extra_s"] == 0.0
    assert metrics.max_window_swing_mw(r.p_pcc_mw, DT, 10.0) <= 66.0 + 1e-6


def test_a_piece_at_the_time_limit_leaves_the_levers_idle_with_an_honest_gap(monkeypatch):
    """A piece that stops at the time limit (a jittered hour on the full LP): the storage plan
    with the levers idle (floor at its least, no cap, no burn) comes back, verified, its cost
    with the floor's burn, and a bound over every piece: not a failure with nothing."""
    from facility.errors import InfeasibleError

    p = jittered_w()
    inp = single_job_inputs(p, N, TDP, floor_range=(0.35, 0.9), cap_range=(0.5, 1.0), burn=True)
    o = opt()
    every = size_storage(N * p / 1e6, DT, storage(), SPEC, o, levers=inp)
    real = api.solve

    def stops_with_levers(pb):
        if pb.levers is not None:
            raise InfeasibleError("the solver stopped", {"termination": "Time limit reached"})
        return real(pb)

    monkeypatch.setattr(api, "solve", stops_with_levers)
    with pytest.warns(UserWarning, match="levers idle"):
        got = size_storage(N * p / 1e6, DT, storage(), SPEC, o, levers=inp)
    lv = got.levers["job"]
    assert lv["cap_frac"] is None and lv["floor_frac"] == 0.35 and not np.any(lv["burn_mw"])
    assert got.info.status == "gap" and got.info.gap_reason == "time"
    assert got.info.lower_bound_usd <= every.info.objective_usd <= got.info.objective_usd * (1 + 1e-9)
    # the floor at 0.35 lifts the 0.3 phase: its burn is in the site power and in the cost
    floor_mwh = N * 0.05 * TDP / 1e6 * np.sum(p < 0.35 * TDP) * DT / 3600
    assert np.sum(lv["floor_burn_mw"]) * DT / 3600 == pytest.approx(floor_mwh, rel=1e-9)
    assert metrics.max_window_swing_mw(got.p_pcc_mw, DT, 10.0) <= 66.0 + 1e-6


def test_a_run_that_ends_at_the_best_piece_is_cut_next_to_it():
    """The run of 45 cap pieces whose last one is the best plan's (no cap) loses its top
    1/16 (2 pieces) to a box of its own; an incumbent inside the run, or none, halves it."""
    from facility.optimize.strategies.lever_search import _split

    assert _split(0, 44, 44) == ((0, 42), (43, 44))
    assert _split(0, 44, 0) == ((0, 1), (2, 44))
    assert _split(0, 44, 20) == _split(0, 44, None) == ((0, 22), (23, 44))
    assert _split(3, 4, 4) == ((3, 3), (4, 4))
    assert _split(0, 2, 2) == ((0, 1), (2, 2))
