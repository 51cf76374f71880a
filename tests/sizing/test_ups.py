"""``facility size`` sizes the UPS battery for the spec's worst ride-through sag
(facility/sizing_ups.py), by hand: a UPS that does not transfer within the curve rides a
0 pu sag on its battery alone, E = P_it d / eta_d, at power P_it."""

import json

import pytest

from facility.cli import main
from facility.scenario import scenario_from_dict
from facility.errors import InfeasibleError
from facility.sizing.ups import ups_ride_through_floor, with_ups_floor
from facility.workload import default_n_feeders, generate_load, site_power

# 5,000 GB200 held at 90 % TDP: P_it = 5000 x 1200 W x 0.9 x (1 + 0.25 non-GPU) = 6.75 MW
P_IT_MW = 5000 * 1200.0 * 0.9 * 1.25 / 1e6
D_S, ETA_D, RESERVE = 0.15, 0.95, 0.5
E_SAG_MWH = P_IT_MW * D_S / ETA_D / 3600.0        # 0.296 kWh
SCENARIO = {
    "schema_version": 1, "name": "ups_size", "seed": 3,
    "time": {"horizon_s": 10.0, "dt_s": 0.05},
    "jobs": [{"name": "pretrain", "n_gpus": 5000, "gpu": "gb200", "workload": "square", "period_s": 2.0,
              "compute_frac": 0.7, "p_low_frac": 0.9, "p_high_frac": 0.9}],
    "site": {"non_gpu_frac": 0.25, "pue": 1.2, "cooling_tau_s": 0.0},
    # the UPS rides through (no transfer within 2 s); its battery is to be sized
    "ups": {"enabled": True, "extendable": True, "transfer_delay_s": 2.0, "reserve_frac": RESERVE,
            "min_soc_frac": 0.1, "max_soc_frac": 0.9, "initial_soc_frac": 0.6,
            "eff_discharge_frac": ETA_D, "max_p_rated_mw": 50.0, "max_e_rated_mwh": 1.0,
            "cost_usd_per_kw": 100.0, "cost_usd_per_kwh": 300.0},
    # a one-band curve: stay connected through 0 pu for 0.15 s (its worst sag)
    "spec": {"ride_through": {"band_max_vm_pu": [0.9], "band_min_ride_s": [D_S], "recovery_frac": 0.9,
                              "max_recovery_s": 2.0}},
    "grid_events": [{"start_s": 5.0, "duration_s": D_S, "depth_pu": 0.0}],
    "controller": {"kind": "optimal"},
}


def test_floor_is_the_it_load_times_the_sag_over_the_efficiency():
    sc = scenario_from_dict(SCENARIO)
    prof = generate_load(sc)
    site = site_power(prof, prof.p_gpu_w, sc.site, default_n_feeders(sc))
    assert float(site.p_it_mw.max()) == pytest.approx(P_IT_MW, rel=1e-9)
    f = ups_ride_through_floor(sc, [site], ups_sn_mva=1.25 * 8.1)
    assert f["e_sag_mwh"] == pytest.approx(E_SAG_MWH, rel=1e-3)
    # the sag may only count on the ride-through reserve: E >= E_sag / reserve_frac
    assert f["e_mwh_min"] == pytest.approx(E_SAG_MWH / RESERVE, rel=1e-3)
    assert f["p_mw_min"] == pytest.approx(P_IT_MW, rel=1e-9)
    assert f["sag"] == {"band": 0, "vm_pu": 0.0, "duration_s": D_S, "transfers": False}
    sized = with_ups_floor(sc, f)
    assert sized.ups.min_e_rated_mwh == pytest.approx(f["e_mwh_min"])
    # a floor above the bounds is named
    tight = scenario_from_dict({**SCENARIO, "ups": {**SCENARIO["ups"], "max_e_rated_mwh": 1e-4}})
    with pytest.raises(InfeasibleError, match="max_e_rated_mwh"):
        with_ups_floor(tight, f)
    # no curve, or a fixed UPS: no floor
    assert ups_ride_through_floor(scenario_from_dict({**SCENARIO, "spec": {}}), [site], 10.0) is None


@pytest.mark.slow          # ~30 s: the network-aware sizing and the verification run
def test_size_puts_the_ups_in_sizing_json_and_the_verification_rides_through(tmp_path):
    import tomli_w

    path = tmp_path / "ups_size.toml"
    path.write_text(tomli_w.dumps(SCENARIO))
    out = tmp_path / "out"
    assert main(["size", str(path), "--out", str(out), "--no-plots"]) == 0
    sizing = json.loads((out / "sizing.json").read_text())
    ups = sizing["ups"]
    assert ups["ride_through"]["sag"]["vm_pu"] == 0.0
    # nothing else asks for a battery: the design is the floor
    assert ups["e_rated_mwh_opt"] == pytest.approx(E_SAG_MWH / RESERVE, rel=1e-3)
    assert ups["p_rated_mw_opt"] == pytest.approx(P_IT_MW, rel=1e-3)
    m = json.loads((out / "metrics.json").read_text())
    assert m["compliance"]["ride_through_connected"] is True
    assert m["compliance"]["ride_through_recovery"] is True
    assert m["ride_through"]["ups"]["it_lost_mwh"] == 0.0
    assert m["ride_through"]["ups"]["ups_battery_mwh"] == pytest.approx(P_IT_MW * D_S / 3600.0, rel=0.02)


def test_half_the_floor_loses_it_load(tmp_path):
    # the same run with half the battery: the sag empties the reserve and the IT load is lost
    half = {**SCENARIO, "ups": {**SCENARIO["ups"], "extendable": False,
                                "p_rated_mw": P_IT_MW, "e_rated_mwh": 0.5 * E_SAG_MWH / RESERVE}}
    from facility.run.orchestrator import run_scenario

    res = run_scenario(scenario_from_dict(half), plots=False)
    assert res.metrics["ride_through"]["ups"]["it_lost_mwh"] > 0
    assert res.metrics["compliance"]["ride_through_connected"] is False
