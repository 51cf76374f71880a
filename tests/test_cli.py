"""CLI smoke tests: exit codes, messages, output files."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from facility.cli import main
from tests.conftest import REPO, SCENARIOS


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "facility", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=600)


def test_validate_ok_and_exit_codes(tmp_path, capsys):
    assert main(["validate", str(SCENARIOS / "default.toml")]) == 0
    assert "ok:" in capsys.readouterr().out
    assert main(["validate", str(tmp_path / "missing.toml")]) == 2
    assert "no such scenario file" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("schema_version = 1\n[[jobs]]\nn_gpus = 10\nbogus = 1\n")
    assert main(["validate", str(bad)]) == 2
    assert "jobs.0.bogus: unknown key" in capsys.readouterr().err


def test_bad_input_never_tracebacks(tmp_path):
    p = run_cli("validate", SCENARIOS / "default.toml", "--set", "time.dt_s=-1")
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert "time.dt_s = -1" in p.stderr and "unit: s" in p.stderr
    p = run_cli("validate", SCENARIOS / "default.toml", "--set", "nonsense")
    assert p.returncode == 2 and "expected KEY=VALUE" in p.stderr


def test_run_writes_every_output(tmp_path):
    out = tmp_path / "run"
    p = run_cli("run", SCENARIOS / "default.toml", "--out", out, "--set", "time.horizon_s=20")
    assert p.returncode == 0, p.stderr
    for name in ("metrics.json", "timeseries.parquet", "report.html", "scenario.resolved.toml", "manifest.json",
                 "power.png", "zoom.png", "spectrum.png", "storage.png", "events.json"):
        assert (out / name).is_file(), name
    m = json.loads((out / "metrics.json").read_text())
    for block in ("raw", "pcc", "energy", "storage", "electrical", "training", "compliance"):
        assert block in m
    man = json.loads((out / "manifest.json").read_text())
    assert man["seed"] == 7 and "versions" in man
    assert not list(tmp_path.glob(".run.tmp-*"))


def test_trace_csv(tmp_path):
    out = tmp_path / "t.csv"
    p = run_cli("trace", SCENARIOS / "default.toml", "--out", out, "--set", "time.horizon_s=10")
    assert p.returncode == 0, p.stderr
    head = out.read_text().splitlines()[0].split(",")
    assert {"t_s", "p_gpu_mw", "p_site_mw"} <= set(head)


def test_failed_run_leaves_no_half_result(tmp_path, monkeypatch):
    import facility.report.io as rio

    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("earlier result")

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(rio, "manifest", boom)
    rc = main(["run", str(SCENARIOS / "default.toml"), "--out", str(out), "--set", "time.horizon_s=10", "--no-plots"])
    assert rc == 1
    assert (out / "keep.txt").read_text() == "earlier result"
    assert not list(tmp_path.glob(".run.tmp-*"))


@pytest.mark.parametrize("cmd", ["size"])
def test_size_requires_extendable(cmd, tmp_path, capsys):
    assert main([cmd, str(SCENARIOS / "default.toml"), "--out", str(tmp_path / "x")]) == 2
    assert "nothing to size" in capsys.readouterr().err
