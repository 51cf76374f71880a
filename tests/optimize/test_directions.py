"""The directions the window limits force (facility.optimize.certificates.directions): the chained lag
bound, the reach of the PCC power against a brute force, and the bound they give against the
realizable optimum (a MILP) where the LP's resistor hides it."""

import warnings

import numpy as np
import pytest

from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.optimize.strategies import interior
from facility.optimize.certificates.directions import (applies, forced_directions, lag_reach_mw, n_forced,
                                          on_groups, pcc_reach_mw, window_extreme)
from facility.optimize.model.formulation import resolve_storage
from facility.optimize.model.problem import Problem
from facility.optimize.model.windows import LagBound, lag_bounds

SPEC = SpecConfig(max_ramp_up_mw_per_s=2.0, max_ramp_down_mw_per_s=3.0, ramp_window_s=1.0,
                  max_ramp_mw_per_min=20.0, window_s=5.0, max_window_swing_mw=5.0)


def _brute_reach(load, bounds, p_max, dr=None):
    """P_t bounds by the definition: every s, the chained D of the direction between them."""
    T = load.size
    d_up = lag_reach_mw(bounds, "up", T, dr)
    d_dn = lag_reach_mw(bounds, "down", T, dr)
    lo, hi = np.empty(T), np.empty(T)
    t = np.arange(T)
    for i in range(T):
        lag = t - i
        later = lag >= 0
        lo[i] = np.max(load - p_max - np.where(later, d_up[np.abs(lag)], d_dn[np.abs(lag)]))
        hi[i] = np.min(load + p_max + np.where(later, d_dn[np.abs(lag)], d_up[np.abs(lag)]))
    return lo, hi


def test_one_window_chains_to_ceil_n_over_k_hops_and_several_combine():
    one = [LagBound("x", "up", 10, 2.0)]
    d = lag_reach_mw(one, "up", 35)
    n = np.arange(1, 36)
    assert d[0] == 0.0 and np.array_equal(d[1:], np.ceil(n / 10) * 2.0)
    assert np.all(np.isinf(lag_reach_mw(one, "down", 5)[1:]))  # no bound of that direction
    two = one + [LagBound("y", "up", 600, 20.0)]
    d = lag_reach_mw(two, "up", 1300)
    assert d[100] == 20.0 and d[600] == 20.0      # ten short hops, or one minute
    assert d[610] == 22.0 and d[1200] == 40.0     # a minute and a second, two minutes
    assert lag_reach_mw(two, "up", 1300, dynamic_range_mw=30.0)[1200] == 30.0
    # the closure by its definition: the least cost of hops covering n steps
    ref = np.full(1301, np.inf)
    ref[0] = 0.0
    for k in range(1, 1301):
        ref[k] = min(b.bound_mw + ref[max(k - b.k, 0)] for b in two)
    assert np.array_equal(d, ref)


@pytest.mark.parametrize("a,b", [(0, 0), (1, 5), (-7, -2), (-3, 4), (5, 300), (-300, -150), (0, 13)])
def test_window_extreme_is_the_max_and_min_over_the_shifted_window(a, b):
    x = np.random.default_rng(3).normal(size=200)
    near = [[x[j] for j in range(t + a, t + b + 1) if 0 <= j < x.size] for t in range(x.size)]
    assert np.array_equal(window_extreme(x, a, b, "max"), [max(v, default=-np.inf) for v in near])
    assert np.array_equal(window_extreme(x, a, b, "min"), [min(v, default=np.inf) for v in near])


@pytest.mark.parametrize("dr", [None, 40.0])
def test_the_pcc_reach_is_the_brute_force_bound(dr):
    """A start (5 → 100 MW), a dip and a stop, with noise, at 0.1 s: the O(T) sides equal the
    O(T²) definition wherever they can force a direction."""
    rng = np.random.default_rng(5)
    t = np.arange(3000) * 0.1
    load = np.where((t > 40) & (t < 250), 100.0, 5.0) - 60.0 * ((t > 120) & (t < 135))
    load += rng.normal(0.0, 1.0, t.size)
    spec = SPEC.model_copy(update={"max_dynamic_range_mw": dr})
    lo, hi = pcc_reach_mw(load, 0.1, spec, 0.0, 30.0)
    blo, bhi = _brute_reach(load, lag_bounds(spec, 0.1), 30.0, dr)
    assert np.all(lo <= blo + 1e-9) and np.all(hi >= bhi - 1e-9)  # never tighter than valid
    # equal wherever either side could reach the load (beyond, they cannot force anything)
    assert np.array_equal(lo >= load, blo >= load) and np.array_equal(hi <= load, bhi <= load)
    assert (lo >= load).sum() > 500 and (hi <= load).sum() > 100


def _problem(load, dt, n_storages=1, spec=SPEC, **opt):
    o = OptimizeConfig(**{'annualize': False, **opt})
    bess = BessConfig(enabled=True, extendable=True, max_p_rated_mw=200.0, max_e_rated_mwh=50.0,
                      min_soc_frac=0.05, max_soc_frac=0.95, initial_soc_frac=0.9,
                      cost_usd_per_kw=150.0, cost_usd_per_kwh=250.0)
    names = ["bess"] if n_storages == 1 else [f"s{i}" for i in range(n_storages)]
    sd = {n: resolve_storage(n, bess, o, load.size * dt / 3600.0) for n in names}
    return Problem(np.asarray(load, float), dt, sd, spec, o)


def test_the_directions_apply_to_one_storage_without_levers_or_history():
    load = np.full(100, 50.0)
    assert applies(_problem(load, 0.1))
    assert not applies(_problem(load, 0.1, n_storages=2))  # one may charge the other: a resistor
    assert not applies(_problem(load, 0.1, spec=SpecConfig()))  # no window limit
    pb = _problem(load, 0.1)
    from dataclasses import replace

    assert not applies(replace(pb, p_pcc_history_mw=np.full(10, 50.0)))
    assert forced_directions(_problem(load, 0.1, n_storages=2), 10.0) == {}


def test_a_group_is_fixed_only_where_every_step_is():
    fx = {"s": {"ch": np.array([1, 1, 1, 0, 1, 1, 1], bool), "dis": np.zeros(7, bool)}}
    g = on_groups(fx, 3)
    assert g["s"]["ch"].tolist() == [True, False] and g["s"]["dis"].tolist() == [False, False]
    assert on_groups(fx, 1) is fx


def _start_stop_load(dt):
    """A 100 MW job starting at 30 s and stopping 60 s before the end of 4 min, square
    iterations of 4 s at 0.8 compute, a 10-s checkpoint dip (the tests' start/stop shape)."""
    t = np.arange(int(240 / dt)) * dt
    it = np.where((t % 4.0) < 3.2, 100.0, 40.0)
    on = (t >= 30.0) & (t < 180.0)
    load = np.where(on, it, 5.0)
    load[(t >= 100.0) & (t < 110.0)] = 30.0
    return load


def test_the_forced_bound_lies_between_the_lp_and_the_realizable_optimum():
    """On a start, a checkpoint and a stop with the storage at 90 % SoC, the LP's optimum
    burns energy; the relaxation with the forced directions lies above the LP optimum and at
    most the MILP's realizable optimum (the reference with one binary per step)."""
    from tests.optimize.test_interior import _realizable_optimum_usd

    dt = 0.5
    pb = _problem(_start_stop_load(dt), dt)
    opt_usd, milp_low = _realizable_optimum_usd(pb)
    from facility.optimize.strategies.full import lp_bound_usd

    lp_usd = lp_bound_usd(pb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        low, forced = interior.direction_lower_bound_usd(pb, opt_usd)
    assert n_forced(forced) > 0
    assert lp_usd < opt_usd * (1 - 2e-3)           # the resistor: the LP alone proves little
    assert lp_usd < low <= milp_low * (1 + 1e-9)   # valid, and tighter
    assert (opt_usd - low) / opt_usd < 0.25 * (opt_usd - lp_usd) / opt_usd
