"""Pareto front, cheapest compliant design per spec, strategy table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from facility.sweep import cheapest_compliant, pareto_front, pareto_mask, strategy_table


def test_pareto_mask_hand_cases():
    v = np.array([[1, 1], [2, 2], [1, 2], [0, 3], [1, 1], [np.nan, 0]])
    assert pareto_mask(v, ["min", "min"]).tolist() == [True, False, False, True, True, False]
    # a max objective flips the order
    assert pareto_mask(v[:4], ["min", "max"]).tolist() == [False, False, False, True]  # (0, 3) dominates
    assert pareto_mask(v[:3], ["min", "max"]).tolist() == [False, False, True]


def test_pareto_mask_against_brute_force(rng):
    v = rng.integers(0, 6, size=(300, 3)).astype(float)
    senses = ["min", "min", "max"]
    s = v * np.array([1, 1, -1])
    brute = [not any(np.all(s[j] <= s[i]) and np.any(s[j] < s[i]) for j in range(len(s))) for i in range(len(s))]
    assert pareto_mask(v, senses).tolist() == brute


def _table():
    return pd.DataFrame({
        "case_id": list("abcdef"), "index": range(6), "status": ["ok"] * 5 + ["error"],
        "strategy": ["none", "gpu_smoothing", "rack_storage", "gpu_smoothing+rack_storage", "rack_storage", None],
        "spec_name": ["s1", "s1", "s1", "s1", "s2", "s1"],
        "gpu_smoothing.floor_frac": [0, .5, 0, .5, 0, .9],
        "cost.storage_capex_usd": [0., 0., 100., 50., 10., np.nan],
        "energy.energy_overhead_frac": [0., .1, .01, .05, .01, np.nan],
        "compliance_margin.min": [-.5, .1, .2, .1, -.1, np.nan],
        "compliance.compliant": pd.array([False, True, True, True, False, pd.NA], dtype="boolean"),
        "cost.total_usd": [0., 500., 120., 300., 10., np.nan],
        "cost.energy_usd_per_year": [0., 50., 2., 25., 0., np.nan],
    })


def test_pareto_front_per_spec_and_ok_only():
    f = pareto_front(_table())
    assert f["case_id"].tolist() == list("abcde")
    # s1: a (cheapest, lowest overhead) and c (best margin) are on the front, b is dominated by d? no:
    # b = (0, .1, .1), d = (50, .05, .1): neither dominates; all of a, b, c, d are on it
    assert f.set_index("case_id")["pareto"].to_dict() == {"a": True, "b": True, "c": True, "d": True, "e": True}


def test_cheapest_compliant_by_total_cost():
    c = cheapest_compliant(_table()).set_index("spec_name")
    assert c.loc["s1", "case_id"] == "c"
    assert "no compliant case" in c.loc["s2", "note"]
    assert pd.isna(c.loc["s2", "case_id"])


def test_strategy_table():
    t = strategy_table(_table()).set_index(["spec_name", "strategy"])
    assert t.loc[("s1", "none"), "n_compliant"] == 0
    assert t.loc[("s1", "gpu_smoothing"), "total_usd"] == pytest.approx(500.0)
    assert t.loc[("s2", "rack_storage"), "n_cases"] == 1
    assert len(t) == 5
