"""The LP keeps storage within what the network carries: feeders (rack storage + UPS), the
site (every storage) and the BESS transformer, per step, as functions of the load."""

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import BessConfig, OptimizeConfig, RackStorageConfig, SpecConfig, UpsConfig
from facility.errors import InfeasibleError
from facility.optimize import size_storage, solve_dispatch
from facility.optimize.model.formulation import build_model, resolve_storage

TOL = 1e-6
SPEC = SpecConfig(window_s=5.0, max_window_swing_mw=10.0)


def dip_load(dt_s=0.5, horizon_s=120.0):
    """80 MW with a 30 s dip to 20 MW (a checkpoint) in the middle."""
    t = np.arange(int(round(horizon_s / dt_s))) * dt_s
    return np.where((t >= 45.0) & (t < 75.0), 20.0, 80.0)


def sto(cls, **kw):
    base = dict(enabled=True, extendable=True, cost_usd_per_kw=100.0, cost_usd_per_kwh=200.0,
                initial_soc_frac=0.5, min_soc_frac=0.0, max_soc_frac=1.0)
    base.update(kw)
    return cls(**base)


def _net(r, names):
    return sum((r.p_storage_mw[n] for n in names), np.zeros_like(r.p_pcc_mw))


def test_feeder_headroom_binds_the_storage_behind_the_ups():
    dt = 0.5
    load = dip_load(dt)
    storages = {"rack_storage": sto(RackStorageConfig), "ups": sto(UpsConfig), "bess": sto(BessConfig, cost_usd_per_kw=300.0)}
    # the horizon-only objective (full capex against the horizon): the behaviour of the rows,
    # not the economics, is under test
    free = size_storage(load, dt, storages, SPEC, OptimizeConfig(annualize=False))
    behind = ("rack_storage", "ups")
    cap = 60.0  # during the dip the UPSs may add at most 40 MW to the 20 MW load
    assert np.max(load + _net(free, behind)) > cap + 5.0  # the cheap fill of the dip overloads the feeders
    opt = OptimizeConfig(max_feeder_p_mw=cap, annualize=False)
    r = size_storage(load, dt, storages, SPEC, opt)
    head = np.maximum(cap - load, 0.0)
    assert np.all(_net(r, behind) <= head + TOL)
    assert np.max(_net(r, behind) - head) > -0.01  # binds
    # the spec still holds, at a higher cost
    assert metrics.max_window_swing_mw(r.p_pcc_mw, dt, 5.0) <= 10.0 + TOL
    assert r.info.objective_usd > free.info.objective_usd * (1 + 1e-6)


def test_site_capacity_and_bess_transformer():
    dt = 0.5
    load = dip_load(dt)
    r = size_storage(load, dt, {"bess": sto(BessConfig)}, SPEC,
                     OptimizeConfig(max_site_p_mw=85.0, max_bess_p_mw=200.0))
    assert np.max(r.p_pcc_mw) <= 85.0 + TOL
    # a BESS transformer too small for the dip: the swing limit cannot be met
    with pytest.raises(InfeasibleError):
        size_storage(load, dt, {"bess": sto(BessConfig)}, SPEC, OptimizeConfig(max_bess_p_mw=20.0))
    r = size_storage(load, dt, {"bess": sto(BessConfig)}, SPEC, OptimizeConfig(max_bess_p_mw=60.0))
    assert np.max(np.abs(r.p_storage_mw["bess"])) <= 60.0 + TOL


def test_a_load_above_the_capacity_does_not_force_a_discharge():
    dt = 1.0
    load = np.full(60, 100.0)
    storages = {"rack_storage": sto(RackStorageConfig, extendable=False, p_rated_mw=10.0, e_rated_mwh=1.0)}
    r = solve_dispatch(load, dt, storages, SpecConfig(), OptimizeConfig(max_feeder_p_mw=90.0))
    np.testing.assert_allclose(r.p_storage_mw["rack_storage"], 0.0, atol=1e-9)


def test_rows_only_where_they_can_bind():
    load = dip_load(0.5)
    fixed = sto(RackStorageConfig, extendable=False, p_rated_mw=10.0, e_rated_mwh=1.0)
    d = {"rack_storage": resolve_storage("rack_storage", fixed, OptimizeConfig(max_feeder_p_mw=85.0), 0.1)}
    m = build_model(load, 0.5, d, SPEC, 60.0)
    fams = [b for b in m.lp.blocks if b.family == "feeder_limit"]
    # load + 10 MW exceeds 85 MW only outside the dip (80 + 10): one row per such step
    assert sum(b.stop - b.start for b in fams) == int(np.sum(load + 10.0 > 85.0))
    d = {"rack_storage": resolve_storage("rack_storage", fixed, OptimizeConfig(max_feeder_p_mw=500.0), 0.1)}
    assert not [b for b in build_model(load, 0.5, d, SPEC, 60.0).lp.blocks if b.family == "feeder_limit"]


def test_coarsened_solve_keeps_the_rows():
    """The rows depend on the load only, so the exact coarsening keeps them (same optimum)."""
    dt = 0.1
    load = dip_load(dt)
    storages = {"rack_storage": sto(RackStorageConfig), "bess": sto(BessConfig, cost_usd_per_kw=300.0)}
    a = size_storage(load, dt, storages, SPEC, OptimizeConfig(max_feeder_p_mw=60.0))
    b = size_storage(load, dt, storages, SPEC, OptimizeConfig(max_feeder_p_mw=60.0, coarsen=False, periodic=False))
    assert a.info.step_factor > 1 and b.info.step_factor == 1
    assert a.info.objective_usd == pytest.approx(b.info.objective_usd, rel=1e-6)
    assert np.all(a.p_storage_mw["rack_storage"] <= np.maximum(60.0 - load, 0.0) + TOL)
