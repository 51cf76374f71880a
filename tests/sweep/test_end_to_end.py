"""Sweeps through the real co-simulation (``facility.run.orchestrator.run_scenario``) on a tiny scenario."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from facility.sweep import run_sweep

TINY = """
schema_version = 1
name = "tiny_sweep"
seed = 1
[time]
horizon_s = 10.0
dt_s = 0.02
[[jobs]]
name = "job"
n_gpus = 1000
gpu = "gb200"
workload = "square"
period_s = 2.0
compute_frac = 0.7
p_low_frac = 0.2
[rack_storage]
enabled = true
p_rated_mw = 0.5
e_rated_mwh = 0.01
cost_usd_per_kw = 100.0
cost_usd_per_kwh = 500.0
[controller]
kind = "moving_average"
window_s = 5.0
[spec]
window_s = 5.0
max_window_swing_mw = 0.5
"""

VOLATILE = ["wall_s", "case_s"]


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY)
    return p


def _check_against_case_metrics(df, out):
    for _, row in df.iterrows():
        m = json.loads((out / "cases" / row["case_id"] / "metrics.json").read_text())
        assert row["pcc.max_window_swing_mw"] == pytest.approx(m["pcc"]["max_window_swing_mw"])
        assert bool(row["compliance.compliant"]) == m["compliance"]["compliant"]
        assert row["storage.rack_storage.e_rated_mwh"] == pytest.approx(row["rack_storage.e_rated_mwh"])


def test_real_run_serial_and_dask_identical(tiny, tmp_path):
    sets = ["rack_storage.e_rated_mwh=0.001,0.01"]
    a = run_sweep(tiny, sets, tmp_path / "a", workers=1, progress=False)
    b = run_sweep(tiny, sets, tmp_path / "b", executor="dask", workers=1, dask_processes=False, progress=False)
    assert (a["status"] == "ok").all(), a["error"].tolist()
    pd.testing.assert_frame_equal(a.drop(columns=VOLATILE), b.drop(columns=VOLATILE))
    _check_against_case_metrics(a, tmp_path / "a")
    # run_scenario itself is a valid case function (keyword-only out_dir, Results returned)
    c = run_sweep(tiny, sets, tmp_path / "c", workers=1, progress=False, case_fn="facility.run.orchestrator:run_scenario")
    pd.testing.assert_frame_equal(a.drop(columns=VOLATILE), c.drop(columns=VOLATILE))
    # more storage energy never costs less
    assert a["cost.storage_capex_usd"].is_monotonic_increasing
    for f in ("timeseries.parquet", "report.html", "scenario.resolved.toml"):
        assert (tmp_path / "a" / "cases" / a["case_id"].iloc[0] / f).is_file()


@pytest.mark.slow
def test_real_24_case_sweep_local_pool_and_dask_cluster(tiny, tmp_path):
    sets = ["rack_storage.e_rated_mwh=0.001,0.003,0.01", "controller.window_s=2,5",
            "spec.max_window_swing_mw=0.3,0.5,0.8,1.2"]
    a = run_sweep(tiny, sets, tmp_path / "a", workers=2, progress=False)
    b = run_sweep(tiny, sets, tmp_path / "b", executor="dask", workers=2, progress=False)
    assert len(a) == 24 and (a["status"] == "ok").all(), a["error"].tolist()
    pd.testing.assert_frame_equal(a.drop(columns=VOLATILE), b.drop(columns=VOLATILE))
    _check_against_case_metrics(a, tmp_path / "a")


def _optimizer_ready() -> bool:
    try:
        from facility.optimize import size_storage, sizing_to_json  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _optimizer_ready(), reason="facility.optimize.size_storage not available yet")
def test_size_mode_through_size_scenario(tiny, tmp_path):
    text = TINY.replace("p_rated_mw = 0.5\ne_rated_mwh = 0.01\n",
                        "extendable = true\nmax_p_rated_mw = 5.0\nmax_e_rated_mwh = 0.1\n")
    assert text != TINY
    tiny.write_text(text)
    df = run_sweep(tiny, ["spec.max_window_swing_mw=0.4,0.8"], tmp_path / "s", mode="size", workers=1,
                   progress=False)
    assert (df["status"] == "ok").all(), df["error"].tolist()
    p_opt = [c for c in df.columns if c.startswith("sizing.") and c.endswith("p_rated_mw_opt")]
    assert p_opt, list(df.columns)
    # a looser limit never needs more storage power
    assert df[p_opt[0]].iloc[1] <= df[p_opt[0]].iloc[0] + 1e-6
    # the verification run used the sized rating
    assert df["storage.rack_storage.p_rated_mw"].tolist() == pytest.approx(df[p_opt[0]].tolist(), rel=1e-6)
    assert (tmp_path / "s" / "cases" / df["case_id"].iloc[0] / "sizing.json").is_file()
