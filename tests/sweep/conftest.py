"""Fixtures of the sweep tests: a scenario file the synthetic case function can run fast."""

from __future__ import annotations

import pytest

SYNTHETIC = "facility.sweep.synthetic:synthetic_case"

SCENARIO = """
schema_version = 1
name = "sweep_test"
description = "{description}"
[time]
horizon_s = 10.0
dt_s = 0.02
[[jobs]]
name = "job"
n_gpus = 1000
gpu = "gb200"
period_s = 2.0
compute_frac = 0.7
p_low_frac = 0.2
[gpu_smoothing]
enabled = true
floor_frac = 0.2
[rack_storage]
enabled = true
p_rated_mw = 1.0
e_rated_mwh = 0.0
cost_usd_per_kw = 100.0
cost_usd_per_kwh = 500.0
[controller]
kind = "moving_average"
[spec]
window_s = 5.0
max_window_swing_mw = 0.5
"""

#: 4 floors x 3 storage sizes x 2 specs = 24 cases
SET_24 = ["gpu_smoothing.floor_frac=0.2:0.8:4", "rack_storage.e_rated_mwh=0,0.0001,0.0003",
          "spec=paper_example,caiso_2026_straw"]


@pytest.fixture
def scenario_file(tmp_path):
    def make(description: str = "", name: str = "scenario.toml"):
        p = tmp_path / name
        p.write_text(SCENARIO.format(description=description))
        return p

    return make
