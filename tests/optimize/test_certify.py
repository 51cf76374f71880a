"""Branch and bound where the LP still burns (``optimize.milp_bound_s``,
:mod:`facility.optimize.certificates.certify`): a job start 120 s into the horizon under a per-minute limit,
the storage at 90 % SoC. The LP's optimum charges and discharges at once ahead of the start
(to dump energy and make room for the pre-ramp), which neither the LP bound nor the forced
directions see; the MILP on those steps raises the bound and may find a cheaper plan."""

import warnings

import numpy as np
import pytest

from facility.scenario import scenario_from_dict
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage
from facility.optimize.driver.api import gap_reason_text
from facility.optimize.certificates.certify import milp_lower_bound_usd
from facility.optimize.model.formulation import plan_cost_kusd
from facility.optimize.certificates.verify import verify_plan
from facility.run.orchestrator import generate_trace

DT = 0.5
BESS = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                  min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                  cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
SPEC = SpecConfig(max_ramp_mw_per_min=10.0, window_s=5.0, max_window_swing_mw=10.0)


@pytest.fixture(scope="module")
def load():
    """Site power [MW] of a 30,000-GPU square-wave job that starts at 120 s (400 s at 0.5 s)."""
    sc = scenario_from_dict({
        "schema_version": 1, "name": "pre_ramp", "seed": 5, "time": {"horizon_s": 400.0, "dt_s": DT},
        "jobs": [{"name": "pretrain", "n_gpus": 30000, "gpu": "b200", "workload": "square",
                  "period_s": 4.0, "compute_frac": 0.8, "p_low_frac": 0.4, "start_s": 120.0,
                  "ramp_s": 0.0}],
        "site": {"non_gpu_frac": 0.25, "pue": 1.1}})
    return generate_trace(sc)["p_site_mw"].to_numpy()


def _size(load, milp_bound_s):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return size_storage(load, DT, {"bess": BESS}, SPEC, OptimizeConfig(annualize=False, milp_bound_s=milp_bound_s))


@pytest.fixture(scope="module")
def both(load):
    return _size(load, 0.0), _size(load, 8.0)


def test_off_by_default_the_gap_is_the_lp_resistor(both):
    base, _ = both
    i = base.info
    assert i.status == "gap" and i.gap_reason == "complementarity" and i.n_binary_steps == 0
    assert i.n_forced_steps > 0 and i.gap_frac > 1e-2


def test_branch_and_bound_raises_the_bound_and_keeps_a_realizable_plan(load, both):
    base, milp = both
    b, m = base.info, milp.info
    assert m.n_binary_steps > 0
    # a tighter bound, still below every realizable plan found (both runs' plans)
    assert m.lower_bound_usd > b.lower_bound_usd * (1 + 1e-3)
    assert m.lower_bound_usd <= min(m.objective_usd, b.objective_usd) * (1 + 1e-9)
    assert m.objective_usd <= b.objective_usd * (1 + 1e-9)
    assert m.gap_frac < 0.6 * b.gap_frac
    assert m.gap_frac == pytest.approx((m.objective_usd - m.lower_bound_usd) / m.objective_usd, abs=1e-12)
    # the returned plan (verified on the full horizon before it is taken) never charges and
    # discharges at once
    p_ch, p_dis = milp.p_charge_mw["bess"], milp.p_discharge_mw["bess"]
    assert np.all(np.minimum(p_ch, p_dis) <= 1e-6)


def test_the_milp_bound_lies_below_its_own_plan(load, both):
    """Straight from the module: the bound of the MILP (a relaxation among the plans at most
    as costly as the given one) is below the cost of its incumbent, which is a plan."""
    from facility.optimize.strategies import interior
    from facility.optimize.model.problem import Problem
    from facility.optimize.model.formulation import resolve_storage

    base, _ = both
    opt = OptimizeConfig(annualize=False)
    pb = Problem(load, DT, {"bess": resolve_storage("bess", BESS, opt, load.size * DT / 3600.0)}, SPEC, opt)
    _, forced = interior.direction_lower_bound_usd(pb, base.info.objective_usd)
    mb = milp_lower_bound_usd(pb, base.info.objective_usd, forced, 8.0)
    assert mb.rounds >= 1 and mb.n_binary_steps > 0
    assert mb.lower_bound_usd > base.info.lower_bound_usd
    if mb.plan is not None:
        assert verify_plan(load, DT, pb.storages, SPEC, mb.plan) is None
        cost = 1000.0 * plan_cost_kusd(pb.storages, mb.plan, DT, pb.price_usd_per_mwh)
        assert mb.lower_bound_usd <= cost * (1 + 1e-9)


def test_the_warning_points_at_the_option():
    assert "optimize.milp_bound_s=60" in gap_reason_text("complementarity", OptimizeConfig(annualize=False))
    assert "after optimize.milp_bound_s = 5 s" in gap_reason_text("complementarity",
                                                                  OptimizeConfig(annualize=False, milp_bound_s=5.0))
    # where it would be skipped, the sentence says so instead of offering it
    for opt in (OptimizeConfig(annualize=False), OptimizeConfig(annualize=False, milp_bound_s=5.0)):
        text = gap_reason_text("complementarity", opt, 36_000)
        assert "not tried above 12,000 steps" in text and "=60" not in text and "after" not in text
    assert "optimize.milp_bound_s=60" in gap_reason_text("complementarity", OptimizeConfig(annualize=False), 3_600)


def test_not_tried_on_horizons_it_cannot_finish(load, both, monkeypatch):
    """Above certify.MAX_STEPS the option is skipped with a warning, not left to run past its
    budget (its root LP and the direction bound before it are not stoppable)."""
    from facility.optimize.certificates import certify

    monkeypatch.setattr(certify, "MAX_STEPS", load.size - 1)
    with pytest.warns(UserWarning, match="not tried above"):
        res = size_storage(load, DT, {"bess": BESS}, SPEC, OptimizeConfig(annualize=False, milp_bound_s=8.0))
    assert res.info.n_binary_steps == 0
    assert res.info.lower_bound_usd == pytest.approx(both[0].info.lower_bound_usd, rel=1e-9)
