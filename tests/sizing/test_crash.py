"""``facility size`` of a 30,000-GB200 job that crashes and restarts unannounced under ERCOT's
proposal (≤ 10 MW peak to peak in any 5 s): the design starts from the step floor
(facility/sizing_step.py) and is verified, closed loop, by the controllers a site can run
(issue 48). The controllers are not told of the crash or the restart."""

import json

import pytest

from facility.cli import main


def _scenario(horizon_s: float, dt_s: float, crash_s: float, restart_after_s: float, kind: str) -> dict:
    return {
        "schema_version": 1, "name": "crash_ercot_own", "seed": 7, "spec": "ercot_2026_proposal",
        "time": {"horizon_s": horizon_s, "dt_s": dt_s},
        "jobs": [{"name": "pretrain", "n_gpus": 30000, "gpu": "gb200", "workload": "stochastic",
                  "period_s": 2.0, "compute_frac": 0.75, "p_low_frac": 0.4, "ramp_s": 20.0, "start_s": -10.0,
                  "checkpoint_every_s": 40.0, "checkpoint_s": 3.0,
                  "failures": {"crash_times_s": [crash_s], "crash_drop_s": 1.0,
                               "restart_after_s": restart_after_s}}],
        "site": {"non_gpu_frac": 0.25, "pue": 1.1, "cooling_tau_s": 0.0},
        "bess": {"enabled": True, "extendable": True, "max_p_rated_mw": 120.0, "max_e_rated_mwh": 5.0,
                 "eff_charge_frac": 0.95, "eff_discharge_frac": 0.95, "min_soc_frac": 0.05,
                 "max_soc_frac": 0.95, "initial_soc_frac": 0.5, "cost_usd_per_kw": 150.0,
                 "cost_usd_per_kwh": 250.0},
        "controller": {"kind": kind},
    }


def _size(tmp_path, sc: dict) -> tuple[int, dict, dict]:
    import tomli_w

    path = tmp_path / "crash.toml"
    path.write_text(tomli_w.dumps(sc))
    out = tmp_path / "out"
    rc = main(["size", str(path), "--out", str(out), "--no-plots"])
    return rc, json.loads((out / "sizing.json").read_text()), json.loads((out / "metrics.json").read_text())


def _check(rc: int, sizing: dict, metrics: dict, kind: str) -> None:
    assert rc == 0
    assert sizing["verified_by"] == kind and sizing["verified"] is True
    assert metrics["compliance"]["max_window_swing_mw"] is True
    assert metrics["pcc"]["max_window_swing_mw"] <= 10.0
    # the crash really is in the load (the raw site swings ~4 x the limit within 5 s)
    assert metrics["raw"]["max_window_swing_mw"] > 30.0
    # the design is at least the step floor, and the floor is what sizing.json says
    floor = sizing["step_floor"]
    assert [e["kind"] for e in floor["events"]] == ["crash", "restart"]
    assert sizing["bess"]["p_rated_mw_opt"] >= floor["p_mw_min"] * (1 - 1e-9)
    assert sizing["bess"]["e_rated_mwh_opt"] >= floor["e_mwh_min"] * (1 - 1e-9)
    assert sizing["cost_of_no_foresight_usd_per_year"] == pytest.approx(
        sizing["objective_usd_per_year"] - sizing["foresight"]["objective_usd_per_year"])


def test_a_30k_gpu_crash_and_restart_under_ercot_sizes_under_ramp_limit(tmp_path):
    """The fast variant (90 s at 0.1 s, ~5 s of CPU): crash at 35 s, restart 25 s later."""
    rc, sizing, metrics = _size(tmp_path, _scenario(90.0, 0.1, 35.0, 25.0, "ramp_limit"))
    _check(rc, sizing, metrics, "ramp_limit")


@pytest.mark.slow          # ~15-30 s of CPU each (7-8 verification runs at 0.05 s)
@pytest.mark.parametrize("kind", ["mpc", "ramp_limit"])
def test_a_30k_gpu_crash_and_restart_under_ercot_sizes_under_each_deployable_controller(tmp_path, kind):
    """150 s at 0.05 s, crash at 60 s, restart 40 s later (ramped over 20 s)."""
    rc, sizing, metrics = _size(tmp_path, _scenario(150.0, 0.05, 60.0, 40.0, kind))
    _check(rc, sizing, metrics, kind)
