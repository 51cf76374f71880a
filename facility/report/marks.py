"""The marks that tell facility's files from a user's: the marker file of a temporary output
folder (:data:`TMP_MARKER`) and the sidecar ``.NAME.facility.json`` of a single output file
(:func:`write_sidecar`, :func:`owned_file`).

Below both :mod:`facility.report.staging` (which writes the marks) and
:mod:`facility.report.outdir` (which reads them before replacing a target).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["TMP_MARKER", "sidecar_path", "sidecar_text", "write_sidecar", "owned_file"]

#: Marker file of a temporary output folder while it is being written.
TMP_MARKER = ".facility-tmp.json"


def sidecar_path(path: Path) -> Path:
    """``.NAME.facility.json`` beside ``path``."""
    path = Path(path)
    return path.with_name(f".{path.name}.facility.json")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sidecar_text(path: Path, command: str, content: Path | None = None) -> str:
    """The sidecar of ``path`` written by ``command``: its name, size and SHA-256, read from
    ``content`` (the temporary file that becomes ``path``) when given."""
    path = Path(path)
    src = Path(content) if content is not None else path
    return json.dumps({"facility_output": command, "file": path.name, "bytes": src.stat().st_size,
                       "sha256": _sha256(src),
                       "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")},
                      indent=2) + "\n"


def write_sidecar(path: Path, command: str) -> None:
    """Mark ``path`` as written by facility's ``command`` (its size and SHA-256)."""
    path = Path(path)
    side = sidecar_path(path)
    tmp = side.with_name(f"{side.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(sidecar_text(path, command))
        os.replace(tmp, side)
    finally:
        tmp.unlink(missing_ok=True)


def owned_file(path: Path) -> bool:
    """Whether ``path`` is a file facility wrote and nobody changed since (its sidecar says so)."""
    path = Path(path)
    try:
        m = json.loads(sidecar_path(path).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    if not isinstance(m, dict) or "facility_output" not in m or m.get("file") != path.name:
        return False
    try:
        return m.get("bytes") == path.stat().st_size and m.get("sha256") == _sha256(path)
    except OSError:
        return False
