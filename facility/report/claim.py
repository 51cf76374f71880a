"""Who may write an ``--out``: a claim held from the command's start to its swap, and the last
check before a result is moved into place.

Two commands started on the same new ``--out`` both find it new; without more, the later one
to finish would replace the earlier one's complete result, although neither was given
``--force``. So a command that writes a result folder claims its ``--out`` at its start
(:func:`claim_out`):

* a lock file ``.NAME.lock`` beside ``--out``, held with ``flock`` (released by the kernel
  when the process ends, SIGKILL included, so a killed command leaves no lock that blocks the
  next one; the file itself is reused). A second command finds the lock held and exits 2 at
  once, naming the holder (its process id, host and command);
* what ``--out`` held when it was claimed (its :func:`target_state`: absent, an empty folder,
  or an earlier facility result, with the folder's device and inode), after the ``--out``
  policy was checked again under the lock.

The last check before the swap (:func:`check_before_swap`, called by
:func:`facility.report.io.atomic_dir`) compares what ``--out`` holds now with what the claim
recorded and refuses (exit 2) to replace anything else: a result the run did not own is never
replaced. Where ``--out`` was absent or empty, the swap itself is one ``rename`` onto it,
which the kernel refuses when a folder with content appeared there
(:func:`facility.report.staging.rename_no_replace`).

Library calls (``run_scenario(out_dir=...)``) take no claim; :func:`check_before_swap` then
refuses a target another live command has claimed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from facility.errors import ScenarioError, is_no_space
from facility.report.outdir import MANIFEST_FILE, _resolved, check_out_dir, output_kind
from facility.report.staging import no_space_error

__all__ = ["Claim", "claim_out", "held_claim", "lock_path", "target_state", "check_before_swap"]


def lock_path(final: Path) -> Path:
    """The lock file of ``--out`` ``final``: ``.NAME.lock`` beside it."""
    final = Path(final)
    return final.with_name(f".{final.name}.lock")


def target_state(final: Path) -> dict:
    """What ``final`` holds now: ``{"kind": "absent"}``, ``{"kind": "empty", ...}``,
    ``{"kind": "result", ...}`` (a facility output) or ``{"kind": "other", ...}``, with the
    folder's ``dev`` and ``ino`` (and the manifest's ``created_utc`` for a result)."""
    final = Path(final)
    try:
        st = os.stat(final, follow_symlinks=False)
    except FileNotFoundError:
        return {"kind": "absent"}
    ident = {"dev": st.st_dev, "ino": st.st_ino}
    if not final.is_dir() or final.is_symlink():
        return {"kind": "other", **ident}
    try:
        empty = not any(final.iterdir())
    except OSError:
        return {"kind": "other", **ident}
    if empty:
        return {"kind": "empty", **ident}
    kind = output_kind(final, strict=False)
    if kind is None:
        return {"kind": "other", **ident}
    created = None
    with contextlib.suppress(OSError, ValueError):
        created = json.loads((final / MANIFEST_FILE).read_text()).get("created_utc")
    return {"kind": "result", "output": kind, "created_utc": created, **ident}


def _describe_state(state: dict) -> str:
    k = state["kind"]
    if k == "absent":
        return "did not exist"
    if k == "empty":
        return "was an empty folder"
    if k == "result":
        return f"held a facility {state.get('output', '')} result created {state.get('created_utc') or '?'}"
    return "held something else"


def _same(a: dict, b: dict) -> bool:
    if a["kind"] != b["kind"]:
        # an absent target that became an empty folder (or the reverse) is still free
        return {a["kind"], b["kind"]} <= {"absent", "empty"}
    if a["kind"] == "absent":
        return True
    if a["kind"] == "empty":
        return True          # any empty folder may be replaced
    return (a.get("dev"), a.get("ino"), a.get("created_utc")) == (b.get("dev"), b.get("ino"), b.get("created_utc"))


@dataclass
class Claim:
    """A held claim on an ``--out``: the lock's file and descriptor, what the target held when
    claimed, and the parent folders the claim created (removed again if left empty)."""

    final: Path
    lock: Path
    fd: int
    state: dict
    created_dirs: list[Path] = field(default_factory=list)


#: Claims this process holds, by absolute target path.
_HELD: dict[Path, Claim] = {}


def held_claim(final: Path) -> Claim | None:
    """The claim this process holds on ``final`` (absolute), if any."""
    return _HELD.get(Path(final))


def _holder_text(lock: Path) -> str:
    try:
        info = json.loads(lock.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return "another facility command"
    if not isinstance(info, dict):
        return "another facility command"
    cmd = info.get("command") or "?"
    return (f"another facility command ({cmd!s:.60}, process {info.get('pid', '?')} on "
            f"{info.get('host', '?')}, since {info.get('created_utc', '?')})")


def _make_parents(folder: Path) -> list[Path]:
    made = []
    missing = []
    p = folder
    while not p.exists():
        missing.append(p)
        p = p.parent
    for p in reversed(missing):
        try:
            p.mkdir()
            made.append(p)
        except FileExistsError:
            pass
    return made


def _acquire(lock: Path, flag: str, final: Path) -> int:
    """Open and ``flock`` the lock file (the inode still at ``lock``); refuse when held."""
    for _ in range(20):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                # a file system without locks: no claim, the last check before the swap stays
                return os.open(lock, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ScenarioError(
                    f"{flag} {final}: {_holder_text(lock)} is writing this --out; two commands on one "
                    f"--out would replace each other's result — wait for it to finish or give another "
                    f"folder") from None
            raise
        # the holder before us may have removed the file on release: then the lock we hold
        # is on a file nobody else will open; try again with the file now at that path
        try:
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)
    raise ScenarioError(f"{flag} {final}: could not take the lock {lock} (it keeps changing); give another "
                        f"folder")


@contextlib.contextmanager
def claim_out(path: str | Path, *, force: bool, kinds: tuple[str, ...] = ("run", "size"),
              flag: str = "--out", command: str | None = None) -> Iterator[Claim]:
    """Claim a result folder for this command until the block ends (see the module docstring).

    The ``--out`` policy (:func:`facility.report.outdir.check_out_dir`) is checked again once
    the lock is held, and what the folder holds then is recorded in the claim.

    Raises
    ------
    ScenarioError
        Another command holds the claim, or the folder may not be written (exit code 2).
    ResourceError
        No space for the lock file.
    """
    final = _resolved(path, flag)
    made: list[Path] = []
    lock = lock_path(final)
    try:
        made = _make_parents(final.parent)
        fd = _acquire(lock, flag, final)
    except OSError as exc:
        _remove_empty(made)
        if is_no_space(exc):
            raise no_space_error(exc, final, flag) from None
        raise ScenarioError(f"{flag} {final}: cannot create the lock file {lock} ({exc.strerror or exc}); "
                            f"choose a writable folder") from None
    claim = None
    try:
        check_out_dir(final, force=force, kinds=kinds, flag=flag)
        claim = Claim(final=final, lock=lock, fd=fd, state=target_state(final), created_dirs=made)
        text = json.dumps({"facility_lock": True, "host": socket.gethostname(), "pid": os.getpid(),
                           "command": command or " ".join(sys.argv[:2]),
                           "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                           "target": final.name, "state": claim.state}) + "\n"
        with contextlib.suppress(OSError):    # the lock holds without its description
            os.ftruncate(fd, 0)
            os.pwrite(fd, text.encode(), 0)
        _HELD[final] = claim
        yield claim
    finally:
        _HELD.pop(final, None)
        with contextlib.suppress(OSError):
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:
                os.unlink(lock)        # while still held: nobody can have taken it meanwhile
        os.close(fd)
        if not final.exists():
            _remove_empty(made)


def _remove_empty(folders: list[Path]) -> None:
    for p in reversed(folders):
        try:
            p.rmdir()
        except OSError:
            break


def check_before_swap(final: Path, flag: str = "--out", entry_state: dict | None = None) -> dict:
    """The last check before a result is moved into ``final``; returns what it holds now.

    With a claim of this process on ``final``: what ``final`` holds must be what the claim
    recorded (the same earlier result, or still nothing). Without one: no other live command
    may hold a claim on it, and what it holds must be ``entry_state`` (what the writer saw when
    it began writing), if given.

    Raises
    ------
    ScenarioError
        ``final`` changed since it was claimed (another command wrote it), or another command
        holds it (exit code 2). This run's result is not written.
    """
    final = Path(final)
    now = target_state(final)
    claim = held_claim(final)
    if claim is not None:
        expected = claim.state
    else:
        lock = lock_path(final)
        if lock.exists():
            try:
                fd = os.open(lock, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            except OSError:
                fd = None
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except OSError:
                    raise ScenarioError(f"{flag} {final}: {_holder_text(lock)} is writing it; this "
                                        f"result was not written — give another folder") from None
                finally:
                    os.close(fd)
        expected = entry_state
    if expected is not None and not _same(expected, now):
        raise ScenarioError(
            f"{flag} {final}: changed while this command ran: it {_describe_state(expected)} when the "
            f"command began and now {_describe_state(now).replace('did not exist', 'does not exist')}"
            f"; refusing to replace what this command did not find there (another command wrote it?) — "
            f"this result was not written; rerun with another {flag}")
    return now
