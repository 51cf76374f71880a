"""Hostile input and faults: every user-file error is exit 2 naming file and key; what
validates runs; the resource estimate refuses at validate; same seed, same metrics.json.

One test per row of the table of issue 17 (``test_row_*``), then the reader's other failure
modes, the preconditions of the stages, the memory budget and determinism.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import tomli_w

from facility.cli import main
from facility.scenario import load_scenario
from facility.config.files import check_file, read_toml
from facility.errors import ScenarioError
from tests.conftest import SCENARIOS

DEFAULT = SCENARIOS / "default.toml"
LONG = "a" * 300


def _validate(capsys, *args) -> tuple[int, str]:
    rc = main(["validate", *map(str, args)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "unexpected" not in err, err
    return rc, err


# ----------------------------------------------------------------- rows of the table
def test_row_tiny_period_is_refused_at_validate(capsys):
    """jobs.0.period_s = 1e-300 (square workload) validated and then crashed the run."""
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.workload='square'", "--set", "jobs.0.period_s=1e-300")
    assert rc == 2 and "jobs.0.period_s = 1e-300" in err
    # a period that passes the schema but is shorter than two steps: named with the numbers
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.workload='square'", "--set", "jobs.0.period_s=0.015")
    assert rc == 2
    assert "jobs.0.period_s = 0.015 s is shorter than 2 steps of time.dt_s = 0.01 s" in err


@pytest.mark.parametrize("key", ["jobs.0.gpu", "spec", "grid.trafo_type", "grid.ups_type",
                                 "grid.lv_trafo_type"])
def test_row_overlong_library_name(capsys, key):
    rc, err = _validate(capsys, DEFAULT, "--set", f"{key}={LONG}")
    assert rc == 2
    assert ("spec.base" if key == "spec" else key) in err and "(300 characters)" in err
    assert "available:" in err


def test_row_overlong_trace_and_scenario_path(capsys, tmp_path):
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.workload='trace'",
                        "--set", f"jobs.0.trace_file='{tmp_path / LONG}.csv'")
    assert rc == 2 and "jobs.0.trace_file = " in err and "path too long" in err
    rc, err = _validate(capsys, tmp_path / f"{LONG}.toml")
    assert rc == 2 and "path too long" in err
    rc, err = _validate(capsys, DEFAULT, "--set", f"jobs.0.gpu={tmp_path}/{LONG}/x.toml")
    assert rc == 2 and "jobs.0.gpu = " in err and "path too long" in err


@pytest.mark.parametrize("key", ["jobs.0.gpu", "grid.ups_type", "grid.trafo_type", "spec"])
def test_row_library_path_with_invalid_toml(capsys, tmp_path, key):
    bad = tmp_path / "model" / "broken"
    bad.parent.mkdir()
    bad.write_text("tdp_w = = 700\n")
    rc, err = _validate(capsys, DEFAULT, "--set", f"{key}={bad}")
    assert rc == 2
    assert ("spec.base" if key == "spec" else key) in err and str(bad) in err
    assert "not valid TOML" in err and "line 1" in err


def test_row_deeply_nested_scenario(capsys, tmp_path):
    f = tmp_path / "deep.toml"
    f.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    rc, err = _validate(capsys, f)
    assert rc == 2 and str(f) in err and "nested" in err
    f.write_text("schema_version = 1\njobs = [{n_gpus = 8}]\nx = " + "[" * 40 + "1" + "]" * 40 + "\n")
    rc, err = _validate(capsys, f)
    assert rc == 2 and "x.0.0" in err and "nested deeper than" in err
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.name=" + "[" * 3000 + "]" * 3000)
    assert rc == 2 and "nested" in err


def test_row_scenario_without_read_permission(capsys, tmp_path, monkeypatch):
    f = tmp_path / "s.toml"
    f.write_bytes(DEFAULT.read_bytes())
    if os.geteuid() != 0:                        # a real chmod where the OS enforces it
        f.chmod(0)
        rc, err = _validate(capsys, f)
        assert rc == 2 and str(f) in err and "permission denied" in err
        f.chmod(0o600)

    def denied(self, *a, **k):                   # root reads anything: fake the OS's answer
        raise PermissionError(errno.EACCES, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    rc, err = _validate(capsys, f)
    assert rc == 2 and str(f) in err and "permission denied" in err


def test_row_trace_path_with_nul_byte(capsys):
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.workload='trace'",
                        "--set", 'jobs.0.trace_file="a\\u0000b.csv"')
    assert rc == 2 and "jobs.0.trace_file" in err and "NUL byte" in err


# ----------------------------------------------------------------- the reader
def test_reader_failure_modes(tmp_path):
    d = tmp_path / "folder"
    d.mkdir()
    with pytest.raises(ScenarioError, match=r"folder.*is a folder, not a trace file; point jobs\.1\.trace_file"):
        check_file(d, key="jobs.1.trace_file", what="trace file")
    with pytest.raises(ScenarioError, match="no such scenario file"):
        read_toml(tmp_path / "nope.toml")
    latin = tmp_path / "latin1.toml"
    latin.write_bytes("name = 'Montr\xe9al'\n".encode("latin-1"))
    with pytest.raises(ScenarioError, match=r"latin1\.toml: scenario file is not a UTF-8 text file \(byte 0xe9"):
        read_toml(latin)
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(17 * 2**20)
    with pytest.raises(ScenarioError, match="17.0 MiB; a scenario file is at most 16 MiB"):
        read_toml(big)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.toml"
        os.mkfifo(fifo)
        with pytest.raises(ScenarioError, match="not a regular file"):
            read_toml(fifo)


def test_library_names_are_the_librarys_own(tmp_path, capsys):
    # a bare name never becomes a path: '..' tricks are unknown names, not files
    rc, err = _validate(capsys, DEFAULT, "--set", "jobs.0.gpu=..")
    assert rc == 2 and "unknown GPU model; available: b200, gb200, h100" in err
    # an explicit path to a valid file works, relative to the scenario's folder
    (tmp_path / "gpus").mkdir()
    (tmp_path / "gpus" / "my_gpu.toml").write_text('tdp_w = 1000.0\nidle_w = 100.0\ngpus_per_rack = 72\n')
    raw = read_toml(DEFAULT)
    raw["jobs"][0]["gpu"] = "gpus/my_gpu.toml"
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(raw))
    s = load_scenario(f)
    assert s.jobs[0].gpu == str(tmp_path / "gpus" / "my_gpu.toml")
    # a file that is TOML but not a GPU model names file, key and field
    (tmp_path / "gpus" / "bad.toml").write_text('tdp_w = -1\nidle_w = 100.0\n')
    rc, err = _validate(capsys, DEFAULT, "--set", f"jobs.0.gpu={tmp_path}/gpus/bad.toml")
    assert rc == 2 and "jobs.0.gpu" in err and "bad.toml: tdp_w = -1" in err


def test_cases_csv_errors_name_the_file(tmp_path):
    from facility.sweep.cases import expand_cases

    with pytest.raises(ScenarioError, match=r"--cases = .*nope\.csv'?: no such cases CSV"):
        expand_cases([], tmp_path / "nope.csv")
    f = tmp_path / "c.csv"
    f.write_bytes(b"bess.e_rated_mwh\n\xff\xfe1\n")
    with pytest.raises(ScenarioError, match="not a UTF-8 text file"):
        expand_cases([], f)
    f.write_text("bess.e_rated_mwh\n1\x002\n")
    with pytest.raises(ScenarioError, match="NUL bytes"):
        expand_cases([], f)
    f.write_text('bess.e_rated_mwh,bess.e_rated_mwh\n1,2\n')
    with pytest.raises(ScenarioError, match="header repeats bess.e_rated_mwh"):
        expand_cases([], f)
    with pytest.raises(ScenarioError, match="is a folder"):
        expand_cases([], tmp_path)


# ----------------------------------------------------------------- what validates must run
@pytest.mark.parametrize("overrides, pattern", [
    (["jobs.0.compute_frac=0.999", "jobs.0.workload='square'"],
     r"communication phase \(1 - compute_frac\) x period_s = 0\.0015 s .* shorter than time\.dt_s = 0\.01 s"),
    (["jobs.0.checkpoint_s=0.001"], r"jobs\.0\.checkpoint_s = 0\.001 s is shorter than time\.dt_s"),
    (["jobs.0.checkpoint_s=59.995"], r"jobs\.0\.checkpoint_every_s = 60 s leaves less than time\.dt_s"),
    (["jobs.0.n_rack_groups=1000"], r"jobs\.0\.n_rack_groups = 1000 exceeds the job's 278 rack"),
    (["controller.sample_s=0.001"], r"controller\.sample_s = 0\.001 s is shorter than half of time\.dt_s"),
    (["controller.kind='mpc'", "controller.replan_s=0.001"], r"controller\.replan_s = 0\.001 s"),
    (["monitor.enabled=true"], r"monitor\.enabled = true needs a spectral limit"),
    (["grid.trafo_vkr_percent=5", "grid.trafo_vk_percent=4"], r"grid\.trafo_vkr_percent = 5 % must be below"),
    (["grid.lv_trafo_sn_mva=5", "grid.n_feeders=2"], r"grid\.lv_trafo_sn_mva = 5 MVA cannot carry feeder 0"),
    (["rack_storage.eff_charge_frac=5e-324"], r"rack_storage\.eff_charge_frac = 5e-324"),
    (["grid.rx_ratio=1e-300"], r"grid\.rx_ratio = 1e-300: .*nonzero value this small"),
    (["grid.sc_mva=10"], r"grid\.sc_mva = 10 MVA is below the peak site load of up to 4\d\.\d MW"),
    (["ups.enabled=true", "ups.p_rated_mw=1", "ups.e_rated_mwh=1", "ups.reserve_frac=0.5",
      "ups.initial_soc_frac=0.4"], r"ups\.initial_soc_frac = 0\.4 \[frac\] is below ups\.min_soc_frac \+ ups\.reserve_frac"),
])
def test_run_preconditions_refused_at_validate(capsys, overrides, pattern):
    import re

    rc, err = _validate(capsys, DEFAULT, *[a for o in overrides for a in ("--set", o)])
    assert rc == 2 and re.search(pattern, err), err


def test_resolved_low_level_above_high_level(tiny_scenario_dict):
    from facility.scenario import scenario_from_dict

    job = dict(tiny_scenario_dict["jobs"][0], p_high_frac=0.15)
    del job["p_low_frac"]
    with pytest.raises(ScenarioError, match=r"jobs\.0\.p_low_frac = 0\.2 \[frac of TDP\] \(the default\) "
                                            r"exceeds jobs\.0\.p_high_frac = 0\.15"):
        scenario_from_dict(dict(tiny_scenario_dict, jobs=[job]), "x.toml")


def test_short_ramp_is_a_warning_with_numbers(caplog):
    s = load_scenario(DEFAULT, ["jobs.0.ramp_s=0.004"])
    assert s.jobs[0].ramp_s == 0.004
    assert "jobs.0.ramp_s = 0.004 s is shorter than time.dt_s = 0.01 s" in caplog.text


def test_lp_size_is_bounded_before_building(capsys):
    rc, err = _validate(capsys, SCENARIOS / "sizing_start_ramp.toml", "--set", "time.dt_s=0.001",
                        "--set", "time.horizon_s=86400", "--max-memory-gib", "1e6")
    assert rc == 2
    assert "the optimizer's LP would have about" in err or "steps exceeds the limit" in err


# ----------------------------------------------------------------- resource estimate
def test_memory_budget_refused_at_validate_with_the_estimate(capsys, tmp_path):
    rc, err = _validate(capsys, DEFAULT, "--set", "time.horizon_s=7200", "--max-memory-gib", "1")
    assert rc == 2
    assert "estimated peak memory 1." in err and "720,000 steps x 64 rack groups" in err
    assert "--max-memory-gib = 1.00 GiB" in err
    for key in ("time.horizon_s", "time.dt_s", "jobs.*.n_rack_groups"):
        assert key in err
    rc = main(["validate", str(DEFAULT), "--set", "time.horizon_s=7200", "--max-memory-gib", "4"])
    out = capsys.readouterr().out
    assert rc == 0 and "estimated peak memory 1." in out
    # the same budget applies to run, before anything is allocated
    assert main(["run", str(DEFAULT), "--out", str(tmp_path / "never"), "--set", "time.horizon_s=7200",
                 "--max-memory-gib", "1"]) == 2
    assert "the run needs more memory than the budget" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


def test_estimate_scales_with_steps_groups_storages_feeders():
    from facility.scenario.resources import default_max_memory_gib, estimate_resources

    base = estimate_resources(load_scenario(DEFAULT))
    longer = estimate_resources(load_scenario(DEFAULT, ["time.horizon_s=1200"]))
    groups = estimate_resources(load_scenario(DEFAULT, ["jobs.0.n_rack_groups=256"]))
    feeders = estimate_resources(load_scenario(DEFAULT, ["grid.n_feeders=8"]))
    bess = estimate_resources(load_scenario(DEFAULT, ["bess.enabled=true", "bess.p_rated_mw=5",
                                                      "bess.e_rated_mwh=5"]))
    assert longer.n_steps == 10 * base.n_steps and longer.memory_gib > base.memory_gib
    assert groups.n_groups == 256 and groups.parts_gib["load matrix"] == pytest.approx(4 * base.parts_gib["load matrix"])
    assert feeders.memory_gib > base.memory_gib and bess.memory_gib > base.memory_gib
    assert 0.25 < base.memory_gib < 1.0          # measured ~0.4 GiB peak RSS for this run
    assert default_max_memory_gib() > 0


def test_bad_budget_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate", str(DEFAULT), "--max-memory-gib", "-3"])
    assert exc.value.code == 2


# ----------------------------------------------------------------- determinism
@pytest.mark.parametrize("scenario, horizon_s", [("default.toml", 20), ("sizing_start_ramp.toml", 60)])
def test_same_scenario_and_seed_give_byte_identical_metrics(tmp_path, scenario, horizon_s):
    """metrics.json holds no wall times: they are in manifest.json (timings_s) and, for a
    sizing, in sizing.json (build_s, solve_s), deliberately outside metrics.json."""
    args = ["--set", f"time.horizon_s={horizon_s}", "--no-plots", "--no-progress"]
    for d in ("a", "b"):
        assert main(["run", str(SCENARIOS / scenario), "--out", str(tmp_path / d), *args]) == 0
    a, b = (tmp_path / d / "metrics.json" for d in ("a", "b"))
    assert a.read_bytes() == b.read_bytes()
    assert "timings_s" in json.loads((tmp_path / "a" / "manifest.json").read_text())
    if scenario == "default.toml":   # a stochastic workload: another seed, other metrics
        assert main(["run", str(DEFAULT), "--out", str(tmp_path / "c"), *args, "--set", "seed=8"]) == 0
        assert (tmp_path / "c" / "metrics.json").read_bytes() != a.read_bytes()
    else:
        sa, sb = (json.loads((tmp_path / d / "sizing.json").read_text()) for d in ("a", "b"))
        timing = {"build_s", "solve_s"}
        assert {k: v for k, v in sa.items() if k not in timing} == {k: v for k, v in sb.items() if k not in timing}


def _trace_scenario(tmp_path, n_polls):
    """A scenario replaying an 8-GPU nvidia-smi log of ``n_polls`` 100-ms polls (H100 power)."""
    import numpy as np

    rng = np.random.default_rng(3)
    rows = ["timestamp, index, name, power.draw [W], utilization.gpu [%], memory.used [MiB]"]
    for k in range(n_polls):
        busy = (k % 15) < 10
        for g in range(8):
            ms = 589 + 100 * k + 2 * g
            rows.append(f"2025/03/14 09:{26 + ms // 60000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}, {g}, "
                        f"NVIDIA H100 80GB HBM3, {(560 if busy else 180) + rng.normal(0, 5):.2f} W, "
                        f"{100 if busy else 3} %, {61000 + 13 * g} MiB")
    (tmp_path / "smi.csv").write_text("\n".join(rows) + "\n")
    scen = tmp_path / "s.toml"
    scen.write_text('schema_version = 1\nname = "tr"\n[time]\nhorizon_s = 10\ndt_s = 0.01\n'
                    '[[jobs]]\nname = "j"\nn_gpus = 1000\ngpu = "h100"\nworkload = "trace"\n'
                    'trace_file = "smi.csv"\n')
    return scen


def test_estimate_counts_trace_files_and_their_size_is_limited(tmp_path, capsys, monkeypatch):
    from facility.config import files
    from facility.scenario.resources import PER_TRACE_BYTE_B, estimate_resources

    scen = _trace_scenario(tmp_path, 600)
    size = (tmp_path / "smi.csv").stat().st_size
    est = estimate_resources(load_scenario(scen))
    assert est.trace_bytes == size
    assert est.parts_gib["trace files"] == pytest.approx(size * PER_TRACE_BYTE_B / 2**30)
    rc = main(["validate", str(scen)])
    assert rc == 0 and f"trace files {size / 1e6:,.1f} MB" in capsys.readouterr().out
    monkeypatch.setattr(files, "MAX_TRACE_BYTES", size - 1)
    assert main(["validate", str(scen)]) == 2
    err = capsys.readouterr().err
    assert "jobs.0.trace_file" in err and "a trace file is at most" in err and "Traceback" not in err
    assert "cut jobs.0.trace_file to the part the job replays" in err     # advice for a file too large
    # a missing file: its name and that it is missing, no advice about its size
    (tmp_path / "smi.csv").unlink()
    assert main(["validate", str(scen)]) == 2
    err = capsys.readouterr().err
    assert "smi.csv" in err and "no such trace file" in err and "cut " not in err and "drop columns" not in err
