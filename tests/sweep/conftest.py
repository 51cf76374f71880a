"""Fixtures of the sweep tests: a scenario file the synthetic case function can run fast."""

from __future__ import annotations

import pytest

from facility.sweep.synthetic import SYNTHETIC_SCENARIO_TOML

SYNTHETIC = "facility.sweep.synthetic:synthetic_case"

SCENARIO = SYNTHETIC_SCENARIO_TOML

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
