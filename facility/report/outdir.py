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

A file target (``trace``, ``export-net``) is accepted when it does not exist, or when it is a
regular file and ``force`` is set (a file carries no manifest, so facility cannot tell its own
from a user's: replacing any existing file needs ``--force``). A folder, the current
directory or an unwritable place is always refused.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from facility.errors import ScenarioError

__all__ = [
    "MANIFEST_FILE",
    "SWEEP_MANIFEST_FILE",
    "RESULT_FILES",
    "SWEEP_ENTRIES",
    "output_kind",
    "check_out_dir",
    "check_out_file",
    "check_writable",
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


def _foreign_entries(folder: Path, kind: str, manifest: dict) -> list[str]:
    """Names in ``folder`` that the facility output of ``kind`` did not write."""
    names = sorted(p.name for p in folder.iterdir())
    if kind == "sweep":
        bad = [n for n in names if not n.startswith(".") and n not in SWEEP_ENTRIES]
        cases = folder / "cases"
        if cases.is_dir():
            bad += [f"cases/{p.name}" for p in sorted(cases.iterdir())
                    if not p.name.startswith(".") and not p.is_dir()]
        return bad
    listed = manifest.get("files")
    if isinstance(listed, list):
        known = {str(x) for x in listed} | {MANIFEST_FILE}
        return [n for n in names if n not in known]
    return [n for n in names if n not in RESULT_FILES and not _PNG.match(n)]


def output_kind(folder: str | Path) -> str | None:
    """What facility output a folder holds: ``"run"``, ``"size"``, ``"sweep"`` or None.

    A folder counts only when its manifest says so *and* it holds nothing else facility did
    not write (a user's file beside an earlier result makes it a foreign folder).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return None
    sweep = _read_json(folder / SWEEP_MANIFEST_FILE)
    if isinstance(sweep, dict) and "case_ids" in sweep and "scenario_sha256" in sweep:
        return None if _foreign_entries(folder, "sweep", sweep) else "sweep"
    m = _result_manifest(folder)
    if m is None:
        return None
    kind = "size" if m.get("facility_output") == "size" else "run"
    return None if _foreign_entries(folder, kind, m) else kind


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


def check_writable(target: Path, flag: str = "--out") -> None:
    """Create (and remove) a probe folder where ``target``'s temporary copy will be written.

    Raises
    ------
    ScenarioError
        A file is in the way of ``target``'s parent, or the parent cannot be written.
    """
    parent = Path(target).parent
    probe_dir = parent
    while not probe_dir.exists():
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise ScenarioError(f"{flag} {target}: {probe_dir} is a file, not a folder; choose another place")
    try:
        probe = tempfile.mkdtemp(prefix=".facility-write-check-", dir=probe_dir)
        os.rmdir(probe)
    except OSError as exc:
        raise ScenarioError(f"{flag} {target}: cannot write in {probe_dir} ({exc.strerror or exc}); "
                            f"choose a writable folder") from None


def check_out_dir(path: str | Path, *, force: bool = False, kinds: tuple[str, ...] = ("run", "size", "sweep"),
                  flag: str = "--out", how_to_replace: str = "pass --force to replace it") -> tuple[Path, str | None]:
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
    kind = output_kind(full)
    if kind is None:
        names = sorted(p.name for p in full.iterdir())
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


def check_out_file(path: str | Path, *, force: bool = False, flag: str = "--out") -> Path:
    """Check that a single output file may be written (see the module docstring).

    Returns
    -------
    pathlib.Path
        The absolute file path.

    Raises
    ------
    ScenarioError
        A folder, an existing file without ``force``, the current directory or an
        unwritable place (exit code 2).
    """
    full = _resolved(path, flag)
    check_writable(full, flag)
    if full.is_dir():
        raise ScenarioError(f"{flag} {path}: is a folder; give a file name")
    if full.exists() or full.is_symlink():
        if not full.is_file():
            raise ScenarioError(f"{flag} {path}: exists and is not a regular file; give a new file name")
        if not force:
            raise ScenarioError(f"{flag} {path}: the file exists; pass --force to replace it, or give a "
                                f"new file name")
    return full
