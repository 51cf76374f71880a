"""The --out policy: new or empty folders, earlier facility results with force, nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from facility.errors import ScenarioError
from facility.report.outdir import check_out_dir, check_out_file, output_kind
from facility.report.staging import write_sidecar
from tests.mounts import can_mount

REPO = Path(__file__).resolve().parents[2]


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


#: Runs ``facility.cli.main`` on each command line of argv[1] (JSON) and prints one JSON line
#: per command: the exit code, stderr, and whether os.path.ismount sees the --out folder.
_DRIVER = """
import contextlib, io, json, logging, os, sys
from facility.cli import main
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
        except BaseException as exc:
            rc, err = 1, io.StringIO(repr(exc))
    out = argv[argv.index("--out") + 1]
    print(json.dumps({"out": out, "rc": rc, "err": err.getvalue(), "ismount": os.path.ismount(out)}), flush=True)
"""


_MOUNT_SKIP = can_mount("ro,size=64k")


@pytest.mark.skipif(bool(_MOUNT_SKIP), reason=_MOUNT_SKIP or "-")
def test_real_mount_points_and_read_only_mounts_are_refused_before_the_run(tmp_path):
    """Real mounts in a private mount namespace (no monkeypatching; the suite runs as root, whom
    permission bits do not stop): an empty read-only tmpfs mount point, a folder inside it, an
    empty writable tmpfs mount point, a bind mount of a folder of the same file system (which
    ``os.path.ismount`` does not see) and a read-only bind mount holding an empty folder all
    exit 2 before a simulation, and nothing is written there."""
    b = tmp_path
    for d in ("ro_mnt", "rw_mnt", "bind_src", "bind_dst", "data/sub", "ro_bind"):
        (b / d).mkdir(parents=True)
    script = " && ".join([
        'mount -t tmpfs -o ro,size=64k facility-ro "$1/ro_mnt"',
        'mount -t tmpfs -o size=64k facility-rw "$1/rw_mnt"',
        'mount --bind "$1/bind_src" "$1/bind_dst"',
        'mount --bind "$1/data" "$1/ro_bind"',
        'mount -o remount,bind,ro "$1/ro_bind"',
        'exec "$2" -c "$3" "$4"',
    ])
    scen = str(REPO / "scenarios" / "default.toml")
    short = ["--set", "time.horizon_s=10"]          # cheap, should one be accepted by mistake
    cases = {                # --out: (command, what the message must say)
        b / "ro_mnt": ("run", "is a mount point"),
        b / "ro_mnt" / "result": ("run", "read-only file system"),
        b / "rw_mnt": ("size", "is a mount point"),
        b / "bind_dst": ("run", "is a mount point"),
        b / "ro_bind" / "sub": ("run", "read-only file system"),
        b / "ro_bind" / "new": ("sweep", "read-only file system"),
        b / "ro_bind" / "measured.csv": ("trace", "read-only file system"),
    }
    argvs = []
    for out, (cmd, _) in cases.items():
        argv = [cmd, scen, "--out", str(out)]
        argv += ["--set", "rack_storage.p_rated_mw=10,20"] if cmd == "sweep" else short
        argvs.append(argv)
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", str(b),
                        sys.executable, _DRIVER, json.dumps(argvs)], capture_output=True, text=True,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    got = {o["out"]: o for o in map(json.loads, r.stdout.splitlines())}
    for out, (cmd, msg) in cases.items():
        o = got[str(out)]
        assert o["rc"] == 2 and msg in o["err"].lower(), (cmd, str(out), o)
        assert "Traceback" not in o["err"]
    assert got[str(b / "bind_dst")]["ismount"] is False      # the case os.path.ismount misses
    assert got[str(b / "rw_mnt")]["ismount"] is True
    # outside the namespace the folders are plain and nothing was written into them
    assert [p.name for p in b.rglob("*") if p.name not in ("ro_mnt", "rw_mnt", "bind_src", "bind_dst",
                                                               "data", "sub", "ro_bind")] == []


def test_permission_bits_stop_a_non_root_user_only(tmp_path):
    """A 0555 folder: refused for an unprivileged user (the probe folder cannot be made);
    root may write there, so it is accepted for root — the check asks the file system, it
    does not guess from the bits."""
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    if os.geteuid() != 0:
        with pytest.raises(ScenarioError, match="cannot write"):
            check_out_dir(ro)
        with pytest.raises(ScenarioError, match="cannot write"):
            check_out_dir(ro / "new")
        return
    assert check_out_dir(ro) == (ro.resolve(), None)     # root: writable in fact
    assert check_out_dir(ro / "new")[1] is None
    # and as an unprivileged user (a forked child that drops root): refused, naming the cause.
    # A folder the user can reach (pytest's base folder is 0700)
    base = Path(tempfile.mkdtemp(prefix="facility-outdir-"))
    try:
        os.chmod(base, 0o755)
        (base / "ro").mkdir()
        os.chmod(base / "ro", 0o555)
        msgs = _as_nobody(base / "ro")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert len(msgs) == 2 and all("cannot write" in m and "Permission denied" in m for m in msgs), msgs


def _as_nobody(ro: Path) -> list[str]:
    """check_out_dir(ro) and (ro/new) in a forked child running as uid/gid 65534."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:                        # pragma: no cover - runs in the child
        os.close(rfd)
        out = []
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            for target in (ro, ro / "new"):
                try:
                    check_out_dir(target)
                    out.append("accepted")
                except ScenarioError as exc:
                    out.append(str(exc))
        except BaseException as exc:    # noqa: BLE001
            out.append(f"child failed: {exc!r}")
        os.write(wfd, json.dumps(out).encode())
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        msgs = json.loads(f.read() or "[]")
    os.waitpid(pid, 0)
    return msgs
