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
    args = ["run", str(SCENARIOS / "default.toml"), "--out", str(out), "--set", "time.horizon_s=10", "--no-plots"]
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(rio, "manifest", boom)
    assert main(args + ["--force"]) == 1
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the earlier result stays whole
    assert not list(tmp_path.glob(".run.tmp-*"))


@pytest.mark.parametrize("cmd", ["size"])
def test_size_requires_extendable(cmd, tmp_path, capsys):
    assert main([cmd, str(SCENARIOS / "default.toml"), "--out", str(tmp_path / "x")]) == 2
    assert "nothing to size" in capsys.readouterr().err


# --- --out safety (issue 18, item 1): refused before anything runs, exit 2 -----------------

@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if a simulation, sizing or trace starts."""
    import facility.run.orchestrator as sim
    import facility.sizing.pipeline as sizing

    def forbidden(*a, **k):
        raise AssertionError("the simulation started although --out was refused")

    for mod, name in ((sim, "run_scenario"), (sizing, "size_scenario"), (sim, "generate_trace")):
        monkeypatch.setattr(mod, name, forbidden)


def _tree(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_out_onto_a_folder_with_a_users_file(tmp_path, capsys, no_simulation):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    for extra in ([], ["--force"]):
        assert main(["run", str(SCENARIOS / "default.toml"), "--out", str(out), *extra]) == 2
        assert "notes.txt" in capsys.readouterr().err
    assert _tree(out) == {"notes.txt": b"my notes"}


def test_out_onto_an_existing_file(tmp_path, capsys, monkeypatch, no_simulation):
    (tmp_path / "README.md").write_text("# project\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(SCENARIOS / "default.toml"), "--out", "README.md", "--force"]) == 2
    assert "existing file" in capsys.readouterr().err
    assert _tree(tmp_path) == {"README.md": b"# project\n"}  # no hidden .README.md.old-* either


@pytest.mark.parametrize("out", [".", "..", "some/dir/.."])
def test_out_onto_the_current_directory_or_a_parent(tmp_path, capsys, monkeypatch, no_simulation, out):
    (tmp_path / "some" / "dir").mkdir(parents=True)
    (tmp_path / "some" / "data.csv").write_text("a,b\n")
    monkeypatch.chdir(tmp_path / "some")
    before = _tree(tmp_path)
    assert main(["size", str(SCENARIOS / "sizing_start_ramp.toml"), "--out", out, "--force"]) == 2
    assert "--out" in capsys.readouterr().err
    assert _tree(tmp_path) == before


def test_out_unwritable_fails_at_once(capsys, no_simulation):
    assert main(["run", str(SCENARIOS / "default.toml"), "--out", "/proc/x"]) == 2
    err = capsys.readouterr().err
    assert "cannot write in /proc" in err and "unexpected" not in err


def test_earlier_result_is_replaced_only_with_force(tmp_path, capsys):
    out = tmp_path / "res"
    args = ["run", str(SCENARIOS / "default.toml"), "--out", str(out), "--no-plots", "--set"]
    assert main(args + ["time.horizon_s=10"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["facility_output"] == "run" and set(man["files"]) == {p.name for p in out.iterdir()}
    capsys.readouterr()
    assert main(args + ["time.horizon_s=11"]) == 2
    err = capsys.readouterr().err
    assert "earlier facility run result" in err and "pass --force" in err
    assert json.loads((out / "manifest.json").read_text())["n_steps"] == 1000  # untouched
    assert main(args + ["time.horizon_s=11", "--force"]) == 0
    assert json.loads((out / "manifest.json").read_text())["n_steps"] == 1100  # the new result


def test_trace_out_file(tmp_path, capsys, no_simulation):
    f = tmp_path / "trace.csv"
    f.write_text("my data\n")
    assert main(["trace", str(SCENARIOS / "default.toml"), "--out", str(f)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert f.read_text() == "my data\n"
    assert main(["trace", str(SCENARIOS / "default.toml"), "--out", str(tmp_path)]) == 2
    assert main(["trace", str(SCENARIOS / "default.toml"), "--out", "/proc/x.csv"]) == 2
    assert main(["trace", str(SCENARIOS / "default.toml"), "--out", str(tmp_path / "t.xlsx")]) == 2


def test_trace_force_replaces_only_a_file_facility_wrote(tmp_path, capsys):
    f = tmp_path / "trace.parquet"
    f.write_text("old")
    args = ["trace", str(SCENARIOS / "default.toml"), "--out", str(f), "--set", "time.horizon_s=10"]
    assert main(args + ["--force"]) == 2                     # a user's file: kept, also with --force
    assert "facility did not write it" in capsys.readouterr().err and f.read_text() == "old"
    f.unlink()
    assert main(args) == 0
    import pandas as pd

    assert main(args[:-1] + ["time.horizon_s=12", "--force"]) == 0   # facility's own: replaced
    assert len(pd.read_parquet(f)) == 1200
    assert sorted(p.name for p in tmp_path.iterdir()) == [".trace.parquet.facility.json", "trace.parquet"]


def test_export_net_checks_the_extension_and_keeps_a_users_file(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    assert main(["export-net", str(SCENARIOS / "default.toml"), "--out", str(notes), "--force"]) == 2
    assert "writes .json files" in capsys.readouterr().err and notes.read_text() == "my notes\n"
    mine = tmp_path / "net.json"
    mine.write_text("{}")
    assert main(["export-net", str(SCENARIOS / "default.toml"), "--out", str(mine), "--force"]) == 2
    assert "facility did not write it" in capsys.readouterr().err and mine.read_text() == "{}"


def test_library_run_refuses_a_foreign_folder_before_simulating(tmp_path):
    from facility.scenario import load_scenario
    from facility.errors import ScenarioError
    from facility.run.orchestrator import run_scenario

    out = tmp_path / "x"
    out.mkdir()
    (out / "a.txt").write_text("x")
    s = load_scenario(SCENARIOS / "default.toml", ["time.horizon_s=10"])
    with pytest.raises(ScenarioError, match="did not write"):
        run_scenario(s, out_dir=out, plots=False)


def test_warnings_read_as_warning_lines_once_each(monkeypatch, capsys):
    """What the library warns (a plan's gap, a fallback) reaches the CLI user as `warning:`
    lines, each message once, not as Python's `file:line: UserWarning` with a source line;
    `size` prints its own line for a gap, so the library's is dropped there."""
    import warnings

    from facility import cli
    from facility.errors import GapWarning

    def noisy(args):
        for _ in range(3):
            warnings.warn("the plan is only proven within 2 %", GapWarning)
            warnings.warn("a fallback plan was used", UserWarning)
        return 0

    for cmd in ("validate", "size"):
        monkeypatch.setitem(cli._COMMANDS, cmd, noisy)
        assert cli.main([cmd, str(SCENARIOS / "default.toml")] + (["--out", "x"] if cmd == "size" else [])) == 0
        err = capsys.readouterr().err
        assert "UserWarning" not in err and "warnings.warn" not in err
        assert err.count("warning: a fallback plan was used") == 1
        assert err.count("warning: the plan is only proven within 2 %") == (0 if cmd == "size" else 1)


def test_each_warning_is_printed_once_with_one_prefix(monkeypatch, capsys):
    import logging
    import warnings

    import facility.cli as cli

    def noisy(args):
        for _ in range(3):            # a size-and-verify loop repeating itself
            warnings.warn("storage near its SoC bound")
            logging.getLogger("facility.sizing.pipeline").warning("storage near its SoC bound")
        logging.getLogger("facility.x").warning("another one")
        return 0

    monkeypatch.setitem(cli._COMMANDS, "validate", noisy)
    assert main(["validate", str(SCENARIOS / "default.toml")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: storage near its SoC bound", "warning: another one"]
    # a second command of the same process prints its warnings again (once)
    assert main(["validate", str(SCENARIOS / "default.toml")]) == 0
    assert capsys.readouterr().err.count("warning: storage near its SoC bound") == 1


def test_debug_works_after_the_command_too(monkeypatch, capsys):
    import facility.cli as cli

    def broken(args):
        raise RuntimeError("boom")

    monkeypatch.setitem(cli._COMMANDS, "validate", broken)
    assert main(["validate", str(SCENARIOS / "default.toml")]) == 1
    assert "rerun with --debug" in capsys.readouterr().err
    for argv in (["--debug", "validate", str(SCENARIOS / "default.toml")],
                 ["validate", "--debug", str(SCENARIOS / "default.toml")],
                 ["validate", str(SCENARIOS / "default.toml"), "--debug"]):
        with pytest.raises(RuntimeError, match="boom"):
            main(argv)


def test_dask_sweep_does_not_print_the_schedulers_info_lines(tmp_path, capsys):
    pytest.importorskip("distributed")
    from facility.sweep.synthetic import SYNTHETIC_SCENARIO_TOML

    scen = tmp_path / "s.toml"
    scen.write_text(SYNTHETIC_SCENARIO_TOML.format(description=""))
    assert main(["sweep", str(scen), "--set", "spec=paper_example", "--out", str(tmp_path / "sw"),
                 "--executor", "dask", "--dask-threads", "--workers", "1", "--no-progress",
                 "--case-fn", "facility.sweep.synthetic:synthetic_case"]) == 0
    err = capsys.readouterr().err
    assert "INFO" not in err.upper().replace("INFORMATION", "") and "Scheduler at" not in err
