"""Whether the tests that mount real file systems (tmpfs, bind mounts) in a private mount
namespace can run here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile

__all__ = ["can_mount"]


def can_mount(options: str) -> str:
    """'' when this process may mount a tmpfs with ``-o options`` in a private mount namespace
    (``unshare -m``), else why not (a pytest skip reason)."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return "needs Linux and unshare(1)"
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            f'mount -t tmpfs -o {options} facility-probe "$1"', "sh", d],
                           capture_output=True, text=True)
    return "" if r.returncode == 0 else f"cannot mount a tmpfs in a private namespace: {r.stderr.strip()[:120]}"
