"""End-to-end co-simulation: closed forms, invariants after every run, dt independence."""

from __future__ import annotations

import numpy as np
import pytest

from facility.scenario import load_scenario, scenario_from_dict
from facility.config.load import apply_overrides
from facility.run.orchestrator import run_scenario
from tests.conftest import SCENARIOS
from tests.invariants import check_invariants


def square_site(dt=0.01, extra=()):
    d = {
        "schema_version": 1, "name": "sq", "seed": 0,
        "time": {"horizon_s": 30.0, "dt_s": dt},
        "jobs": [{"name": "j", "n_gpus": 10_000, "gpu": "h100", "workload": "square",
                  "period_s": 2.0, "compute_frac": 0.75, "p_low_frac": 0.25}],
        "site": {"non_gpu_frac": 0.35, "pue": 1.2, "cooling_tau_s": 0.0},
        "grid": {"enabled": False},
        "spec": {"window_s": 5.0, "max_window_swing_mw": 5.0, "band_min_hz": 0.1, "band_max_hz": 20.0},
    }
    return scenario_from_dict(apply_overrides(d, list(extra)), "sq")


def test_square_wave_closed_form_without_network():
    res = run_scenario(square_site())
    check_invariants(res)
    scale = 10_000 * 700 / 1e6 * 1.35 * 1.2  # MW at full TDP
    hi, lo = scale, 0.25 * scale
    m = res.metrics["pcc"]
    assert m["p_max_mw"] == pytest.approx(hi, rel=1e-9)
    assert m["p_min_mw"] == pytest.approx(lo, rel=1e-9)
    assert m["p_mean_mw"] == pytest.approx(0.75 * hi + 0.25 * lo, rel=1e-9)
    assert m["max_window_swing_mw"] == pytest.approx(hi - lo, rel=1e-9)
    assert m["max_ramp_up_mw_per_s"] == pytest.approx(hi - lo, rel=1e-9)  # step within tau = 1 s
    assert m["dominant_freq_hz"] == pytest.approx(0.5)
    assert res.metrics["compliance"]["max_window_swing_mw"] is False
    assert res.metrics["energy"]["energy_overhead_frac"] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(res.timeseries["p_pcc_mw"], res.timeseries["p_site_mw"])


def test_metrics_do_not_depend_on_dt_end_to_end():
    a = run_scenario(square_site(0.01)).metrics["pcc"]
    b = run_scenario(square_site(0.05)).metrics["pcc"]
    for k in ("p_mean_mw", "p_max_mw", "p_min_mw", "max_window_swing_mw", "max_ramp_up_mw_per_s",
              "max_ramp_down_mw_per_s", "max_ramp_mw_per_min", "dominant_freq_hz"):
        assert b[k] == pytest.approx(a[k], rel=1e-9), k


@pytest.mark.parametrize("name", ["default", "square_wave_rack_storage", "gpu_smoothing_floor"])
def test_bundled_scenarios_run_with_invariants(name):
    s = load_scenario(SCENARIOS / f"{name}.toml", ["time.horizon_s=30"])
    res = run_scenario(s)
    check_invariants(res)
    assert res.metrics["raw"]["max_window_swing_mw"] > 0


@pytest.mark.parametrize("eff", [1.0, 0.9])
@pytest.mark.parametrize("soc0, target", [(0.9, 0.3), (0.2, 0.8)])
def test_energy_overhead_charges_the_storages_net_energy(eff, soc0, target):
    """No network: the overhead is exactly the storage's round-trip loss, whatever its end SoC.

    Ending lower (ΔE < 0) the overhead energy is E_dis (1/(η_c η_d) − 1), ending higher
    E_ch (1 − η_c η_d), with E_dis / E_ch the energy discharged / charged at the terminals:
    lossless storage gives 0, never the negative overhead of spending its initial charge.
    """
    res = run_scenario(square_site(extra=[
        "rack_storage.enabled=true", "rack_storage.p_rated_mw=10", "rack_storage.e_rated_mwh=0.05",
        f"rack_storage.eff_charge_frac={eff}", f"rack_storage.eff_discharge_frac={eff}",
        f"rack_storage.initial_soc_frac={soc0}", "controller.kind='moving_average'",
        f"controller.soc_target_frac={target}", "controller.soc_gain_per_s=0.05"]))
    e, st = res.metrics["energy"], res.metrics["storage"]["rack_storage"]
    p = res.timeseries["p_rack_storage_mw"].to_numpy()
    e_ch, e_dis = (np.maximum(s * p, 0).sum() * 0.01 / 3600 for s in (1, -1))
    ended_lower = soc0 > target
    assert (st["delta_e_mwh"] < -0.01) if ended_lower else (st["delta_e_mwh"] > 0.01)
    assert e["storage_net_charge_mwh"] == pytest.approx(st["delta_e_mwh"])
    assert (e["energy_overhead_uncorrected_frac"] < -0.1) if ended_lower else (e["energy_overhead_uncorrected_frac"] > 0.05)
    loss = e_dis * (1 / eff**2 - 1) if ended_lower else e_ch * (1 - eff**2)
    assert e["pcc_restored_mwh"] - e["raw_mwh"] == pytest.approx(loss, abs=1e-12)
    assert e["energy_overhead_frac"] == pytest.approx(loss / e["raw_mwh"], abs=1e-12)
    assert e["energy_overhead_frac"] >= -1e-12


EXTENDABLE_RACK = ["rack_storage.enabled=true", "rack_storage.extendable=true", "rack_storage.max_p_rated_mw=20",
                   "rack_storage.max_e_rated_mwh=0.1", "controller.kind='optimal'"]


def test_run_scenario_sizes_an_extendable_storage_first(monkeypatch, tmp_path):
    """The orchestrator's one decision (issue 44): without ratings an extendable storage is sized
    first and the sizing's verification run is the result; with ratings, or without an
    extendable storage, the design runs as given (facility.cosim.simulate_design)."""
    import facility.run.orchestrator as sim

    calls = []

    def size_scenario(scenario, **kw):
        calls.append(("size", scenario.name, kw))
        return {"rack_storage": "sized"}, "verification run"

    def simulate_design(scenario, **kw):
        calls.append(("design", scenario.name, kw))
        return "fixed run"

    monkeypatch.setattr(sim, "size_scenario", size_scenario)
    monkeypatch.setattr(sim, "simulate_design", simulate_design)
    ext = square_site(extra=EXTENDABLE_RACK)
    assert run_scenario(ext, out_dir=tmp_path / "o", plots=False) == "verification run"
    assert calls.pop() == ("size", "sq", {"out_dir": tmp_path / "o", "progress": False, "plots": False,
                                          "require_compliant": False})
    ratings = {"rack_storage": {"p_rated_mw": 5.0, "e_rated_mwh": 0.02}}
    assert run_scenario(ext, ratings=ratings) == "fixed run"
    assert calls.pop() == ("design", "sq", {"out_dir": None, "progress": False, "ratings": ratings, "plan": None,
                                            "sizing": None, "plots": True, "gpu_plan": None})
    assert run_scenario(square_site()) == "fixed run" and calls.pop()[0] == "design"
    assert calls == []


def test_run_scenario_of_a_fixed_design_is_the_cosimulation():
    from facility.cosim.design import simulate_design

    s = square_site(extra=["rack_storage.enabled=true", "rack_storage.p_rated_mw=10",
                           "rack_storage.e_rated_mwh=0.05", "controller.kind='moving_average'"])
    a, b = run_scenario(s), simulate_design(s)
    check_invariants(a)
    assert a.metrics == b.metrics
    assert a.timeseries.equals(b.timeseries)


def test_the_cosimulation_does_not_size():
    """An extendable storage without ratings is refused by the fixed-design run, not sized."""
    from facility.cosim.design import simulate_design
    from facility.errors import ScenarioError

    with pytest.raises(ScenarioError, match="rack_storage.p_rated_mw"):
        simulate_design(square_site(extra=EXTENDABLE_RACK))
