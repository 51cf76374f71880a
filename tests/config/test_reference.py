"""docs/scenario-reference.md is generated from the schema; fail when it is stale."""

from facility.config.reference import REFERENCE_PATH, render_reference


def test_reference_is_up_to_date():
    assert REFERENCE_PATH.read_text() == render_reference(), (
        "docs/scenario-reference.md is stale: run `python -m facility.config.reference`")


def test_reference_lists_every_contract_key():
    text = render_reference()
    for key in ("horizon_s", "dt_s", "n_gpus", "period_s", "compute_frac", "p_low_frac", "start_s", "stop_s",
                "ramp_s", "checkpoint_every_s", "checkpoint_s", "trace_file", "floor_frac", "ramp_up_w_per_s",
                "ramp_down_w_per_s", "stop_delay_s", "trigger_frac", "target_frac", "latency_s", "non_gpu_frac",
                "pue", "p_rated_mw", "e_rated_mwh", "extendable", "max_p_rated_mw", "max_e_rated_mwh",
                "eff_charge_frac", "eff_discharge_frac", "min_soc_frac", "max_soc_frac", "initial_soc_frac",
                "cost_usd_per_kw", "cost_usd_per_kwh", "vn_kv", "trafo_sn_mva", "trafo_vk_percent",
                "max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s", "max_ramp_mw_per_min", "ramp_window_s",
                "window_s", "max_window_swing_mw", "band_min_hz", "band_max_hz", "max_band_energy_frac",
                "max_band_peak_mw", "max_dynamic_range_mw"):
        assert f"`{key}`" in text, key
