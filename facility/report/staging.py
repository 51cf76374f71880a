"""Temporary folders, the atomic swap and the marks that tell facility's files from a user's.

A command writes its result into a temporary folder beside ``--out`` (``.NAME.tmp-XXXX``)
and swaps it into place when it is complete (:func:`swap_into_place`). The temporary folder
holds a marker file (:data:`TMP_MARKER`: the writer's host and process id) until just before
the swap, so the next command that writes the same ``--out`` can recognise — and remove —
the temporary folders of an earlier run that was killed (:func:`remove_stale`): only folders
named ``.NAME.tmp-*`` with that marker whose process is gone, and ``.NAME.old-PID`` folders
(an earlier result moved aside during a swap) that hold a facility output and whose process
is gone. Nothing else beside ``--out`` is touched.

A single output file (``trace``, ``export-net``, ``record``) carries a sidecar
``.NAME.facility.json`` (:func:`write_sidecar`) with the command and the file's SHA-256:
``--force`` replaces a file only when its sidecar says facility wrote exactly this content
(:func:`owned_file`).

Folders are created with the permissions the umask allows (``tempfile.mkdtemp`` alone gives
0700).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from facility.report.marks import TMP_MARKER, owned_file, sidecar_path, write_sidecar

__all__ = ["TMP_MARKER", "pid_alive", "make_temp_dir", "swap_into_place", "remove_stale", "apply_umask",
           "sidecar_path", "write_sidecar", "owned_file"]



def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def apply_umask(folder: Path) -> None:
    """Give ``folder`` the permissions a plain ``mkdir`` would (0777 less the umask)."""
    os.chmod(folder, 0o777 & ~_umask())


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def make_temp_dir(final: Path, tag: str = "tmp") -> Path:
    """A new marked temporary folder ``.NAME.<tag>-XXXX`` beside ``final`` (umask permissions)."""
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.{tag}-", dir=final.parent))
    apply_umask(tmp)
    (tmp / TMP_MARKER).write_text(json.dumps({
        "facility_temp": True, "host": socket.gethostname(), "pid": os.getpid(),
        "target": final.name,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}) + "\n")
    return tmp


def _marker(folder: Path) -> dict | None:
    try:
        m = json.loads((folder / TMP_MARKER).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return m if isinstance(m, dict) and m.get("facility_temp") is True else None


def remove_stale(final: Path) -> list[str]:
    """Remove what a killed earlier run of the same ``--out`` left beside it; the names removed.

    Only ``.NAME.tmp-*`` folders carrying :data:`TMP_MARKER` of a process of this host that no
    longer runs, and ``.NAME.old-PID`` folders holding a facility output whose process no
    longer runs while ``NAME`` itself exists again.
    """
    from facility.report.outdir import output_kind

    final = Path(final)
    parent = final.parent
    if not parent.is_dir():
        return []
    tmp_re = re.compile(rf"^\.{re.escape(final.name)}\.tmp-")
    old_re = re.compile(rf"^\.{re.escape(final.name)}\.old-(\d+)$")
    host = socket.gethostname()
    removed = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    for p in entries:
        if p.is_symlink() or not p.is_dir():
            continue
        if tmp_re.match(p.name):
            m = _marker(p)
            if m is None or m.get("host") != host or not isinstance(m.get("pid"), int) or pid_alive(m["pid"]):
                continue
        else:
            mo = old_re.match(p.name)
            if mo is None or pid_alive(int(mo.group(1))) or not final.exists() or output_kind(p) is None:
                continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p.name)
    return removed


def swap_into_place(tmp: Path, final: Path) -> None:
    """Replace ``final`` (absent, empty, or an earlier output checked by the caller) with ``tmp``.

    The earlier folder is moved aside first (``.NAME.old-PID``) and removed after the new one is
    in place: a kill at any moment leaves either the earlier or the new result under ``NAME``
    (or, in the instant between the two renames, the earlier one as ``.NAME.old-PID``).
    """
    tmp, final = Path(tmp), Path(final)
    (tmp / TMP_MARKER).unlink(missing_ok=True)
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
