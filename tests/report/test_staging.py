"""Temporary folders of a killed run are removed by the next one; result folders honour the umask."""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import sys

import pytest

from facility.errors import ScenarioError
from facility.report.io import atomic_dir
from facility.report.staging import TMP_MARKER, make_temp_dir, remove_stale, swap_into_place


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _killed_temp(final, pid):
    tmp = make_temp_dir(final)
    m = json.loads((tmp / TMP_MARKER).read_text())
    (tmp / TMP_MARKER).write_text(json.dumps({**m, "pid": pid}))
    (tmp / "timeseries.parquet").write_bytes(b"x" * 1000)
    return tmp


def test_a_killed_runs_temp_folder_is_removed_by_the_next_run(tmp_path):
    final = tmp_path / "k1"
    stale = _killed_temp(final, _dead_pid())
    live = _killed_temp(final, os.getpid())                 # a run still writing: kept
    other = _killed_temp(tmp_path / "k2", _dead_pid())      # another --out: not ours to judge now
    unmarked = tmp_path / ".k1.tmp-mine"                    # a user's folder of the same shape
    unmarked.mkdir()
    with atomic_dir(final) as tmp:
        (tmp / "metrics.json").write_text("{}")
        (tmp / "manifest.json").write_text(json.dumps({"facility_output": "run", "files": ["metrics.json"]}))
    assert not stale.exists()
    assert live.is_dir() and other.is_dir() and unmarked.is_dir()
    assert sorted(p.name for p in final.iterdir()) == ["manifest.json", "metrics.json"]   # no marker left
    assert remove_stale(tmp_path / "k2") == [other.name]


def test_result_folder_honours_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_dir(tmp_path / "r") as tmp:
            (tmp / "metrics.json").write_text("{}")
            (tmp / "manifest.json").write_text(json.dumps({"facility_output": "run", "files": ["metrics.json"]}))
        assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
        os.umask(0o077)
        with atomic_dir(tmp_path / "s") as tmp:
            pass
        assert stat.S_IMODE((tmp_path / "s").stat().st_mode) == 0o700
    finally:
        os.umask(old)


def test_a_result_swapped_in_meanwhile_is_kept_when_it_cannot_be_moved_back(tmp_path, monkeypatch):
    """The swap moved aside a folder that is not the one this command found (another command's
    result): it is refused even when moving that folder back fails, and the folder survives."""
    final = tmp_path / "r"
    final.mkdir()
    (final / "metrics.json").write_text("{\"other\": true}")   # another command's result
    st = os.stat(final)
    tmp = make_temp_dir(final)
    (tmp / "metrics.json").write_text("{}")
    real_rename = pathlib.Path.rename

    def rename(self, target):
        if self.name.startswith(".r.old-"):                   # the move back fails
            raise PermissionError(13, "Permission denied", str(self))
        return real_rename(self, target)

    monkeypatch.setattr(pathlib.Path, "rename", rename)
    with pytest.raises(ScenarioError, match="was replaced by another command"):
        swap_into_place(tmp, final, expect={"kind": "result", "dev": st.st_dev, "ino": st.st_ino + 1})
    monkeypatch.undo()
    old = tmp_path / f".r.old-{os.getpid()}"
    assert (old / "metrics.json").read_text() == "{\"other\": true}"
    assert not final.exists() and (tmp / "metrics.json").is_file()


def test_the_single_file_writer_does_not_load_the_report():
    """trace and export-net place their file with staging.atomic_file: importing it must not
    pull in the report's writers (html: numba, pandas, the grid-impact rows)."""
    code = ("import sys\nimport facility.report.staging as s\nassert callable(s.atomic_file)\n"
            "print('facility.report.html' in sys.modules, 'facility.report.io' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
