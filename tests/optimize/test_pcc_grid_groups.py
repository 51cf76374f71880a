"""The bracketing LPs on groups of steps (``facility.optimize.model.pcc_grid``) where the load moves
within a group: the relaxation's rating rows and the restriction's PCC range.

At 10 ms the interior strategy works on groups of 4 steps. A measured trace's edges span up
to 18 MW within such a group, while the PCC power may move at most R (the ramp window's
bound) within it; these tests check on a measured trace replayed at 10 ms that the rows the
two LPs carry there are what they claim: the relaxation stays below the full LP's optimum,
the restriction's plan stays a plan of the full LP, and both move towards it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import linprog

from facility.optimize.model import pcc_grid
from facility.optimize.strategies.full import solve_full
from facility.optimize.model.group_rows import group_power_offsets, within_group_range_mw
from facility.optimize.strategies.interior import realize
from facility.optimize.solvers.ipm import solve_ipm
from facility.optimize.model.pcc_grid import build_grid_model
from facility.optimize.certificates.verify import verify_plan
from tests.optimize.test_interior import SPEC, lp_optimum, problem, site_load

DT = 0.01
G = 4


@pytest.fixture(scope="module")
def edgy():
    """20 s of the measured nvidia-smi trace at 10 ms (30 groups of 4 span more than 2 MW),
    its problem and the full LP's optimum [USD]."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the trace's stalled poll and its loop are reported
        load = site_load("trace", horizon_s=20.0, dt_s=DT)
    pb = problem(load, dt=DT)
    return pb, lp_optimum(solve_full(pb))


def _least_max(load: np.ndarray, r: float, sign: float) -> float:
    """min over u (Σ u = 0, max u − min u ≤ r) of max_t sign·(u_t − L_t), by an LP."""
    g = load.size
    # variables u_0..u_{g-1}, z: minimize z, sign (u_t - L_t) <= z
    c = np.r_[np.zeros(g), 1.0]
    rows, rhs = [], []
    for t in range(g):
        row = np.zeros(g + 1)
        row[t], row[g] = sign, -1.0
        rows.append(row)
        rhs.append(sign * load[t])
    for s in range(g):
        for t in range(g):
            if s != t:
                row = np.zeros(g + 1)
                row[s], row[t] = 1.0, -1.0
                rows.append(row)
                rhs.append(r)
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=np.r_[np.ones(g), 0.0][None, :],
                  b_eq=[0.0], bounds=[(None, None)] * (g + 1), method="highs")
    assert res.status == 0
    return float(res.fun)


def test_group_offsets_are_the_least_deviation_the_pcc_range_allows():
    """α_j and β_j in closed form equal the LP they solve: the least largest deviation of a
    step's storage power from the group's mean when the PCC power may move by R within it."""
    rng = np.random.default_rng(3)
    loads = np.vstack([rng.uniform(40.0, 100.0, 4), [40.0, 52.0, 70.0, 99.0], np.full(4, 60.0),
                       rng.uniform(0.0, 3.0, 5)[:4]])
    for r in (0.0, 0.5, 2.0, 25.0):
        a, b = group_power_offsets(loads, r)
        for j, x in enumerate(loads):
            assert a[j] == pytest.approx(_least_max(x, r, 1.0), abs=1e-7)
            assert b[j] == pytest.approx(_least_max(x, r, -1.0), abs=1e-7)
        # what the mean alone asks, reached where the load spans at most R
        narrow = np.ptp(loads, axis=1) <= r
        assert np.allclose(a[narrow], -loads[narrow].mean(axis=1))
        assert np.allclose(b[narrow], loads[narrow].mean(axis=1))
        assert np.all(a >= -loads.mean(axis=1) - 1e-12) and np.all(b >= loads.mean(axis=1) - 1e-12)


def test_the_pcc_range_within_a_group_is_the_tightest_window_bound():
    pb = problem(np.full(10, 50.0), dt=DT)
    assert within_group_range_mw(pb.spec, DT, 0.0, G) == 2.0  # 2 MW/s over 1 s covers 4 steps
    assert within_group_range_mw(pb.spec, DT, 0.1, G) == pytest.approx(1.8)
    from facility.config.schema import SpecConfig

    assert within_group_range_mw(SpecConfig(max_dynamic_range_mw=1.0), DT, 0.0, G) == 1.0
    assert within_group_range_mw(SpecConfig(), DT, 0.0, G) == np.inf


def _solve(pb, mode):
    gm = build_grid_model(pb, G, mode)
    sol = solve_ipm(gm.m.lp)
    assert sol.status == "ok"
    return gm, sol


def test_the_rating_rows_raise_the_relaxation_and_keep_it_below_the_optimum(edgy, monkeypatch):
    pb, opt = edgy
    with_rows = 1000 * _solve(pb, "relax")[1].objective
    monkeypatch.setattr(pcc_grid, "within_group_range_mw", lambda *a, **k: np.inf)
    without = 1000 * _solve(pb, "relax")[1].objective
    assert without < with_rows <= opt * (1 + 1e-7)
    assert with_rows - without > 0.1 * (opt - without)  # a real share of the relaxation's gap


def test_the_ranged_restriction_is_a_plan_of_the_full_lp_below_the_held_one(edgy, monkeypatch):
    pb, opt = edgy
    gm, sol = _solve(pb, "restrict")
    ranged = 1000 * sol.objective
    raw = {n: (float(sol.x[c["p_rated"][0]]), float(sol.x[c["e_rated"][0]]), sol.x[c["ch"]],
               sol.x[c["dis"]], sol.x[c["e"]]) for n, c in gm.m.cols.items()}
    plan, _, bad = realize(pb, raw)  # the interior point's overlap netted, as the strategy does
    assert plan is not None, bad
    assert verify_plan(pb.load_mw, DT, pb.storages, SPEC, plan, 0.0) is None
    monkeypatch.setattr(pcc_grid, "RANGED_EDGE_FRAC", np.inf)  # every group held
    gm_h, held_sol = _solve(pb, "restrict")
    held = 1000 * held_sol.objective
    assert "pcc_low" not in gm_h.m.lp.col_names and "pcc_low" in gm.m.lp.col_names
    assert opt * (1 - 1e-7) <= ranged < held
    assert held - ranged > 0.1 * (held - opt)


def test_the_neighbour_rating_rows_raise_the_relaxation_and_keep_it_below_the_optimum(edgy, monkeypatch):
    """The rating at a group's extreme-load step against its neighbours' mean PCC power: the
    relaxation rises towards the full LP's optimum and stays below it."""
    pb, opt = edgy
    gm, sol = _solve(pb, "relax")
    with_rows = 1000 * sol.objective
    fams = [n for n in gm.m.lp.col_names if ":rating_" in n and n.endswith(":g")]
    assert len(fams) == 8  # 2 windows x 2 directions x 2 sides (past, future), each named apart
    monkeypatch.setattr(pcc_grid, "add_neighbour_power_rows", lambda *a, **k: 0)
    without = 1000 * _solve(pb, "relax")[1].objective
    assert without < with_rows <= opt * (1 + 1e-7)
    assert with_rows - without > 0.5 * (opt - without)  # 87 % of it here


def test_the_strategy_proves_the_relaxation_with_these_rows(edgy):
    """The interior strategy's bound on groups of 4 (weak duality with column boxes) is the
    relaxation's optimum with the new rows and columns, and the bracket holds the optimum."""
    from facility.config.schema import OptimizeConfig
    from facility.optimize.strategies.interior import InteriorStats, solve_interior

    pb, opt = edgy
    pb = problem(pb.load_mw, dt=DT, opt=OptimizeConfig(annualize=False, max_gap_frac=0.05))  # no refinement
    st = InteriorStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True, stats=st)
    relax = [1000 * r["objective_kusd"] for r in st.solves if r["mode"] == "relax"]
    assert st.group == G and len(relax) == 1
    assert res.info.lower_bound_usd == pytest.approx(relax[0], rel=1e-6)
    assert res.info.lower_bound_usd <= opt * (1 + 1e-9) <= res.info.objective_usd * (1 + 1e-9)
    assert res.info.gap_frac < 5e-4


def test_a_job_start_or_stop_keeps_the_held_restriction_and_no_neighbour_rows():
    """With a job's start, stop or checkpoint in the horizon (the level moves by more than the
    per-minute bound within a minute) the group rows are left out: there the bracket's width is
    the complementarity's and the long lag's, and PIQP ran past its iteration cap with them.
    A job that runs through, jitter and all, keeps them."""
    from facility.optimize.model.pcc_grid import has_job_transients, ranged_groups

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        steady = site_load("stochastic", horizon_s=300.0, dt_s=DT)
    moving = steady.copy()
    moving[int(200.0 / DT):] = 5.0  # the job stops at 200 s
    pb_s, pb_m = problem(steady, dt=DT), problem(moving, dt=DT)
    assert not has_job_transients(pb_s) and has_job_transients(pb_m)
    assert ranged_groups(pb_m, G).size > 0  # edges it would range
    fam = "max_ramp_up_mw_per_s:up:rating_past:up"  # the rows of one neighbour family
    for pb, kept in ((pb_s, True), (pb_m, False)):
        up, lo = build_grid_model(pb, G, "restrict"), build_grid_model(pb, G, "relax")
        assert ("pcc_low" in up.m.lp.col_names) is kept
        assert any(name == fam for (name, _), _, _ in lo.m.lp.row_index()) is kept
