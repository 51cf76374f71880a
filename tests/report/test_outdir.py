"""The --out policy: new or empty folders, earlier facility results with force, nothing else."""

from __future__ import annotations

import json

import pytest

from facility.errors import ScenarioError
from facility.report.outdir import check_out_dir, check_out_file, output_kind
from facility.report.staging import write_sidecar


def _fake_result(folder, kind="run", files=("metrics.json", "report.html", "power.png")):
    folder.mkdir(parents=True)
    for f in files:
        (folder / f).write_text("x")
    (folder / "manifest.json").write_text(json.dumps(
        {"facility_output": kind, "files": sorted(set(files) | {"manifest.json"}), "scenario": "default",
         "created_utc": "2025-01-01T00:00:00+00:00"}))
    return folder


def test_new_and_empty_folders_are_accepted_and_nothing_is_created(tmp_path):
    target = tmp_path / "a" / "b" / "run"
    full, held = check_out_dir(target)
    assert full == target.resolve() and held is None
    assert not (tmp_path / "a").exists()  # the check leaves no trace
    (tmp_path / "empty").mkdir()
    assert check_out_dir(tmp_path / "empty") == ((tmp_path / "empty").resolve(), None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]  # no probe folder left behind


def test_existing_file_is_refused(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# my project\n")
    for force in (False, True):
        with pytest.raises(ScenarioError, match="existing file, not a folder"):
            check_out_dir(readme, force=force)
    assert readme.read_text() == "# my project\n"


def test_foreign_folder_is_refused_even_with_force(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    for force in (False, True):
        with pytest.raises(ScenarioError, match=r"holds files facility did not write \(notes\.txt\)"):
            check_out_dir(folder, force=force)
    assert (folder / "notes.txt").read_text() == "keep me"


def test_earlier_result_needs_force(tmp_path):
    res = _fake_result(tmp_path / "res")
    assert output_kind(res) == "run"
    with pytest.raises(ScenarioError, match="earlier facility run result .*pass --force"):
        check_out_dir(res)
    assert check_out_dir(res, force=True) == (res.resolve(), "run")


def test_result_with_a_users_file_beside_it_is_foreign(tmp_path):
    res = _fake_result(tmp_path / "res")
    (res / "notes.txt").write_text("my analysis")
    assert output_kind(res) is None
    with pytest.raises(ScenarioError, match="did not write"):
        check_out_dir(res, force=True)


def test_result_of_an_older_version_without_files_list(tmp_path):
    res = tmp_path / "old"
    res.mkdir()
    for f in ("metrics.json", "timeseries.parquet", "report.html", "storage.png"):
        (res / f).write_text("x")
    (res / "manifest.json").write_text(json.dumps({"scenario": "default", "argv": [], "versions": {"facility": "0.1"}}))
    assert output_kind(res) == "run"
    (res / "draft.docx").write_text("x")
    assert output_kind(res) is None


def test_a_manifest_that_is_not_facilitys_does_not_count(tmp_path):
    folder = tmp_path / "web"
    folder.mkdir()
    (folder / "manifest.json").write_text('{"name": "my web app", "icons": []}')
    assert output_kind(folder) is None
    (folder / "manifest.json").write_text("not json")
    assert output_kind(folder) is None


def test_kinds_limit_what_force_replaces(tmp_path):
    sweep = tmp_path / "sw"
    (sweep / "cases" / "c0000-abcdef01").mkdir(parents=True)
    (sweep / "sweep.json").write_text(json.dumps({"case_ids": ["c0000-abcdef01"], "scenario_sha256": "0" * 64,
                                                  "n_cases": 1, "scenario": "s.toml"}))
    (sweep / "sweep.parquet").write_text("x")
    assert output_kind(sweep) == "sweep"
    with pytest.raises(ScenarioError, match="not a result this command replaces"):
        check_out_dir(sweep, force=True, kinds=("run", "size"))
    assert check_out_dir(sweep, force=True) == (sweep.resolve(), "sweep")
    (sweep / "cases" / "stray.txt").write_text("x")
    assert output_kind(sweep) is None


@pytest.mark.parametrize("target", [".", "..", "./", "{tmp}", "{tmp}/work/..", "/"])
def test_current_directory_its_parents_and_dot_dot_are_refused(tmp_path, monkeypatch, target):
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "file.txt").write_text("x")
    monkeypatch.chdir(work)
    with pytest.raises(ScenarioError, match=r"current directory or a parent|through '\.\.'"):
        check_out_dir(target.format(tmp=tmp_path), force=True)
    assert (work / "sub" / "file.txt").exists()


def test_dot_dot_is_refused_even_when_it_names_an_empty_folder(tmp_path):
    (tmp_path / "some" / "dir").mkdir(parents=True)
    with pytest.raises(ScenarioError, match=r"through '\.\.'"):
        check_out_dir(tmp_path / "some" / "dir" / "..")


def test_unwritable_places_are_refused(tmp_path):
    with pytest.raises(ScenarioError, match="cannot write in /proc"):
        check_out_dir("/proc/x")
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(ScenarioError, match="is a file, not a folder"):
        check_out_dir(blocker / "run")
    with pytest.raises(ScenarioError, match="cannot write in /proc"):
        check_out_file("/proc/x.csv")


def test_out_file(tmp_path):
    f = tmp_path / "trace.csv"
    assert check_out_file(f) == f.resolve()
    f.write_text("t_s\n0\n")
    with pytest.raises(ScenarioError, match="the file exists; pass --force"):
        check_out_file(f)
    # a user's file (no sidecar) is never replaced, also with force
    with pytest.raises(ScenarioError, match="facility did not write it"):
        check_out_file(f, force=True)
    with pytest.raises(ScenarioError, match="is a folder"):
        check_out_file(tmp_path, force=True)
    assert f.read_text() == "t_s\n0\n"
    # a file facility wrote (its sidecar matches) may be replaced with force
    write_sidecar(f, "trace")
    assert check_out_file(f, force=True) == f.resolve()
    f.write_text("t_s\n0\n1\n")   # changed by the user since: theirs now
    with pytest.raises(ScenarioError, match="changed since"):
        check_out_file(f, force=True)


def test_out_file_extension_is_checked(tmp_path):
    with pytest.raises(ScenarioError, match=r"writes \.json files"):
        check_out_file(tmp_path / "notes.txt", suffixes=(".json",))
    assert check_out_file(tmp_path / "net.JSON", suffixes=(".json",)).name == "net.JSON"


def test_sweep_owns_only_what_its_manifest_lists(tmp_path):
    sw = tmp_path / "sw"
    (sw / "cases" / "c0-0123abcd").mkdir(parents=True)
    (sw / "cases" / "c0-0123abcd" / "case.json").write_text(json.dumps({"case_id": "c0-0123abcd", "status": "ok"}))
    (sw / "sweep.json").write_text(json.dumps({"case_ids": ["c0-0123abcd"], "scenario_sha256": "x"}))
    (sw / "sweep.parquet").write_text("x")
    assert output_kind(sw) == "sweep"
    for extra in (".my_notes.txt", "cases/my_analysis/important.txt", "cases/.keep_me",
                  "cases/c0-0123abcd/mine.txt"):
        q = sw / extra
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_text("keep")
        assert output_kind(sw) is None, extra
        assert output_kind(sw, strict=False) == "sweep"
        with pytest.raises(ScenarioError, match="did not write"):
            check_out_dir(sw, force=True)
        q.unlink()
        if q.parent.name == "my_analysis":
            q.parent.rmdir()
    assert output_kind(sw) == "sweep"


def test_mount_point_and_unwritable_empty_folder_are_refused(tmp_path, monkeypatch):
    import os

    mnt = tmp_path / "mnt"
    mnt.mkdir()
    real = os.path.ismount
    monkeypatch.setattr(os.path, "ismount", lambda p: str(p) == str(mnt) or real(p))
    with pytest.raises(ScenarioError, match="is a mount point.*inside it"):
        check_out_dir(mnt)
    monkeypatch.setattr(os, "access", lambda p, mode: str(p) != str(mnt / "ro"))
    (mnt / "ro").mkdir()
    with pytest.raises(ScenarioError, match="not writable"):
        check_out_dir(mnt / "ro")
