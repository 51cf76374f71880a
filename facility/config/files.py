"""The one reader of user-supplied files: scenario TOML, library files, trace paths, cases CSV.

Every file a user names (the scenario on the command line, a ``trace_file``, a GPU model or
transformer type given as a path, a spec given as a path, a sweep's ``--cases`` CSV) goes
through :func:`check_file` before it is opened and through :func:`read_toml` /
:func:`read_text` when it is read. They turn every way a file can fail into a
:class:`~facility.errors.ScenarioError` that names

* the file,
* the key (or command-line option) that pointed to it, and
* what to do about it,

instead of a bare ``OSError``, ``UnicodeDecodeError``, ``TOMLDecodeError`` or
``RecursionError`` (which the CLI would report as exit 1):

================================ ============================================================
failure                          message
================================ ============================================================
path holds a NUL byte            "holds a NUL byte ..."
path or one name too long        "path too long (N characters; this system allows M)"
missing                          "no such file"
a folder                         "is a folder, not a file"
no read permission               "permission denied"
not a regular file (FIFO, ...)   "not a regular file"
too large                        "N MiB; a ... file is at most M MiB" (scenario, library, CSV)
not UTF-8                        "not a UTF-8 text file (byte 0x.. at offset N)"
bad TOML                         "not valid TOML: <reason> (at line L, column C)"
nested too deeply                "nested deeper than N levels at KEY.PATH"
================================ ============================================================

Examples
--------
>>> from facility.config.files import check_file
>>> check_file("no/such/file.toml", key="jobs.0.gpu")          # doctest: +ELLIPSIS
Traceback (most recent call last):
...
facility.errors.ScenarioError: jobs.0.gpu = 'no/such/file.toml': no such file; point jobs.0.gpu to a readable file
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tomllib
from pathlib import Path
from typing import Any

from facility.errors import ScenarioError

__all__ = [
    "MAX_TOML_BYTES",
    "MAX_CSV_BYTES",
    "MAX_TRACE_BYTES",
    "MAX_DEPTH",
    "shown",
    "check_path_text",
    "check_file",
    "read_bytes",
    "read_text",
    "read_toml",
    "check_depth",
    "is_explicit_path",
    "free_bytes",
]

#: Largest scenario or library TOML file read. [bytes] (a scenario is a few kB)
MAX_TOML_BYTES = 16 * 2**20
#: Largest ``--cases`` CSV read. [bytes]
MAX_CSV_BYTES = 256 * 2**20
#: Largest trace file (``jobs.<i>.trace_file``) accepted. [bytes] Parsing holds about 10 bytes
#: of memory per byte of the file (measured: a 46 MB 8-GPU nvidia-smi log, peak RSS +465 MB;
#: :mod:`facility.scenario.resources`), so 256 MiB of trace need ~2.6 GiB on top of the run.
MAX_TRACE_BYTES = 256 * 2**20
#: Deepest nesting of tables/arrays accepted in a scenario (the schema needs 4:
#: ``spec.bands.<i>.max_hz``).
MAX_DEPTH = 12

_NAME_MAX_FALLBACK = 255
_PATH_MAX_FALLBACK = 4096


def shown(text: Any, limit: int = 80) -> str:
    """``repr`` of a user value for a message, cut to ``limit`` characters (long values say
    how long they were)."""
    r = repr(text)
    if len(r) <= limit:
        return r
    n = len(text) if isinstance(text, (str, bytes)) else len(r)
    return f"{r[: limit - 20]}…' ({n:,} characters)"


def _where(path: Any, key: str | None) -> str:
    text = str(path)
    if key:
        return f"{key} = {shown(text)}"
    return text if text.isprintable() and len(text) <= 200 else shown(text)


def _limits(path: str) -> tuple[int, int]:
    """(longest file name, longest path) of the file system holding ``path``."""
    probe = os.path.dirname(path) or "."
    while not os.path.isdir(probe) and os.path.dirname(probe) != probe:  # isdir never raises
        probe = os.path.dirname(probe) or "."
    try:
        return (os.pathconf(probe, "PC_NAME_MAX"), os.pathconf(probe, "PC_PATH_MAX"))
    except (OSError, ValueError, AttributeError):
        return _NAME_MAX_FALLBACK, _PATH_MAX_FALLBACK


def check_path_text(path: str | os.PathLike, *, key: str | None = None, hint: str = "") -> str:
    """Refuse a path that no file system accepts (NUL byte, too long) before any OS call.

    Parameters
    ----------
    path : str or path-like
        The path as the user gave it.
    key : str, optional
        Scenario key or option that gave it (``jobs.0.trace_file``, ``--cases``).
    hint : str
        What to do, appended to the message.

    Returns
    -------
    str
        The path as text.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):  # pragma: no cover - we never pass bytes
        text = os.fsdecode(text)
    where = _where(text, key)
    if "\x00" in text:
        raise ScenarioError(f"{where}: the path holds a NUL byte (\\x00), which no file name can "
                            f"contain{hint}")
    if not text.strip():
        raise ScenarioError(f"{where}: empty path{hint}")
    name_max, path_max = _limits(text)
    longest = max((len(os.fsencode(p)) for p in Path(text).parts), default=0)
    if len(os.fsencode(text)) >= path_max or longest > name_max:
        raise ScenarioError(
            f"{where}: path too long ({len(text):,} characters, longest name {longest:,}; this "
            f"system allows {path_max - 1:,} and {name_max:,}){hint}")
    return text


def _os_message(exc: OSError, what: str) -> str:
    return {
        errno.ENOENT: f"no such {what}",
        errno.EACCES: f"permission denied: this user cannot read the {what}",
        errno.EPERM: f"permission denied: this user cannot read the {what}",
        errno.EISDIR: f"is a folder, not a {what}",
        errno.ENOTDIR: f"no such {what} (a part of the path is not a folder)",
        errno.ENAMETOOLONG: "path too long for this system",
        errno.ELOOP: "too many levels of symbolic links",
    }.get(exc.errno, f"the {what} cannot be read ({exc.strerror or type(exc).__name__})")


def check_file(path: str | os.PathLike, *, key: str | None = None, what: str = "file",
               hint: str = "", max_bytes: int | None = None, size_hint: str = "") -> Path:
    """A readable regular file, or a :class:`ScenarioError` saying why not.

    Parameters
    ----------
    path : str or path-like
        The file.
    key : str, optional
        Scenario key or option that named it, for the message.
    what : str
        What the file is ("scenario file", "trace file", "GPU model file", ...).
    hint : str
        What to do (appended; a default hint names the key).
    max_bytes : int, optional
        Largest size accepted. [bytes]
    size_hint : str
        What to do about a file past ``max_bytes`` (appended to that message only, instead of
        ``hint``).

    Returns
    -------
    pathlib.Path
    """
    if not hint:
        hint = f"; point {key} to a readable {what}" if key else f"; give a readable {what}"
    text = check_path_text(path, key=key, hint=hint)
    p = Path(text)
    where = _where(text, key)
    try:
        st = p.stat()
    except OSError as exc:
        raise ScenarioError(f"{where}: {_os_message(exc, what)}{hint}") from None
    except ValueError as exc:  # pragma: no cover - check_path_text catches NUL already
        raise ScenarioError(f"{where}: {what}: invalid path ({exc}){hint}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ScenarioError(f"{where}: is a folder, not a {what}{hint}")
    if not stat.S_ISREG(st.st_mode):
        raise ScenarioError(f"{where}: not a regular file (a device, FIFO or socket), so not a {what}{hint}")
    if not os.access(p, os.R_OK):
        raise ScenarioError(f"{where}: permission denied: this user cannot read the {what}{hint}")
    if max_bytes is not None and st.st_size > max_bytes:
        raise ScenarioError(f"{where}: {what} of {st.st_size / 2**20:,.1f} MiB; a {what} is at most "
                            f"{max_bytes / 2**20:,.0f} MiB{size_hint or hint}")
    return p


def read_bytes(path: str | os.PathLike, *, key: str | None = None, what: str = "file",
               hint: str = "", max_bytes: int | None = None) -> bytes:
    """The bytes of a user file (see :func:`check_file`; errors while reading are mapped too)."""
    p = check_file(path, key=key, what=what, hint=hint, max_bytes=max_bytes)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise ScenarioError(f"{_where(p, key)}: {_os_message(exc, what)}"
                            f"{hint or f'; point {key} to a readable {what}'}") from None


def _decode(raw: bytes, p: Path, key: str | None, what: str) -> str:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = raw[exc.start:exc.start + 1].hex()
        raise ScenarioError(f"{_where(p, key)}: {what} is not a UTF-8 text file (byte 0x{bad} at "
                            f"offset {exc.start:,}); save it as UTF-8") from None
    return text


def read_text(path: str | os.PathLike, *, key: str | None = None, what: str = "file",
              hint: str = "", max_bytes: int | None = None) -> str:
    """The text of a user file, decoded as UTF-8 (a byte-order mark is dropped)."""
    raw = read_bytes(path, key=key, what=what, hint=hint, max_bytes=max_bytes)
    return _decode(raw, Path(path), key, what)


def check_depth(data: Any, *, source: str, max_depth: int = MAX_DEPTH) -> None:
    """Refuse tables/arrays nested deeper than ``max_depth`` (iteratively: no recursion)."""
    stack: list[tuple[Any, tuple, int]] = [(data, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > max_depth:
            key = ".".join(map(str, path[:max_depth + 1])) or "(top level)"
            raise ScenarioError(f"{source}: {key}: tables and arrays nested deeper than {max_depth} "
                                f"levels; a scenario needs at most 4 (see docs/scenario-reference.md)")
        if isinstance(node, dict):
            stack.extend((v, path + (k,), depth + 1) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, path + (i,), depth + 1) for i, v in enumerate(node))


def read_toml(path: str | os.PathLike, *, key: str | None = None, what: str = "scenario file",
              hint: str = "") -> dict:
    """Read a TOML file a user gave.

    Parameters
    ----------
    path : str or path-like
        The file.
    key : str, optional
        Scenario key that named it (library files); None for the scenario itself.
    what : str
        What it is, for messages.
    hint : str
        What to do, for messages.

    Raises
    ------
    ScenarioError
        Every failure of :func:`check_file`, a file over :data:`MAX_TOML_BYTES`, text that is
        not UTF-8, invalid TOML (with line and column), nesting deeper than :data:`MAX_DEPTH`.
    """
    p = Path(check_path_text(path, key=key, hint=hint))
    text = read_text(p, key=key, what=what, hint=hint, max_bytes=MAX_TOML_BYTES)
    where = _where(p, key)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{where}: not valid TOML: {exc}"
                            f"{hint or '; fix the file (see docs/scenario-reference.md)'}") from None
    except RecursionError:
        raise ScenarioError(f"{where}: not a usable TOML file: arrays or tables nested too deeply to "
                            f"read; a scenario needs at most 4 levels") from None
    check_depth(data, source=str(p) if key is None else where)
    return data


def is_explicit_path(name: str) -> bool:
    """Whether a library reference is a path (has a folder separator or ends in ``.toml``)
    rather than a name in ``models/``."""
    return "/" in name or os.sep in name or name.lower().endswith(".toml")


def free_bytes(path: str | os.PathLike) -> int | None:
    """Space an unprivileged writer has left on the file system of ``path`` (its first existing
    ancestor, ``~`` expanded): ``shutil.disk_usage``'s ``free``, ``f_bavail * f_frsize``.
    [bytes] (None when unknown)"""
    p = Path(path).expanduser().absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free)
    except OSError:
        return None
