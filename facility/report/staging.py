"""Temporary folders, the atomic swap and the marks that tell facility's files from a user's.

A command writes its result into a temporary folder beside ``--out`` (``.NAME.tmp-XXXX``)
and swaps it into place when it is complete (:func:`swap_into_place`). The temporary folder
holds a marker file (:data:`TMP_MARKER`: the writer's host and process id) until just before
the swap, so the next command that writes the same ``--out`` can recognise — and remove —
the temporary folders of an earlier run that was killed (:func:`remove_stale`): only folders
named ``.NAME.tmp-*`` with that marker whose process is gone, and ``.NAME.old-PID`` folders
(an earlier result moved aside during a swap) that hold a facility output and whose process
is gone. Nothing else beside ``--out`` is touched.

A single output file (``trace``, ``export-net``, ``grid-modes``, ``record``) carries a sidecar
``.NAME.facility.json`` (:func:`write_sidecar`) with the command and the file's SHA-256:
``--force`` replaces a file only when its sidecar says facility wrote exactly this content
(:func:`owned_file`). ``trace``, ``export-net`` and ``grid-modes`` write the file and its
sidecar through :func:`atomic_file` (a temporary file placed when complete).

Folders are created with the permissions the umask allows (``tempfile.mkdtemp`` alone gives
0700).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import socket
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from facility.config.files import free_bytes
from facility.errors import ResourceError, ScenarioError, is_no_space
from facility.report import outdir
from facility.report.marks import TMP_MARKER, owned_file, sidecar_path, sidecar_text, write_sidecar

__all__ = ["TMP_MARKER", "pid_alive", "make_temp_dir", "swap_into_place", "remove_stale", "apply_umask",
           "sidecar_path", "write_sidecar", "owned_file", "no_space_error", "free_bytes", "rename_no_replace",
           "no_space_as_error", "atomic_file"]


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
    try:
        apply_umask(tmp)
        (tmp / TMP_MARKER).write_text(json.dumps({
            "facility_temp": True, "host": socket.gethostname(), "pid": os.getpid(),
            "target": final.name,
            "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}) + "\n")
    except BaseException:           # a full disk: the marker did not fit; leave nothing behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def _size_text(n: int | None) -> str:
    if n is None:
        return "unknown"
    for unit, f in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n} B"


def no_space_error(exc: BaseException, target: Path, flag: str = "--out", written: str | None = None):
    """The :class:`~facility.errors.ResourceError` (exit code 2) for a write that found no room.

    Parameters
    ----------
    exc : BaseException
        The ``OSError`` (ENOSPC, EDQUOT, EFBIG).
    target : pathlib.Path
        The ``--out`` being written.
    flag : str
        The option, for the message.
    written : str, optional
        What was being written (a file name); else the error's own file name, if any.
    """
    what = written or (Path(exc.filename).name if isinstance(exc, OSError) and exc.filename else None)
    cause = "no space left on device"
    if isinstance(exc, OSError) and exc.errno is not None:
        cause = {errno.EDQUOT: "disk quota exceeded", errno.EFBIG: "file too large for the file system"}.get(
            exc.errno, cause)
    free = free_bytes(Path(target).parent)
    return ResourceError(
        f"{flag} {target}: {cause} writing {target}{f' ({what})' if what else ''}: "
        f"{_size_text(free)} free on its file system; free space or choose another {flag} — nothing was "
        f"written there (the temporary files were removed; an earlier result is untouched)")


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
            if mo is None or pid_alive(int(mo.group(1))) or not final.exists() or outdir.output_kind(p) is None:
                continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p.name)
    return removed


def swap_into_place(tmp: Path, final: Path, expect: dict | None = None, flag: str = "--out") -> None:
    """Replace ``final`` (absent, empty, or an earlier output checked by the caller) with ``tmp``.

    The earlier folder is moved aside first (``.NAME.old-PID``) and removed after the new one is
    in place: a kill at any moment leaves either the earlier or the new result under ``NAME``
    (or, in the instant between the two renames, the earlier one as ``.NAME.old-PID``).

    ``expect`` (:func:`facility.report.claim.target_state` as last checked): where ``final``
    was absent or empty, ``tmp`` is renamed onto it in one step that the kernel refuses if a
    folder with content appeared there; where it was an earlier result, the folder moved aside
    must be that one (same device and inode), else it is moved back and the swap refused.
    """
    tmp, final = Path(tmp), Path(final)
    (tmp / TMP_MARKER).unlink(missing_ok=True)
    if expect is not None and expect["kind"] in ("absent", "empty"):
        rename_no_replace(tmp, final, flag)
        return
    old = None
    if final.exists():
        old = final.with_name(f".{final.name}.old-{os.getpid()}")
        final.rename(old)
        if expect is not None and expect.get("ino") is not None:
            st = os.stat(old, follow_symlinks=False)
            if (st.st_dev, st.st_ino) != (expect.get("dev"), expect.get("ino")):
                with contextlib.suppress(OSError):    # put it back; refused even where that fails
                    old.rename(final)
                raise ScenarioError(
                    f"{flag} {final}: was replaced by another command while this one ran; refusing to "
                    f"replace a result this command did not find there — this result was not written; "
                    f"rerun with another {flag}")
    tmp.rename(final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def rename_no_replace(tmp: Path, final: Path, flag: str = "--out") -> None:
    """Move folder ``tmp`` to ``final`` where ``final`` is absent or an empty folder.

    One ``rename``: the kernel replaces an empty folder and refuses one with content
    (``ENOTEMPTY``/``EEXIST``) or a file (``ENOTDIR``), so a result that appeared at the last
    moment is never replaced.
    """
    try:
        os.rename(tmp, final)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
            raise ScenarioError(
                f"{flag} {final}: something was written there while this command ran (another "
                f"command?); refusing to replace it — this result was not written; rerun with another "
                f"{flag}") from None
        raise


@contextlib.contextmanager
def no_space_as_error(target: Path, flag: str = "--out", cleanup=None) -> Iterator[None]:
    """Turn a full disk (:func:`facility.errors.is_no_space`) met in the block into
    :func:`no_space_error` for ``target``; any other error passes unchanged.

    Parameters
    ----------
    target : pathlib.Path
        The ``--out`` being written.
    flag : str
        The option, for the message.
    cleanup : callable, optional
        Removes the temporary files (no arguments); it runs first, before the message measures
        the free space, so that it counts what they took.
    """
    try:
        yield
    except OSError as exc:
        if not is_no_space(exc):
            raise
        if cleanup is not None:
            cleanup()
        raise no_space_error(exc, target, flag) from None


@contextlib.contextmanager
def atomic_file(full: Path, *, force: bool, command: str, flag: str = "--out",
                suffixes: tuple[str, ...] | None = None) -> Iterator[Path]:
    """Yield a temporary file beside ``full``; on success move it into place with its sidecar.

    Everything that takes space is written before anything is placed: the file (by the
    caller, into the yielded path) and its sidecar ``.NAME.facility.json``
    (:func:`facility.report.marks.sidecar_text`); then ``full`` is checked again
    (:func:`facility.report.outdir.check_out_file`) and the file placed with ``link`` where
    ``full`` was new (which fails if a file appeared there meanwhile: never replaced without
    ``force``) or ``replace`` where ``force`` replaces a file facility wrote. A failure removes
    both temporary files and leaves ``full`` as it was.

    Raises
    ------
    ScenarioError
        ``full`` may not be written or replaced (it appeared meanwhile, or is not facility's).
    ResourceError
        No space left on the file system of ``full`` (or a quota reached).
    """
    full = Path(full)
    side = sidecar_path(full)
    tmp = full.with_name(f".{full.name}.tmp-{os.getpid()}")
    side_tmp = side.with_name(f"{side.name}.tmp-{os.getpid()}")

    def remove_temps():
        tmp.unlink(missing_ok=True)
        side_tmp.unlink(missing_ok=True)

    try:
        with no_space_as_error(full, flag, cleanup=remove_temps):
            full.parent.mkdir(parents=True, exist_ok=True)
            yield tmp
            side_tmp.write_text(sidecar_text(full, command, content=tmp))
            existed = full.exists() or full.is_symlink()
            outdir.check_out_file(full, force=force, flag=flag, suffixes=suffixes)  # nothing appeared meanwhile
            if existed:
                os.replace(tmp, full)
            else:
                try:
                    os.link(tmp, full)        # fails if a file appeared at the last moment
                except FileExistsError:
                    raise ScenarioError(f"{flag} {full}: a file appeared there while this command ran "
                                        f"(another command?); refusing to replace it — nothing was written; "
                                        f"rerun with another {flag}") from None
                except OSError as exc:
                    if is_no_space(exc):
                        raise
                    os.replace(tmp, full)     # a file system without hard links (checked just above)
            os.replace(side_tmp, side)
    finally:
        remove_temps()
