"""Where a command may write: the ``--out`` policy of ``run``, ``size``, ``sweep``, ``trace``.

``facility`` never deletes what it did not write. A folder target is accepted when it

* does not exist yet (it is created, parents included), or is an empty folder;
* holds an earlier facility output — its manifest says so (``manifest.json`` with
  ``facility_output`` for ``run``/``size``, ``sweep.json`` for ``sweep``) and every entry in it
  is a file that facility writes — and ``force`` is set: the folder is then replaced
  atomically once the new result is complete (a failed run leaves the earlier one whole).

Everything else is refused with a :class:`~facility.errors.ScenarioError` (exit code 2)
before any simulation starts: an existing file, a non-empty folder holding anything facility
did not write (even with ``force``), the current directory or any parent of it, a path whose
last part is ``..`` (``some/dir/..`` names ``some``), and a place that cannot be
written (the check creates and removes a probe folder where the temporary result will go,
so ``--out /proc/x`` fails at once).

A file target (``trace``, ``export-net``, ``record``) is accepted when it does not exist, or when
it is a regular file that facility wrote — its sidecar ``.NAME.facility.json`` records the
command and the file's SHA-256 (:mod:`facility.report.staging`) — and ``force`` is set; a file
without a matching sidecar (a user's, or one changed since) is refused even with ``--force``.
The file name must end as the command writes (``.json`` for ``export-net``). A folder, the
current directory or an unwritable place is always refused.

An existing empty folder is also checked itself: a mount point (which cannot be renamed into
place; bind mounts included, found in ``/proc/self/mountinfo``) and a folder that cannot be
written are refused before the simulation. "Cannot be written" is decided by the file system,
not by permission bits (root ignores those): a read-only mount (``statvfs`` ``ST_RDONLY``)
and a probe folder that cannot be created.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from facility.errors import ScenarioError
from facility.report.marks import TMP_MARKER, owned_file, sidecar_path

__all__ = [
    "MANIFEST_FILE",
    "SWEEP_MANIFEST_FILE",
    "RESULT_FILES",
    "SWEEP_ENTRIES",
    "output_kind",
    "check_out_dir",
    "check_out_file",
    "check_writable",
    "foreign_entries",
    "is_mount_point",
    "read_only_fs",
]

#: Manifest of a run/size result folder; its ``facility_output`` key names the command.
MANIFEST_FILE = "manifest.json"
#: Manifest of a sweep folder.
SWEEP_MANIFEST_FILE = "sweep.json"
#: Files a run/size result folder holds when its manifest predates the ``files`` list.
RESULT_FILES = frozenset({"metrics.json", "timeseries.parquet", "events.json", "report.html",
                          "scenario.resolved.toml", "sizing.json", MANIFEST_FILE})
#: Entries of a sweep folder besides hidden temporaries (``.*``): see facility/sweep/engine.py.
SWEEP_ENTRIES = frozenset({SWEEP_MANIFEST_FILE, "cases", "sweep.parquet", "sweep.csv", "pareto.png",
                           "pareto.html", "pareto.csv", "cheapest.csv", "strategies.csv"})

_PNG = re.compile(r"^[\w.-]+\.png$")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _result_manifest(folder: Path) -> dict | None:
    """The manifest of a run/size result folder, or None when the folder is not one."""
    m = _read_json(folder / MANIFEST_FILE)
    if not isinstance(m, dict):
        return None
    if m.get("facility_output") in ("run", "size"):
        return m
    versions = m.get("versions")
    # results written before the manifest named its kind: facility's versions + its scenario
    if isinstance(versions, dict) and "facility" in versions and "scenario" in m and "argv" in m:
        return m
    return None


_SWEEP_TMP = re.compile(r"^\.(?P<name>[\w.-]+)\.tmp-\d+$")
_WORKER_TMP = re.compile(r"^\.tmp-(?P<id>[\w.=+-]+)-[a-z0-9_]{8}$")
_OLD = re.compile(r"^\.[^/]+\.old-\d+$")
_AUTO_CASE = re.compile(r"^c\d+-[0-9a-f]{8}$")


def _is_facility_temp(p: Path) -> bool:
    """A hidden folder facility's own writers leave in a sweep's ``cases/`` when killed."""
    if p.is_symlink() or not p.is_dir():
        return False
    if (p / TMP_MARKER).is_file() or _WORKER_TMP.match(p.name):
        return True
    return bool(_OLD.match(p.name)) and (not any(p.iterdir()) or output_kind(p) is not None)


def _is_earlier_case(p: Path) -> bool:
    """A case folder an earlier case list of the sweep named (an automatic id its record names)."""
    rec = _read_json(p / "case.json")
    return bool(_AUTO_CASE.match(p.name)) and isinstance(rec, dict) and rec.get("case_id") == p.name


def _case_entries_foreign(case: Path) -> list[str]:
    """Names in a finished case folder that the case did not write."""
    names = sorted(p.name for p in case.iterdir())
    known = {"case.json"}
    m = _result_manifest(case)
    if m is not None and isinstance(m.get("files"), list):
        known |= {str(x) for x in m["files"]} | {MANIFEST_FILE}
    else:
        known |= set(RESULT_FILES) | {n for n in names if _PNG.match(n)}
    return [n for n in names if n not in known and not (n.startswith(".case.json.tmp"))]


def _foreign_entries(folder: Path, kind: str, manifest: dict) -> list[str]:
    """Names in ``folder`` that the facility output of ``kind`` did not write.

    A sweep owns the entries of :data:`SWEEP_ENTRIES` (and their ``.NAME.tmp-PID`` files while
    written), the case folders its manifest lists (or that an earlier list of the same sweep
    named: automatic ids ``c<i>-<hash>`` whose ``case.json`` names them) with the files their
    case wrote, and the temporary folders of its workers. Anything else — hidden names and
    subfolders included — is the user's.
    """
    names = sorted(p.name for p in folder.iterdir())
    if kind == "sweep":
        bad = []
        for n in names:
            m = _SWEEP_TMP.match(n)
            if n in SWEEP_ENTRIES or (m and m.group("name") in SWEEP_ENTRIES and (folder / n).is_file()):
                continue
            bad.append(n)
        cases = folder / "cases"
        if cases.is_symlink() or (cases.exists() and not cases.is_dir()):
            return bad + ["cases"]
        listed = {str(x) for x in manifest.get("case_ids", []) if isinstance(x, str)}
        if cases.is_dir():
            for p in sorted(cases.iterdir()):
                if p.name.startswith("."):
                    if not _is_facility_temp(p):
                        bad.append(f"cases/{p.name}")
                elif p.is_symlink() or not p.is_dir() or not (p.name in listed or _is_earlier_case(p)):
                    bad.append(f"cases/{p.name}")
                else:
                    bad += [f"cases/{p.name}/{n}" for n in _case_entries_foreign(p)]
        return bad
    listed = manifest.get("files")
    if isinstance(listed, list):
        known = {str(x) for x in listed} | {MANIFEST_FILE}
        return [n for n in names if n not in known]
    return [n for n in names if n not in RESULT_FILES and not _PNG.match(n)]


def foreign_entries(folder: str | Path) -> list[str]:
    """What in a facility output folder facility did not write (empty for a clean output)."""
    folder = Path(folder)
    sweep = _read_json(folder / SWEEP_MANIFEST_FILE)
    if isinstance(sweep, dict) and "case_ids" in sweep and "scenario_sha256" in sweep:
        return _foreign_entries(folder, "sweep", sweep)
    m = _result_manifest(folder)
    if m is None:
        return sorted(p.name for p in folder.iterdir())
    return _foreign_entries(folder, "size" if m.get("facility_output") == "size" else "run", m)


def output_kind(folder: str | Path, *, strict: bool = True) -> str | None:
    """What facility output a folder holds: ``"run"``, ``"size"``, ``"sweep"`` or None.

    A folder counts only when its manifest says so *and* (``strict``) it holds nothing else
    facility did not write (a user's file beside an earlier result makes it a foreign folder).
    """
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return None
    sweep = _read_json(folder / SWEEP_MANIFEST_FILE)
    if isinstance(sweep, dict) and "case_ids" in sweep and "scenario_sha256" in sweep:
        return None if strict and _foreign_entries(folder, "sweep", sweep) else "sweep"
    m = _result_manifest(folder)
    if m is None:
        return None
    kind = "size" if m.get("facility_output") == "size" else "run"
    return None if strict and _foreign_entries(folder, kind, m) else kind


def _describe(folder: Path, kind: str) -> str:
    if kind == "sweep":
        m = _read_json(folder / SWEEP_MANIFEST_FILE) or {}
        return f"an earlier facility sweep ({m.get('n_cases', '?')} cases of {m.get('scenario', '?')})"
    m = _result_manifest(folder) or {}
    return (f"an earlier facility {kind} result (scenario {m.get('scenario', '?')!r}, "
            f"created {m.get('created_utc', '?')})")


def _resolved(path: str | Path, flag: str) -> Path:
    """``path`` made absolute (symlinks followed); refuses the cwd chain and '..' endings."""
    text = os.fspath(path)
    if not text.strip():
        raise ScenarioError(f"{flag}: empty path; give a new folder name, e.g. {flag} runs/default")
    full = Path(text).expanduser().resolve()
    cwd = Path.cwd().resolve()
    if full == cwd or full in cwd.parents:
        raise ScenarioError(f"{flag} {text}: is the current directory or a parent of it ({full}); "
                            f"refusing to replace it — give a new folder, e.g. {flag} runs/result")
    if Path(text).name == "..":
        raise ScenarioError(f"{flag} {text}: names a folder through '..' ({full}); give the folder by its "
                            f"own name")
    return full


def _unescape_mountinfo(field: str) -> str:
    """A path of ``/proc/self/mountinfo`` (spaces, tabs, newlines, backslashes octal-escaped)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mount_points() -> set[str]:
    """Mount points of this process's mount namespace (Linux ``/proc/self/mountinfo``; empty elsewhere)."""
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return set()
    return {_unescape_mountinfo(line.split()[4]) for line in text.splitlines() if len(line.split()) > 4}


def is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point, bind mounts within one file system included.

    ``os.path.ismount`` sees only a change of device (or the root); a bind mount of a folder
    of the same file system is found in ``/proc/self/mountinfo``.
    """
    path = Path(path)
    return os.path.ismount(path) or os.fspath(path.resolve()) in _mount_points()


def read_only_fs(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only (``statvfs`` ``ST_RDONLY``).

    This holds also for root, whom permission bits (and ``os.access``) do not stop.
    """
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs (Windows)
        return False


def _probe(folder: Path) -> None:
    probe = tempfile.mkdtemp(prefix=".facility-write-check-", dir=folder)
    os.rmdir(probe)


def check_writable(target: Path, flag: str = "--out") -> None:
    """Check that ``target`` can be written where facility writes it, before any work starts.

    The folder that will hold the temporary copy (``target``'s parent, or its first existing
    ancestor) must not be on a read-only file system (``statvfs``; root ignores permission
    bits, a read-only mount stops everyone) and must take a probe folder (created and
    removed: permissions, quotas, odd file systems). An existing folder ``target`` is checked
    itself: not a mount point (it is replaced as a whole, which a mount point does not allow),
    not read-only, and taking a probe folder.

    Raises
    ------
    ScenarioError
        A file is in the way of ``target``'s parent, or the place cannot be written.
    """
    parent = Path(target).parent
    probe_dir = parent
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ScenarioError(f"{flag} {target}: {probe_dir} is a file, not a folder; choose another place")
    if read_only_fs(probe_dir):
        raise ScenarioError(f"{flag} {target}: {probe_dir} is on a read-only file system; choose a writable "
                            f"folder")
    try:
        _probe(probe_dir)
    except OSError as exc:
        raise ScenarioError(f"{flag} {target}: cannot write in {probe_dir} ({exc.strerror or exc}); "
                            f"choose a writable folder") from None
    target = Path(target)
    if target.is_dir() and not target.is_symlink():
        # the folder itself is replaced (renamed) or written into: a mount point cannot be
        # renamed, and a read-only or unwritable folder cannot be renamed or filled
        if is_mount_point(target):
            raise ScenarioError(f"{flag} {target}: is a mount point; facility replaces its output folder as a "
                                f"whole, which a mount point does not allow — give a folder inside it, "
                                f"e.g. {flag} {target / 'result'}")
        if read_only_fs(target):
            raise ScenarioError(f"{flag} {target}: the folder is on a read-only file system; choose a "
                                f"writable folder")
        try:
            _probe(target)
        except OSError as exc:
            raise ScenarioError(f"{flag} {target}: cannot write in this folder ({exc.strerror or exc}); "
                                f"choose a writable folder") from None


def check_out_dir(path: str | Path, *, force: bool = False, kinds: tuple[str, ...] = ("run", "size", "sweep"),
                  flag: str = "--out", how_to_replace: str = "pass --force to replace it",
                  keep_foreign: bool = False) -> tuple[Path, str | None]:
    """Check that a folder may receive a new facility output (see the module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        The requested folder.
    force : bool
        Allow replacing an earlier facility output of one of ``kinds``.
    kinds : tuple of str
        The facility outputs ``force`` may replace.
    flag : str
        Name of the option, for messages.
    how_to_replace : str
        What the message of a refused earlier output suggests.
    keep_foreign : bool
        Accept an earlier output that holds files facility did not write (``sweep --resume``
        adds to it and leaves them alone; nothing is replaced as a whole then).

    Returns
    -------
    (pathlib.Path, str or None)
        The absolute folder and what it holds now: None (new or empty) or the kind of the
        earlier output that will be replaced.

    Raises
    ------
    ScenarioError
        The folder may not be written or replaced (exit code 2).
    """
    full = _resolved(path, flag)
    check_writable(full, flag)
    if full.exists() and not full.is_dir():
        raise ScenarioError(f"{flag} {path}: is an existing file, not a folder; facility writes a "
                            f"folder of results — give a new folder name")
    if not full.exists() or not any(full.iterdir()):
        return full, None
    kind = output_kind(full, strict=not keep_foreign)
    if kind is None:
        kind_loose = output_kind(full, strict=False)
        names = foreign_entries(full) if kind_loose else sorted(p.name for p in full.iterdir())
        shown = ", ".join(names[:4]) + (f", … ({len(names)} entries)" if len(names) > 4 else "")
        raise ScenarioError(f"{flag} {path}: the folder holds files facility did not write ({shown}); "
                            f"refusing to replace it (also with --force) — give a new or empty folder")
    if kind not in kinds:
        raise ScenarioError(f"{flag} {path}: holds {_describe(full, kind)}, not a result this command "
                            f"replaces — give a new folder")
    if not force:
        raise ScenarioError(f"{flag} {path}: holds {_describe(full, kind)}; {how_to_replace}, "
                            f"or give a new folder")
    return full, kind


def check_out_file(path: str | Path, *, force: bool = False, flag: str = "--out",
                   suffixes: tuple[str, ...] | None = None) -> Path:
    """Check that a single output file may be written (see the module docstring).

    Parameters
    ----------
    path : str or pathlib.Path
        The requested file.
    force : bool
        Allow replacing an existing file that facility wrote (its sidecar
        ``.NAME.facility.json`` matches the content, :func:`facility.report.staging.owned_file`).
    flag : str
        Name of the option, for messages.
    suffixes : tuple of str, optional
        The file name endings the command writes (lower case, with the dot).

    Returns
    -------
    pathlib.Path
        The absolute file path.

    Raises
    ------
    ScenarioError
        A wrong file name ending, a folder, an existing file without ``force`` or not written
        by facility, the current directory or an unwritable place (exit code 2).
    """
    if suffixes and Path(os.fspath(path)).suffix.lower() not in suffixes:
        raise ScenarioError(f"{flag} {path}: this command writes {' or '.join(suffixes)} files; give a file "
                            f"name ending in {' or '.join(suffixes)}")
    full = _resolved(path, flag)
    if full.is_dir():
        raise ScenarioError(f"{flag} {path}: is a folder; give a file name")
    check_writable(full, flag)
    if full.exists() or full.is_symlink():
        if not full.is_file() or full.is_symlink():
            raise ScenarioError(f"{flag} {path}: exists and is not a regular file; give a new file name")
        if not force:
            raise ScenarioError(f"{flag} {path}: the file exists; pass --force to replace it, or give a "
                                f"new file name")
        if not owned_file(full):
            why = ("it was changed since" if sidecar_path(full).is_file()
                   else f"no {sidecar_path(full).name} beside it")
            raise ScenarioError(f"{flag} {path}: the file exists and facility did not write it ({why}); "
                                f"refusing to replace it (also with --force) — give a new file name")
    return full
