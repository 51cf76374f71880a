"""``facility size`` on a hybrid section: the optimizer sizes one unit per candidate technology,
the simulator runs the units, the verification decides the exit code (0 compliant)."""

import json
import tomllib

import pytest

from facility.cli import main

#: test technologies (not the library's: made so the LP takes both): power is cheap and
#: energy dear for the fast one, the other way round (at least 1 h) for the slow one
FAST = """name = "fast"
description = "test technology: cheap power, dear energy"
cost_usd_per_kw = 10.0
cost_usd_per_kwh = 20000.0
eff_charge_frac = 0.98
eff_discharge_frac = 0.98
min_duration_h = 0.0001
max_duration_h = 0.05
cycle_life = 1000000
calendar_life_years = 15
cost_year = 2024
source = "test data"
"""
SLOW = """name = "slow"
description = "test technology: dear power, cheap energy, at least 1 h"
cost_usd_per_kw = 300.0
cost_usd_per_kwh = 50.0
eff_charge_frac = 0.95
eff_discharge_frac = 0.95
min_duration_h = 1.0
max_duration_h = 4.0
cycle_life = 6000
calendar_life_years = 15
cost_year = 2024
source = "test data"
"""
#: 2,000 H100 in 4 s iterations (the seconds-scale swing) starting at t = 20 s within 2 s
#: (the minutes-scale part: held to 1 MW/min at the PCC)
SCENARIO = """schema_version = 1
name = "hybrid"
[time]
horizon_s = 180
dt_s = 1.0
[[jobs]]
name = "job"
n_gpus = 2000
gpu = "h100"
workload = "square"
period_s = 4.0
compute_frac = 0.75
p_low_frac = 0.3
start_s = 20
ramp_s = 2.0
[bess]
enabled = true
extendable = true
technologies = ["./fast.toml", "./slow.toml"]
max_p_rated_mw = 10.0
max_e_rated_mwh = 20.0
[spec]
window_s = 5.0
max_window_swing_mw = 0.2
max_ramp_mw_per_min = 1.0
[controller]
kind = "{kind}"
"""


def _size(tmp_path, kind: str):
    (tmp_path / "fast.toml").write_text(FAST)
    (tmp_path / "slow.toml").write_text(SLOW)
    f = tmp_path / "hybrid.toml"
    f.write_text(SCENARIO.format(kind=kind))
    out = tmp_path / "out"
    rc = main(["size", str(f), "--out", str(out), "--no-plots"])
    return rc, out


def _check_units(out):
    sizing = json.loads((out / "sizing.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    assert sizing["verified"] is True
    for u, (d_lo, d_hi) in (("bess.fast", (0.0001, 0.05)), ("bess.slow", (1.0, 4.0))):
        p, e = sizing[u]["p_rated_mw_opt"], sizing[u]["e_rated_mwh_opt"]
        assert p > 0.05, u                                  # the LP bought both
        assert d_lo * (1 - 1e-6) <= e / p <= d_hi * (1 + 1e-6), u
        # the verification ran the unit at its sized ratings, as a storage of its own
        assert metrics["storage"][u]["p_rated_mw"] == pytest.approx(p, rel=1e-9)
        assert metrics["storage"][u]["equivalent_full_cycles_per_year"] > 0
        mix = sizing["mix"]["storages"][u]
        assert mix["duration_h"] == pytest.approx(e / p) and mix["cost_usd_per_year"] > 0
    # the resolved scenario holds the units' ratings and is a valid scenario of its own
    resolved = tomllib.loads((out / "scenario.resolved.toml").read_text())["bess"]
    assert resolved["extendable"] is False
    assert resolved["unit_p_rated_mw"]["fast"] == pytest.approx(sizing["bess.fast"]["p_rated_mw_opt"])
    assert main(["validate", str(out / "scenario.resolved.toml")]) == 0
    return sizing


def test_size_verifies_a_hybrid_and_exits_0_when_compliant(tmp_path):
    rc, out = _size(tmp_path, "optimal")
    assert rc == 0
    _check_units(out)


@pytest.mark.slow
def test_size_verifies_a_hybrid_under_the_filter_controller(tmp_path):
    # closed loop: the filter splits the dispatch at the fast unit's crossover; the search grows
    # both units by one factor until the verification is compliant (~25 s)
    rc, out = _size(tmp_path, "filter")
    assert rc == 0
    sizing = _check_units(out)
    assert sizing["verified_by"] == "filter" and sizing["resize"]["compliant"] is True


@pytest.mark.slow
@pytest.mark.parametrize("case", ["hybrid_gb200_30k", "hybrid_h100_50k"])
def test_a_big_ercot_hybrid_prunes_the_battery_and_costs_what_the_supercap_alone_does(case):
    """Issue 49: 12,000 steps of a jittered 30k-GB200 / 50k-H100 job under the ERCOT proposal,
    supercap (self-discharge on) and lfp_1h as candidates (benchmarks/scenarios/): the LFP is
    pruned by the bound before the hybrid's solve, so the hybrid is the supercap alone (same plan,
    same cost), never dearer than either alone (~2 min each here; timings:
    benchmarks/bench_sizing_hybrid.py)."""
    import warnings

    from facility.scenario import load_scenario
    from facility.grid_impact.lp import lp_spec
    from facility.optimize import size_storage
    from facility.sizing.pipeline import sizing_inputs

    sc = load_scenario(f"benchmarks/scenarios/{case}.toml")
    si = sizing_inputs(sc)
    bess, opt = sc.storages()["bess"], si.scenario_caps.optimize
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the interior bracket's gap on groups of 2
        for techs in (["supercap", "lfp_1h"], ["supercap"], ["lfp_1h"]):
            st = {"bess": bess.model_copy(update={"technologies": techs})}
            out["+".join(techs)] = size_storage(si.p_load_mw, sc.time.dt_s, st, lp_spec(sc), opt)
    hyb = out["supercap+lfp_1h"]
    cand = hyb.info.candidates
    assert hyb.info.method == "interior" and "bess.lfp_1h" in cand["pruned"] and not cand["hybrid_solved"]
    assert hyb.p_rated_mw_opt["bess.lfp_1h"] == 0.0
    assert hyb.info.objective_usd == pytest.approx(out["supercap"].info.objective_usd, rel=1e-9)
    assert hyb.info.objective_usd <= min(out["supercap"].info.objective_usd, out["lfp_1h"].info.objective_usd)
    # the bound holds the better single's plan: no plan of the hybrid is cheaper than it by more
    assert hyb.info.lower_bound_usd <= out["supercap"].info.objective_usd
