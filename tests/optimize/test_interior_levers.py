"""GPU levers in the interior strategy: floor, cap and burn beside the storage on long
horizons whose load does not repeat (the simplex grows as T² there), and the lower bounds
of the lever search's relaxed boxes from one interior-point restriction."""

from __future__ import annotations

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig
from facility.optimize import size_storage
from facility.optimize.certificates import bracket_jobs
from facility.optimize.model import lever_columns, pcc_grid
from facility.optimize.strategies import box_bounds, interior
from facility.optimize.strategies.full import lp_bound_usd
from facility.optimize.strategies.lever_boxes import box_levers
from facility.optimize.model.levers import lever_pieces, piece_lists, single_job_inputs

from tests.optimize.test_interior import DT, SPEC, problem, site_load
from tests.optimize.test_interior_bands import _quiet, load  # noqa: F401 (a fixture)

#: 100,000 GPUs of 1 kW at site factor 1: the GPU power per GPU is the site load / N
N, TDP = 100_000, 1000.0


def _mix(load, price_usd_per_mwh: float, **ranges):
    """The load as one job of N GPUs of TDP (site factor 1) with burn and the ``ranges``
    (default: floor 0.2-0.9, cap 0.5-1)."""
    ranges = ranges or {"floor_range": (0.2, 0.9), "cap_range": (0.5, 1.0)}
    levers = single_job_inputs(load * 1e6 / N, N, TDP, burn=True, **ranges)
    bess = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                      min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.5,
                      cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    return levers, {"bess": bess}, OptimizeConfig(annualize=True, levers=["storage", "floor", "burn", "cap"],
                                                  energy_price_usd_per_mwh=price_usd_per_mwh)


@pytest.mark.parametrize("price", [60.0, 0.5])
def test_gpu_levers_in_the_bracket(load, monkeypatch, price):
    """Floor, cap and burn as decisions beside the storage, on the jittered load: the interior
    strategy (forced on this short horizon: pieces and relaxed boxes) brackets the full LP's
    optimum over the same pieces, and its plan — storage and levers — meets every limit on
    the fine grid. At 60 USD/MWh storage carries the swings; at 0.5 USD/MWh the burn and
    floor do."""
    levers, storages, opt = _mix(load, price)
    full = _quiet(size_storage, load, DT, storages, SPEC, opt, levers=levers)
    monkeypatch.setattr(interior, "MIN_STEPS", 0)
    res = _quiet(size_storage, load, DT, storages, SPEC, opt, levers=levers)
    i = res.info
    assert full.info.method == "full" and i.method == "interior"
    assert i.lower_bound_usd <= full.info.relaxed_objective_usd * (1 + 1e-7)
    assert i.objective_usd >= full.info.lower_bound_usd * (1 - 1e-7)
    assert i.gap_frac <= 1e-3
    assert i.objective_usd == pytest.approx(full.info.objective_usd, rel=2e-3)
    assert metrics.max_window_swing_mw(res.p_pcc_mw, DT, SPEC.window_s) <= SPEC.max_window_swing_mw + 1e-5
    lv = res.levers["job"]
    burned = float(np.sum(lv["burn_mw"] + lv["floor_burn_mw"]))
    if price == 0.5:
        assert res.p_rated_mw_opt["bess"] < 0.5 * full.p_rated_mw_opt["bess"] + 5.0 and burned > 0


def _floor_piece(load):
    """The problem on the one piece of a floor fixed at 0.2 of TDP, with burn."""
    levers, storages, opt = _mix(load, 60.0, floor_range=(0.2, 0.2))
    pieces, _ = lever_pieces(levers, DT, opt.slowdown_usd_per_gpu_h)
    assert len(pieces) == 1
    return problem(load, opt=opt, initial_soc_frac=0.5).on_piece(*pieces[0])


def test_a_burn_without_headroom_is_fixed_at_zero_not_squeezed_by_its_row(load):
    """Where the GPUs run at TDP the headroom row leaves the burn no room at any floor or cap:
    its column is fixed at 0 (a bound the interior point substitutes out) instead of being
    held there by its row and its own lower bound, a feasible set without interior on which
    PIQP stalled (150 iterations on a 6,000-step piece; 43 with the bound). Elsewhere the
    bound is the row's room at the loosest floor and cap. The LP is the same either way."""
    pb = _floor_piece(load)
    jl = pb.levers.jobs[0]
    room = lever_columns._burn_room_mw(jl)
    full_power = load * 1e6 / N >= TDP * (1 - 1e-12)
    assert full_power.any() and np.all(room[full_power] <= 1e-9)
    gm = pcc_grid.build_grid_model(pb, 1, "restrict")
    ub = np.concatenate(gm.m.lp.col_ub)[gm.m.lever_cols["job"]["burn"]]
    assert np.all(ub[full_power] == 0.0) and np.all(ub[~full_power] > 0.0)
    assert np.allclose(ub[~full_power], room[~full_power])
    res = bracket_jobs.solve_job(pb, "restrict", 1, None, True)
    assert res["status"] == "ok" and res["iterations"] < 100
    assert 1000.0 * res["objective_kusd"] == pytest.approx(lp_bound_usd(pb), rel=1e-6)


def test_a_relaxed_box_is_bounded_by_one_interior_restriction(load, monkeypatch):
    """The lever search's relaxed box on a long horizon: the Lagrangian bound of one interior
    restriction lies below the box LP's optimum (the simplex's, on this short load) and close
    to it; an upper cost far above the optimum only loosens it."""
    levers, storages, opt = _mix(load, 60.0, cap_range=(0.5, 1.0))
    per_job = piece_lists(levers)
    k = len(per_job[0][2]) - 1
    assert k > 4
    pb = problem(load, opt=opt, initial_soc_frac=0.5)
    sub = pb.on_piece(*box_levers(levers, per_job, (((0, 0), (k // 3, k)),), DT, opt.slowdown_usd_per_gpu_h))
    monkeypatch.setattr(interior, "MIN_STEPS", 0)
    exact = lp_bound_usd(sub)
    tight = box_bounds.lp_lower_bound_usd(sub)
    loose = box_bounds.lp_lower_bound_usd(sub, upper_usd=100.0 * exact)
    assert tight <= exact * (1 + 1e-9) and tight >= exact * (1 - 1e-3)
    assert loose <= tight * (1 + 1e-9)


def test_a_relaxed_box_bound_sees_the_per_minute_limit_across_a_start_and_stop(monkeypatch):
    """With a plan's cost the box bound solves the relaxation, whose long-lag block rows are
    implied by the per-minute limit and stay: across a job start, checkpoint and stop it lies
    just below the box LP's optimum. The restriction's duals without its block rows (the
    bound without a plan's cost) miss that limit and fall far below (here below 0)."""
    ss = site_load("start_stop")
    levers, _, opt = _mix(ss, 60.0)
    per_job = piece_lists(levers)
    k = len(per_job[0][2]) - 1
    pb = problem(ss, opt=opt, initial_soc_frac=0.9)
    box = pb.on_piece(*box_levers(levers, per_job, (((0, 0), (0, k)),), DT, opt.slowdown_usd_per_gpu_h))
    monkeypatch.setattr(interior, "MIN_STEPS", 0)
    exact = lp_bound_usd(box)
    relaxed = box_bounds.lp_lower_bound_usd(box, exact * 1.05)
    assert exact * (1 - 1e-2) <= relaxed <= exact * (1 + 1e-9)
    assert box_bounds.lp_lower_bound_usd(box) < 0.5 * exact


@pytest.mark.parametrize("refine", [True, False])
def test_long_lag_blocks_are_refined_where_they_keep_the_bracket_open(monkeypatch, refine):
    """A floor piece with burn across a start, checkpoint and stop at 0.1 s (3,000 steps): the
    burn makes the plan realizable at its LP cost, so what keeps the bracket open is the
    per-minute limit's blocks (one block of lag between restriction and relaxation). The
    strategy halves them at transients (60 -> 120 per window) and proves the plan within the
    target; without that step the gap stays above it, reason "long_lag"."""
    ss = site_load("start_stop", horizon_s=300.0, dt_s=0.1)
    levers, _, opt = _mix(ss, 60.0, floor_range=(0.2, 0.2))
    pieces, _ = lever_pieces(levers, 0.1, opt.slowdown_usd_per_gpu_h)
    sub = problem(ss, opt=opt, initial_soc_frac=0.9, dt=0.1).on_piece(*pieces[0])
    if not refine:
        monkeypatch.setattr(interior, "BLOCK_REFINE_COST", 1e9)
    st = interior.InteriorStats()
    res = interior.solve_interior(sub, min_steps=0, in_process=True, stats=st)
    if refine:
        assert st.fine_blocks == 2 * interior.FINE_BLOCKS_PER_WINDOW
        assert res.info.gap_frac <= opt.max_gap_frac and res.info.gap_reason == ""
    else:
        assert st.fine_blocks == interior.FINE_BLOCKS_PER_WINDOW
        assert res.info.gap_frac > opt.max_gap_frac and res.info.gap_reason == "long_lag"



def test_band_rounds_see_the_pcc_with_the_levers_site_power(load):
    """The restriction's band rounds test the PCC power with the levers' site power in it
    (burn, floor, cap), as the plan's check does. They tested load + storage alone: a plan
    whose burn put a bin above its limit got no rows for it, its check failed, and the full LP
    took over (5 min of the mix bench with levers and a band limit: 291 s; now 9.9 s, gap
    3.1e-4; 10 min: 634 s without a bound, now 21 s, gap 1.6e-4)."""
    from facility.optimize.strategies.interior import InteriorStats, _Search
    from tests.optimize.test_interior_bands import F_HI, F_LO, _band_spec

    from dataclasses import replace

    spec, a = _band_spec(0.3, load)
    pb = replace(_floor_piece(load), spec=spec)
    search = _Search(pb, InteriorStats(), True)
    # a storage plan that cancels the load's swings exactly, and a burn that puts a sinusoid
    # of 2a back on a bin of the band that the load alone does not seed (0.56 Hz)
    net = float(np.mean(load)) - load
    plan = {"bess": (100.0, 1.0, np.maximum(net, 0.0), np.maximum(-net, 0.0), np.zeros(load.size + 1))}
    k = 101
    burn = (2.0 * a / pb.levers.site_per_gpu) * (1.0 + np.sin(2 * np.pi * k * np.arange(load.size) / load.size))
    lever_plan = {"job": {"floor": 0.2, "cap": None, "burn": burn}}
    pcc = load + net + lever_columns.lever_site_mw(pb.levers, lever_plan, DT)
    assert metrics.band_peak_mw(load + net, DT, F_LO, F_HI) <= 1e-6
    assert metrics.band_peak_mw(pcc, DT, F_LO, F_HI) > a and k not in search.bands.cutter.cuts
    assert search.more_band_rows({"plan": plan, "lever_plan": lever_plan})
    assert k in search.bands.cutter.cuts
