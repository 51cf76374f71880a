"""Self-discharge in the fast strategy (issue 49): ``interior`` takes storages with σ > 0.

The restriction keeps the exact recursion e[t+1] = (1 − σΔt) e[t] + Δt (η_c p_ch − p_dis/η_d); the
relaxation on groups of steps carries each group's loss as a bounded column
(:func:`facility.optimize.model.formulation.add_leak_rows`); the realized plan's energy growth
follows the decay. Against the full LP (HiGHS' simplex, the exact recursion) on 20 s at 20 ms:
the bracket holds its optimum and the plan obeys the recursion with σ, not without it.
"""

import warnings
from dataclasses import replace

import numpy as np
import pytest

from facility.config.schema import OptimizeConfig, SpecConfig
from facility.optimize.certificates.realize import decay, stored_energy
from facility.optimize.certificates.verify import verify_plan
from facility.optimize.model.pcc_grid import build_grid_model, group_for
from facility.optimize.model.problem import Problem
from facility.optimize.solvers.lp import solve_highs
from facility.optimize.strategies.full import solve_full
from facility.optimize.strategies.interior import InteriorStats, applies, solve_interior
from tests.optimize.test_interior import lp_optimum, problem, site_load

DT = 0.02
#: σ [1/h]: the schema's largest, 200 times a supercapacitor's 0.005, so that over 20 s a plan
#: that ignores it breaks its recursion by far more than the check's tolerance
SIGMA = 1.0
SPEC = SpecConfig(window_s=5.0, max_window_swing_mw=5.0)


def _leaky(pb: Problem, sigma: float) -> Problem:
    return replace(pb, storages={n: replace(s, sigma_per_h=sigma) for n, s in pb.storages.items()})


@pytest.fixture(scope="module")
def cases():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load = site_load("stochastic", horizon_s=20.0, dt_s=DT)
    opt = OptimizeConfig(annualize=False, max_gap_frac=0.01)
    pb0 = problem(load, spec=SPEC, opt=opt, dt=DT, initial_soc_frac=0.5)
    pb = _leaky(pb0, SIGMA)
    st = InteriorStats()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve_interior(pb, min_steps=0, in_process=True, stats=st)
        full = solve_full(pb)
        full0 = solve_full(pb0)
    return pb0, pb, res, st, full, full0


def test_the_strategy_applies_with_self_discharge(cases):
    _, pb, res, st, _, _ = cases
    assert applies(pb) and group_for(pb) == 2
    assert res is not None and res.info.method == "interior" and st.group >= 2


def test_the_full_lp_optimum_lies_inside_the_bracket(cases):
    pb0, pb, res, st, full, full0 = cases
    opt, opt0 = lp_optimum(full), lp_optimum(full0)
    # self-discharge costs something here: the σ = 0 LP is cheaper
    assert opt > opt0 * (1 + 1e-4)
    i = res.info
    assert i.lower_bound_usd <= opt * (1 + 1e-9) <= i.objective_usd * (1 + 1e-9)
    assert i.gap_frac <= 0.01


def test_the_plan_obeys_the_recursion_with_sigma_not_without(cases):
    pb0, pb, res, _, _, _ = cases
    n = "bess"
    E, P = res.e_rated_mwh_opt[n], res.p_rated_mw_opt[n]
    ch, dis = res.p_charge_mw[n], res.p_discharge_mw[n]
    e = res.soc_frac[n] * E
    plan = {n: (P, E, ch, dis, e)}
    assert verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.margin_frac) is None
    bad = verify_plan(pb0.load_mw, pb0.dt_s, pb0.storages, pb0.spec, plan, pb0.margin_frac)
    assert bad is not None and "recursion" in bad
    s = pb.storages[n]
    np.testing.assert_allclose(e, stored_energy(s, e[0], ch, dis, DT / 3600.0), atol=1e-9 * max(E, 1))


def test_the_leak_relaxation_bounds_the_full_lp(cases):
    """The relaxation on groups of 2 with the leak columns: its optimum is at most the full
    LP's."""
    _, pb, _, _, full, _ = cases
    gm = build_grid_model(pb, 2, "relax")
    assert any(k.endswith(":leak") for k in gm.m.lp.col_names)
    sol = solve_highs(gm.m.lp)
    assert sol.status == "ok"
    assert 1000.0 * sol.objective <= lp_optimum(full) * (1 + 1e-9)


def test_decay_and_recursion_closed_form():
    """e after n idle steps is a^n e_0; one step of charge adds Δt η_c p."""
    s = problem(np.full(10, 50.0), spec=SPEC, dt=DT).storages["bess"]
    s = replace(s, sigma_per_h=18.0)   # a = 1 − 18 × 0.02 / 3600 = 0.9999
    h = DT / 3600.0
    a = decay(s, 3, h)
    np.testing.assert_allclose(a, 0.9999 ** np.arange(4))
    e = stored_energy(s, 2.0, np.array([0.0, 1.0, 0.0]), np.zeros(3), h)
    np.testing.assert_allclose(e, [2.0, 2.0 * 0.9999, 2.0 * 0.9999 ** 2 + h * s.eta_c,
                                   (2.0 * 0.9999 ** 2 + h * s.eta_c) * 0.9999])
