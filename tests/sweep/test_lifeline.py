"""A SIGKILLed Dask sweep takes its LocalCluster's workers with it, a case of it on someone
else's cluster is not published, and ``--resume`` finishes the sweep afterwards."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from facility.sweep import load_records, run_sweep

from .conftest import SYNTHETIC

psutil = pytest.importorskip("psutil")
pytest.importorskip("distributed")

REPO = Path(__file__).resolve().parents[2]
#: 8 cases (of 0.3 s each in the first test)
SET_8 = ["gpu_smoothing.floor_frac=0.2:0.8:4", "spec=paper_example,caiso_2026_straw"]


def _sweep_cmd(scen: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "facility.sweep", str(scen), *sum((["--set", s] for s in SET_8), []),
            "--out", str(out), "--case-fn", SYNTHETIC, "--no-progress", *extra]


def _start(cmd: list[str]) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def _wait_for(cond, proc: subprocess.Popen, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended early (exit {proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the sweep did not reach the moment to kill it")
        time.sleep(0.02)


def _published(out: Path) -> list[str]:
    cases = out / "cases"
    return sorted(p.name for p in cases.iterdir() if not p.name.startswith(".")) if cases.is_dir() else []


def _running(procs) -> list[int]:
    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _assert_whole(out: Path) -> None:
    """Every published case folder holds a readable record (nothing partial looks complete)."""
    assert len(load_records(out)) == len(_published(out))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process tree checks on Linux")
def test_sigkilled_dask_sweep_takes_its_cluster_workers_and_resumes(scenario_file, tmp_path):
    scen = scenario_file("synthetic:sleep=0.3")
    out = tmp_path / "sw"
    proc = _start(_sweep_cmd(scen, out, "--executor", "dask", "--workers", "2"))
    # mid-run: a case finished and the two workers busy with the next ones
    _wait_for(lambda: len(_published(out)) >= 1
              and sum(p.name.startswith(".tmp-") for p in (out / "cases").iterdir()) >= 1, proc)
    tree = psutil.Process(proc.pid).children(recursive=True)
    workers = [p for p in tree if "spawn_main" in " ".join(p.cmdline())]
    assert len(workers) == 2, [p.cmdline() for p in tree]
    os.kill(proc.pid, signal.SIGKILL)        # no cleanup code of the sweep runs
    proc.wait()
    deadline = time.monotonic() + 5.0
    while _running(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(tree) == [], "processes of the killed sweep still run"
    _assert_whole(out)
    n_done = len(_published(out))
    assert 1 <= n_done < 8
    time.sleep(0.5)                          # longer than a case: nobody writes on
    assert len(_published(out)) == n_done

    df = run_sweep(scen, SET_8, out, case_fn=SYNTHETIC, workers=1, progress=False, resume=True,
                   study_outputs=False)
    assert len(df) == 8 and (df["status"] == "ok").all()
    assert [p.name for p in (out / "cases").iterdir() if p.name.startswith(".")] == []


def test_a_killed_sweeps_cases_on_an_existing_cluster_are_dropped_not_published(scenario_file, tmp_path,
                                                                                 caplog):
    """--scheduler: the cluster is not the sweep's and stays; the case running when the sweep
    died finishes computing but is not published, the queued ones never start."""
    from distributed import LocalCluster

    caplog.set_level(logging.ERROR)
    scen = scenario_file("synthetic:sleep=1.5")
    out = tmp_path / "sw"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster:
        worker = next(iter(cluster.workers.values()))
        proc = _start(_sweep_cmd(scen, out, "--scheduler", cluster.scheduler_address))
        _wait_for(lambda: any(p.name.startswith(".tmp-") for p in (out / "cases").iterdir())
                  if (out / "cases").is_dir() else False, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10.0  # the running case ends (≤ 1.5 s), nothing else starts
        while (worker.state.executing_count or any(p.name.startswith(".tmp-") for p in (out / "cases").iterdir())) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.state.executing_count == 0
        time.sleep(0.3)
        assert worker.state.executing_count == 0 and not worker.state.ready, "queued cases of the dead sweep ran"
        assert _published(out) == []          # the one that ran is not published
        assert list((out / "cases").iterdir()) == []
        assert cluster.status.name == "running"   # the cluster is someone else's: it stays


_WORKER = ("import os, sys, time\n"
           "from facility.sweep.lifeline import die_with_parent\n"
           "die_with_parent(int(sys.argv[1]), poll_s=0.1, deathsig=False)\n"
           "print(os.getpid(), flush=True)\n"
           "time.sleep(60)\n")
_SPAWN = ("import os, subprocess, sys, time\n"
          "subprocess.Popen([sys.executable, '-c', sys.argv[1], *sys.argv[2:]])\n"
          "time.sleep(60)\n")


@pytest.mark.parametrize("via_helper", [False, True], ids=["direct_child", "through_a_helper_process"])
def test_die_with_parent_ends_the_worker_when_the_sweep_is_killed(via_helper):
    """The watch thread alone (no PR_SET_PDEATHSIG): a worker started by the sweep, or by a
    helper process of it (a fork server), ends within a poll after the sweep's SIGKILL."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # sweep -> worker, or sweep -> helper -> worker; the worker prints its pid once armed
    if via_helper:
        code = ("import os, subprocess, sys, time\n"
                "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], str(os.getpid())])\n"
                "time.sleep(60)\n")
        argv = [sys.executable, "-c", code, _SPAWN, _WORKER]
    else:
        code = ("import os, subprocess, sys, time\n"
                "subprocess.Popen([sys.executable, '-c', sys.argv[1], str(os.getpid())])\n"
                "time.sleep(60)\n")
        argv = [sys.executable, "-c", code, _WORKER]
    sweep = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, cwd=REPO)
    worker = psutil.Process(int(sweep.stdout.readline()))
    tree = psutil.Process(sweep.pid).children(recursive=True)
    assert worker in tree
    os.kill(sweep.pid, signal.SIGKILL)
    sweep.wait()
    deadline = time.monotonic() + 3.0
    while _running([worker]) and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = _running([worker])
    for p in tree:          # the helper process is not ours to watch; end it here
        if p.pid != worker.pid and _running([p]):
            p.kill()
    if alive:
        worker.kill()
        pytest.fail("the worker outlived its sweep")
