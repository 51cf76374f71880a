"""Helpers of the workload tests: small scenarios built from keyword arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from facility.scenario import scenario_from_dict

DATA = Path(__file__).resolve().parents[1] / "data"


def make_scenario(jobs, *, horizon_s=10.0, dt_s=0.01, seed=0, site=None, grid=None):
    """A validated scenario with the given job dicts (defaults of the schema elsewhere)."""
    data = {"name": "t", "seed": seed, "time": {"horizon_s": horizon_s, "dt_s": dt_s},
            "jobs": jobs if isinstance(jobs, list) else [jobs]}
    if site is not None:
        data["site"] = site
    if grid is not None:
        data["grid"] = grid
    return scenario_from_dict(data)


@pytest.fixture
def data_dir() -> Path:
    return DATA
