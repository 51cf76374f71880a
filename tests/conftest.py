"""Shared fixtures and the tolerance table of the regression tests."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"
SHARED_EXAMPLES = REPO.parent / "shared" / "spec" / "examples"
TESTS_DATA_DIR = Path(__file__).resolve().parent / "data"

#: Tolerances of golden-metric comparisons, per quantity kind (pandapower tolerances.csv idea).
TOL = {
    "mw": 1e-3,          # power [MW], absolute
    "mwh": 1e-3,         # energy [MWh], absolute
    "frac": 1e-4,        # fractions, absolute
    "pu": 1e-6,          # voltages [pu], absolute
    "percent": 1e-4,     # loadings [%], absolute
    "hz": 1e-9,          # frequencies [Hz], absolute
    "usd_rel": 1e-4,     # costs, relative
    # a sizing's objective, relative, beyond the gaps its solves proved: the sequential loss
    # LP's rounds start from the dispatch the solver picked (2.3e-6 measured between HiGHS
    # option sets, tests/regenerate_golden.py)
    "objective_rel": 1e-5,
}


def cli_in_process(argv: list[str]) -> tuple[int, str]:
    """``facility.cli.main(argv)`` in this process: its exit code and what it printed (stdout,
    then stderr)."""
    from facility.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, out.getvalue() + err.getvalue()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def tiny_scenario_dict():
    """A small valid scenario (raw dict) for fast end-to-end tests."""
    return {
        "schema_version": 1,
        "name": "tiny",
        "seed": 1,
        "time": {"horizon_s": 20.0, "dt_s": 0.01},
        "jobs": [{"name": "pretrain", "n_gpus": 1000, "gpu": "gb200", "workload": "square",
                  "period_s": 2.0, "compute_frac": 0.7, "p_low_frac": 0.3}],
        "site": {"non_gpu_frac": 0.3, "pue": 1.2, "cooling_tau_s": 0.0},
        "spec": {"window_s": 5.0, "max_window_swing_mw": 1.0},
    }
