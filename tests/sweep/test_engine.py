"""The sweep engine: executors agree, failures are rows, resume runs only missing cases."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from facility.errors import ScenarioError
from facility.sweep import add_sweep_arguments, load_records, main_sweep, run_sweep

from .conftest import SET_24, SYNTHETIC

REPO = Path(__file__).resolve().parents[2]
VOLATILE = ["wall_s", "case_s"]


def _stable(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=VOLATILE).reset_index(drop=True)


def test_24_cases_local_and_dask_identical(scenario_file, tmp_path):
    scen = scenario_file()
    local = run_sweep(scen, SET_24, tmp_path / "local", case_fn=SYNTHETIC, workers=2, progress=False)
    dask = run_sweep(scen, SET_24, tmp_path / "dask", case_fn=SYNTHETIC, executor="dask", workers=2,
                     dask_processes=False, progress=False)
    assert len(local) == 24 and (local["status"] == "ok").all(), local["error"].tolist()
    pd.testing.assert_frame_equal(_stable(local), _stable(dask))
    # the table on disk is the returned one
    disk = pd.read_parquet(tmp_path / "local" / "sweep.parquet")
    pd.testing.assert_frame_equal(_stable(disk), _stable(local), check_dtype=False)
    assert len(pd.read_csv(tmp_path / "dask" / "sweep.csv")) == 24
    # one row per case with its overrides and the flattened metrics
    assert local["gpu_smoothing.floor_frac"].tolist()[:6] == [0.2] * 6
    assert sorted(set(local["spec"])) == ["caiso_2026_straw", "paper_example"]
    for col in ("pcc.max_window_swing_mw", "energy.energy_overhead_frac", "compliance.compliant",
                "compliance_margin.min", "cost.storage_capex_usd", "cost.total_usd"):
        assert col in local.columns
    # study outputs
    for name in ("pareto.png", "pareto.html", "cheapest.csv", "strategies.csv", "pareto.csv"):
        assert (tmp_path / "local" / name).stat().st_size > 0
    # per-case folders, complete
    assert len(list((tmp_path / "local" / "cases").iterdir())) == 24
    assert all((tmp_path / "local" / "cases" / c / "metrics.json").is_file() for c in local["case_id"])


def test_serial_matches_pool(scenario_file, tmp_path):
    scen = scenario_file()
    a = run_sweep(scen, SET_24[:2], tmp_path / "a", case_fn=SYNTHETIC, workers=1, progress=False)
    b = run_sweep(scen, SET_24[:2], tmp_path / "b", case_fn=SYNTHETIC, workers=2, progress=False)
    pd.testing.assert_frame_equal(_stable(a), _stable(b))


def test_failing_case_is_recorded_and_sweep_goes_on(scenario_file, tmp_path):
    scen = scenario_file()
    df = run_sweep(scen, ["description=ok,synthetic:fail,x", "gpu_smoothing.floor_frac=0.5,0.7"],
                   tmp_path / "out", case_fn=SYNTHETIC, workers=2, progress=False)
    assert len(df) == 6
    st = df.set_index(["description", "gpu_smoothing.floor_frac"])["status"]
    assert st[("synthetic:fail", 0.5)] == "error" and st[("synthetic:fail", 0.7)] == "error"
    assert (df["status"] == "ok").sum() == 4
    err = df[df["description"] == "synthetic:fail"].iloc[0]
    assert err["error_type"] == "ScenarioError" and "synthetic failure" in err["error"]
    # an error row still has its own case folder (it is a result) and no metrics
    rec = json.loads((tmp_path / "out" / "cases" / err["case_id"] / "case.json").read_text())
    assert rec["status"] == "error" and "Traceback" in rec["traceback"]
    assert pd.isna(err["pcc.max_window_swing_mw"])


def test_out_dir_with_a_sweep_needs_resume(scenario_file, tmp_path):
    scen = scenario_file()
    scen.write_text(scen.read_text().replace("dt_s = 0.02", "dt_s = 0.005"))  # resolves lipa's 55 Hz band
    first = run_sweep(scen, ["spec=paper_example"], tmp_path / "o", case_fn=SYNTHETIC, workers=1, progress=False)
    assert first["status"].tolist() == ["ok"]
    with pytest.raises(ScenarioError, match="--resume"):
        run_sweep(scen, ["spec=paper_example"], tmp_path / "o", case_fn=SYNTHETIC, workers=1, progress=False)
    # resuming a complete sweep runs nothing and gives the same table
    df = run_sweep(scen, ["spec=paper_example"], tmp_path / "o", case_fn=SYNTHETIC, workers=1, progress=False,
                   resume=True)
    pd.testing.assert_frame_equal(df, first)
    # adding values and resuming runs only the new case
    started = {r["case_id"]: r["started_utc"] for r in load_records(tmp_path / "o")}
    df = run_sweep(scen, ["spec=paper_example,caiso_2026_straw"], tmp_path / "o", case_fn=SYNTHETIC, workers=1,
                   progress=False, resume=True)
    assert len(df) == 2 and (df["status"] == "ok").all()
    assert df["case_id"].iloc[0] == first["case_id"].iloc[0]
    after = {r["case_id"]: r["started_utc"] for r in load_records(tmp_path / "o")}
    assert after[first["case_id"].iloc[0]] == started[first["case_id"].iloc[0]] and len(after) == 2
    # a value inserted in front shifts the positions: the finished cases are renamed, not rerun
    started = {r["overrides"]["spec"]: r["started_utc"] for r in load_records(tmp_path / "o")}
    df = run_sweep(scen, ["spec=lipa,paper_example,caiso_2026_straw"], tmp_path / "o", case_fn=SYNTHETIC,
                   workers=1, progress=False, resume=True)
    recs = {r["overrides"]["spec"]: r for r in load_records(tmp_path / "o", df["case_id"].tolist())}
    assert [recs[k]["started_utc"] for k in started] == list(started.values())
    assert [recs[k]["index"] for k in ("lipa", "paper_example", "caiso_2026_straw")] == [0, 1, 2]
    assert df["spec"].tolist() == ["lipa", "paper_example", "caiso_2026_straw"]
    # a changed scenario file refuses to resume
    scen.write_text(scen.read_text().replace("n_gpus = 1000", "n_gpus = 2000"))
    with pytest.raises(ScenarioError, match="scenario file changed"):
        run_sweep(scen, ["spec=paper_example"], tmp_path / "o", case_fn=SYNTHETIC, workers=1, progress=False,
                  resume=True)


def test_resume_after_kill_runs_only_missing_cases(scenario_file, tmp_path):
    scen = scenario_file("synthetic:sleep=0.25")
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "facility.sweep", str(scen), *sum((["--set", s] for s in SET_24), []),
           "--out", str(out), "--case-fn", SYNTHETIC, "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=REPO, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    cases = out / "cases"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cases.is_dir() and sum(not p.name.startswith(".") for p in cases.iterdir()) >= 6:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r["case_id"]: r["started_utc"] for r in load_records(out)}
    assert 6 <= len(before) < 24
    assert not (out / "sweep.parquet").exists()

    df = run_sweep(scen, SET_24, out, case_fn=SYNTHETIC, workers=2, progress=False, resume=True)
    assert len(df) == 24 and (df["status"] == "ok").all()
    after = {r["case_id"]: r["started_utc"] for r in load_records(out)}
    assert set(after) == set(df["case_id"])
    kept = {c for c in before if after[c] == before[c]}
    assert kept == set(before)  # finished cases were not run again
    assert not [p for p in cases.iterdir() if p.name.startswith(".")]  # stale temp folders removed


def test_cli_flags_and_exit_codes(scenario_file, tmp_path, capsys):
    scen = scenario_file()
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    args = parser.parse_args([str(scen), "--set", "rack_storage.e_rated_mwh=0,0.0001", "--out", str(tmp_path / "c"),
                              "--case-fn", SYNTHETIC, "--workers", "1", "--no-progress"])
    assert main_sweep(args) == 0
    assert "2 of 2 cases ok" in capsys.readouterr().err
    bad = parser.parse_args([str(scen), "--set", "nope", "--out", str(tmp_path / "d"), "--no-progress"])
    assert main_sweep(bad) == 2
    allfail = parser.parse_args([str(scen), "--set", "time.dt_s=-1", "--out", str(tmp_path / "e"),
                                 "--case-fn", SYNTHETIC, "--workers", "1", "--no-progress"])
    assert main_sweep(allfail) == 2  # every case failed on bad input


def test_add_arguments_skips_what_a_parent_provides():
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario")
    parser.add_argument("--set", action="append", dest="set")
    add_sweep_arguments(parser)
    args = parser.parse_args(["s.toml", "--set", "a.b=1,2", "--out", "o", "--executor", "dask",
                              "--scheduler", "tcp://h:8786", "--mode", "size", "--resume", "--cases", "c.csv"])
    assert args.set == ["a.b=1,2"] and args.executor == "dask" and args.mode == "size" and args.resume


def test_existing_scheduler_and_overhead(scenario_file, tmp_path):
    distributed = pytest.importorskip("distributed")
    scen = scenario_file()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        df = run_sweep(scen, SET_24[:2], tmp_path / "sched", case_fn=SYNTHETIC, scheduler=cluster.scheduler_address,
                       progress=False)
    ref = run_sweep(scen, SET_24[:2], tmp_path / "ref", case_fn=SYNTHETIC, workers=1, progress=False)
    pd.testing.assert_frame_equal(_stable(df), _stable(ref))
    # sweep overhead per case, excluding the case's own work (benchmarks/bench_sweep.py measures it at scale)
    t0 = time.perf_counter()
    df = run_sweep(scen, SET_24, tmp_path / "timed", case_fn=SYNTHETIC, workers=1, progress=False)
    wall = time.perf_counter() - t0
    assert (wall - df["case_s"].sum()) / len(df) < 0.2


def test_unreachable_scheduler_is_bad_input(scenario_file, tmp_path, monkeypatch):
    monkeypatch.setattr("facility.sweep.executors.CONNECT_TIMEOUT_S", 1.0)
    with pytest.raises(ScenarioError, match="cannot connect"):
        run_sweep(scenario_file(), ["spec=paper_example"], tmp_path / "x", case_fn=SYNTHETIC,
                  scheduler="tcp://127.0.0.1:9", progress=False)


def test_size_mode_columns_and_case_ids_differ_from_run(scenario_file, tmp_path):
    scen = scenario_file()
    run = run_sweep(scen, ["rack_storage.e_rated_mwh=0.0001"], tmp_path / "r", case_fn=SYNTHETIC, workers=1,
                    progress=False)
    size = run_sweep(scen, ["rack_storage.e_rated_mwh=0.0001"], tmp_path / "s", case_fn=SYNTHETIC, workers=1,
                     mode="size", progress=False)
    assert size["sizing.rack_storage.e_rated_mwh_opt"].tolist() == [0.0001]
    assert "sizing.rack_storage.e_rated_mwh_opt" not in run.columns
    assert size["case_id"].iloc[0] != run["case_id"].iloc[0]
    assert size["strategy"].iloc[0] == "gpu_smoothing+rack_storage"


def test_worker_without_the_out_folder_reports_it(scenario_file, tmp_path):
    from facility.config.load import read_toml
    from facility.sweep.worker import CaseTask, execute_case

    scen = scenario_file()
    rec = execute_case(CaseTask(case_id="c0000-deadbeef", index=0, case={}, overrides=(), raw=read_toml(scen),
                                source=str(scen), base_dir=str(tmp_path), cases_dir=str(tmp_path / "missing"),
                                case_fn=SYNTHETIC))
    assert rec["status"] == "error" and rec["persisted"] is False and "shared file system" in rec["error"]


# --- issue 18: --out policy, overrides validated before any case, exit code of failed cases ---

def test_out_folder_policy(scenario_file, tmp_path, monkeypatch):
    from facility.report.outdir import output_kind

    scen = scenario_file()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    for kw in ({}, {"force": True}, {"resume": True}):
        with pytest.raises(ScenarioError, match="did not write"):
            run_sweep(scen, ["spec=paper_example"], foreign, case_fn=SYNTHETIC, workers=1, progress=False, **kw)
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    with pytest.raises(ScenarioError, match="exclude each other"):
        run_sweep(scen, ["spec=paper_example"], tmp_path / "n", case_fn=SYNTHETIC, force=True, resume=True)
    monkeypatch.chdir(foreign)
    with pytest.raises(ScenarioError, match="current directory"):
        run_sweep(scen, ["spec=paper_example"], foreign, case_fn=SYNTHETIC, workers=1, progress=False, force=True)
    # an earlier sweep: every entry it wrote is recognised; --force replaces it with a fresh one
    out = tmp_path / "sw"
    first = run_sweep(scen, ["spec=paper_example,caiso_2026_straw"], out, case_fn=SYNTHETIC, workers=1,
                      progress=False)
    assert output_kind(out) == "sweep"
    with pytest.raises(ScenarioError, match="--resume to finish it or --force"):
        run_sweep(scen, ["spec=paper_example"], out, case_fn=SYNTHETIC, workers=1, progress=False)
    df = run_sweep(scen, ["spec=paper_example"], out, case_fn=SYNTHETIC, workers=1, progress=False, force=True)
    assert len(df) == 1 and len(first) == 2
    assert sorted(p.name for p in (out / "cases").iterdir()) == df["case_id"].tolist()


@pytest.mark.parametrize("item, pattern", [
    ("rack_storage.p_rated_mw=ten,20", r"rack_storage\.p_rated_mw = 'ten': .*valid number"),
    ("rack_storage.p_rated_mw=10:30", r"rack_storage\.p_rated_mw = '10:30'.*START:STOP:N"),
    ("rack_storage.p_rated_mx=1,2", r"rack_storage\.p_rated_mx: unknown key"),
    ("time.dt_s=0.02,-1", r"time\.dt_s = -1"),
])
def test_bad_overrides_stop_the_sweep_before_any_case(scenario_file, tmp_path, item, pattern):
    scen = scenario_file()
    out = tmp_path / "o"
    with pytest.raises(ScenarioError, match=pattern) as info:
        run_sweep(scen, [item, "spec=paper_example,caiso_2026_straw"], out, case_fn=SYNTHETIC, workers=1,
                  progress=False)
    assert "sweep cases do not validate; no case was run" in str(info.value)
    assert not out.exists()


def test_exit_code_and_count_of_failed_cases(scenario_file, tmp_path, capsys):
    from facility.errors import EXIT_CASES_FAILED

    scen = scenario_file()
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    some = parser.parse_args([str(scen), "--set", "description=ok,synthetic:fail,x", "--out", str(tmp_path / "a"),
                              "--case-fn", SYNTHETIC, "--workers", "1", "--no-progress"])
    assert main_sweep(some) == EXIT_CASES_FAILED == 5
    err = capsys.readouterr().err
    assert "1 of 3 cases failed" in err and "synthetic failure" in err
    assert len(pd.read_parquet(tmp_path / "a" / "sweep.parquet")) == 3  # the table is still written
    every = parser.parse_args([str(scen), "--set", "description=synthetic:fail", "--out", str(tmp_path / "b"),
                               "--case-fn", SYNTHETIC, "--workers", "1", "--no-progress"])
    assert main_sweep(every) == 2  # the first error's code (ScenarioError)
    assert "every case failed (1 of 1)" in capsys.readouterr().err
    p = subprocess.run([sys.executable, "-m", "facility", "sweep", str(scen), "--set", "spec=paper_example",
                        "--set", "rack_storage.p_rated_mw=10:30", "--out", str(tmp_path / "c"), "--no-progress"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 2 and "START:STOP:N" in p.stderr and "Traceback" not in p.stderr


def test_cli_prints_the_table_on_stdout(scenario_file, tmp_path, capsys):
    scen = scenario_file()
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    args = parser.parse_args([str(scen), "--set", "rack_storage.e_rated_mwh=0,0.0001,0.0003", "--out",
                              str(tmp_path / "t"), "--case-fn", SYNTHETIC, "--workers", "1", "--no-progress"])
    assert main_sweep(args) == 0
    out = capsys.readouterr().out.splitlines()
    df = pd.read_parquet(tmp_path / "t" / "sweep.parquet")
    assert out[0].split()[:3] == ["case_id", "rack_storage.e_rated_mwh", "status"]
    assert [line.split()[0] for line in out[1:4]] == df["case_id"].tolist()
    assert "compliant" in out[0] and "cost_musd" in out[0]
