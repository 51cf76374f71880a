"""A fixed hybrid storage section (``technologies`` with ``unit_p_rated_mw`` /
``unit_e_rated_mwh``) runs as its units: each a storage of its own at the section's bus, with
its own power, energy, efficiencies and SoC, in the controllers, the power flow and the
metrics."""

import numpy as np
import pytest

from facility.scenario import scenario_from_dict
from facility.run.orchestrator import run_scenario
from facility.storage import StorageParams, assert_storage_invariants

from tests.invariants import check_invariants

UNITS = ("bess.supercap", "bess.lfp_1h")


def _scenario(kind: str):
    # 2,000 H100 in 4 s iterations (about 1.6 MW of swing at the site) starting at t = 60 s
    return scenario_from_dict({
        "name": "hybrid_run", "seed": 1, "time": {"horizon_s": 300, "dt_s": 0.5},
        "jobs": [{"name": "job", "n_gpus": 2000, "gpu": "h100", "workload": "square", "period_s": 4.0,
                  "compute_frac": 0.75, "p_low_frac": 0.3, "start_s": 60, "ramp_s": 2.0}],
        "bess": {"enabled": True, "technologies": ["supercap", "lfp_1h"],
                 "unit_p_rated_mw": {"supercap": 2.0, "lfp_1h": 2.0},
                 "unit_e_rated_mwh": {"supercap": 0.02, "lfp_1h": 2.0}},
        "spec": {"window_s": 5.0, "max_window_swing_mw": 0.3, "max_ramp_mw_per_min": 2.0},
        "controller": {"kind": kind}})


@pytest.mark.parametrize("kind", ["filter", "optimal", pytest.param("mpc", marks=pytest.mark.slow)])
def test_a_fixed_hybrid_runs_as_its_units_within_the_invariants(kind):
    res = run_scenario(_scenario(kind), plots=False)
    check_invariants(res)     # per unit: SoC bounds, |p| <= its rating; PCC balance with both
    ts, m = res.timeseries, res.metrics
    for u, (p, e) in zip(UNITS, ((2.0, 0.02), (2.0, 2.0))):
        assert m["storage"][u]["p_rated_mw"] == p and m["storage"][u]["e_rated_mwh"] == e
        assert np.abs(ts[f"p_{u}_mw"]).max() > 0.05, u          # both units act
        assert "equivalent_full_cycles_per_year" in m["storage"][u]
    # both units sit behind the BESS transformer: the loading follows their sum
    p_bess = ts["p_bess.supercap_mw"] + ts["p_bess.lfp_1h_mw"]
    busy = np.abs(p_bess) > 0.5
    assert ts["bess_trafo_loading_percent"][busy].min() > 0
    # the supercapacitor takes the iteration swing, the battery the slower part
    ripple = {u: float(np.std(np.diff(ts[f"p_{u}_mw"].to_numpy()[ts["t_s"] > 120]))) for u in UNITS}
    if kind == "filter":
        assert ripple["bess.supercap"] > 5 * ripple["bess.lfp_1h"]
    # each unit's energy balance closes with its own technology's efficiencies and self-discharge
    # (both technologies' round trip is 0.85 in the checked library; their self-discharge differs)
    units = res.scenario.storage_units()
    own = {u: (units[u].eff_charge_frac, units[u].eff_discharge_frac, units[u].self_discharge_frac_per_h)
           for u in UNITS}
    assert own["bess.supercap"] != own["bess.lfp_1h"]
    for u in UNITS:
        assert_storage_invariants(ts[f"p_{u}_mw"].to_numpy(), ts[f"soc_{u}_frac"].to_numpy(),
                                  StorageParams.from_config(u, units[u]), res.scenario.time.dt_s)
