"""The same case at three time steps gives consistent sizes."""

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize import size_storage


def case(dt_s):
    t = np.arange(int(round(400.0 / dt_s))) * dt_s
    # 20 s period square wave (duty 0.5) between 60 and 100 MW from 120 s; idle 20 MW before
    p = np.where((t % 20.0) < 10.0, 100.0, 60.0)
    return np.where(t >= 120.0, p, 20.0)


def test_sizes_do_not_depend_on_dt():
    b = BessConfig(enabled=True, extendable=True, cost_usd_per_kw=100.0, cost_usd_per_kwh=300.0,
                   eff_charge_frac=1.0, eff_discharge_frac=1.0)  # lossless: no complementarity repair
    spec = SpecConfig(max_ramp_mw_per_min=30.0, window_s=10.0, max_window_swing_mw=15.0)
    opt = OptimizeConfig(energy_price_usd_per_mwh=60.0)
    res = {dt: size_storage(case(dt), dt, {"bess": b}, spec, opt) for dt in (0.5, 1.0, 2.0)}
    ref = res[0.5]
    # windows are whole multiples of every dt and the load is piecewise constant on all grids:
    # the optimum is the same up to the sampling of the ramps (O(dt / window))
    for r in res.values():
        assert r.p_rated_mw_opt["bess"] == pytest.approx(ref.p_rated_mw_opt["bess"], rel=0.02)
        assert r.e_rated_mwh_opt["bess"] == pytest.approx(ref.e_rated_mwh_opt["bess"], rel=0.05)
    assert ref.p_rated_mw_opt["bess"] > 5.0
