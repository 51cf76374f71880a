"""A sweep never deletes what it did not write: --force swaps atomically, --resume keeps
unlisted files, damaged records are rerun, and a killed sweep takes its workers with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facility.errors import ScenarioError
from facility.sweep import load_records, run_sweep

from .conftest import SET_24, SYNTHETIC

REPO = Path(__file__).resolve().parents[2]
TWO = ["spec=paper_example,caiso_2026_straw"]


def _sweep(scen, out, items=TWO, **kw):
    return run_sweep(scen, items, out, case_fn=SYNTHETIC, workers=1, progress=False, **kw)


def test_force_refuses_a_sweep_holding_a_users_files(scenario_file, tmp_path):
    scen = scenario_file()
    out = tmp_path / "sw"
    _sweep(scen, out)
    for rel in (".my_notes.txt", "cases/my_analysis/important.txt"):
        f = out / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text("mine\n")
        with pytest.raises(ScenarioError, match="did not write"):
            _sweep(scen, out, force=True)
        assert f.read_text() == "mine\n"
    assert len(load_records(out)) == 2   # the earlier sweep is whole too


def test_resume_keeps_unlisted_files_and_reruns_a_damaged_record(scenario_file, tmp_path, caplog):
    scen = scenario_file()
    out = tmp_path / "sw"
    first = _sweep(scen, out)
    keep = out / "cases" / ".keep_me"
    keep.write_text("mine\n")
    broken = out / "cases" / first["case_id"].iloc[0] / "case.json"
    text = broken.read_text()
    broken.write_text(text[: len(text) // 2])          # a truncated case.json (killed while copying)
    started = {r["case_id"]: r["started_utc"] for r in load_records(out)}
    assert list(started) == [first["case_id"].iloc[1]]  # the damaged record does not count
    df = _sweep(scen, out, resume=True)
    assert (df["status"] == "ok").all() and len(df) == 2
    assert keep.read_text() == "mine\n"
    assert "damaged case.json" in caplog.text and ".keep_me" in caplog.text
    after = {r["case_id"]: r["started_utc"] for r in load_records(out)}
    assert after[first["case_id"].iloc[1]] == started[first["case_id"].iloc[1]]   # not rerun
    assert json.loads(broken.read_text())["status"] == "ok"                        # rerun


def test_resume_cli_with_a_truncated_record_exits_0(scenario_file, tmp_path, caplog):
    from facility.cli import main

    scen = scenario_file()
    out = tmp_path / "sw"
    args = ["sweep", str(scen), "--set", TWO[0], "--out", str(out), "--case-fn", SYNTHETIC, "--workers", "1",
            "--no-progress"]
    assert main(args) == 0
    rec = next((out / "cases").iterdir()) / "case.json"
    rec.write_text('{"case_id": "c0-')
    assert main(args + ["--resume"]) == 0
    assert "running them again" in caplog.text


def _children(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_killed_force_sweep_keeps_the_old_one_and_takes_its_workers(scenario_file, tmp_path):
    scen = scenario_file("synthetic:sleep=0.25")
    out = tmp_path / "sw"
    old = _sweep(scen, out, items=["spec=paper_example"])
    before = sorted(p.name for p in out.rglob("*"))
    cmd = [sys.executable, "-m", "facility.sweep", str(scen), *sum((["--set", s] for s in SET_24), []),
           "--out", str(out), "--force", "--case-fn", SYNTHETIC, "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    tmp = []
    while time.monotonic() < deadline:
        tmp = [p for p in tmp_path.iterdir() if p.name.startswith(".sw.tmp-")]
        if tmp and (tmp[0] / "cases").is_dir() and sum(not p.name.startswith(".")
                                                       for p in (tmp[0] / "cases").iterdir()) >= 4:
            break
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.02)
    workers = _children(proc.pid)
    assert workers
    proc.send_signal(signal.SIGKILL)    # the parent only: its workers must follow on their own
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_running(w) for w in workers):
        time.sleep(0.05)
    assert not any(_running(w) for w in workers), "orphaned sweep workers"
    # the earlier sweep is whole, the half-built one is left beside it
    assert sorted(p.name for p in out.rglob("*")) == before
    assert load_records(out)[0]["case_id"] == old["case_id"].iloc[0]
    assert tmp and tmp[0].is_dir()
    # the next sweep on the same --out removes the killed one's temporary folder
    df = _sweep(scenario_file(), out, items=["spec=paper_example"], force=True)
    assert len(df) == 1
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".sw.")] == []


def test_stale_temp_of_a_live_process_or_a_users_folder_stays(scenario_file, tmp_path):
    scen = scenario_file()
    out = tmp_path / "sw"
    mine = tmp_path / ".sw.tmp-mine"            # looks alike, but has no facility marker
    mine.mkdir()
    live = tmp_path / ".sw.tmp-live"
    live.mkdir()
    (live / ".facility-tmp.json").write_text(json.dumps({"facility_temp": True, "pid": os.getpid(),
                                                         "host": os.uname().nodename}))
    _sweep(scen, out)
    assert mine.is_dir() and live.is_dir()
