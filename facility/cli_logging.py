"""The command line's logging: one stderr handler on the root logger that prints each warning
once as a ``warning: …`` line. Used by :mod:`facility.cli` and :mod:`facility.sweep.cli`.
"""

from __future__ import annotations

import argparse
import logging
import sys

__all__ = ["setup_logging"]


class _Once(logging.Filter):
    """Let each warning or error message through once per command (a size-and-verify loop, the
    per-job checks and Python's ``warnings`` would otherwise repeat it)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


class _Lower(logging.Formatter):
    """``warning: message`` — the prefix the CLI's own lines use (not ``WARNING:``)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return f"{record.levelname.lower()}: {text}"


def setup_logging(args: argparse.Namespace) -> None:
    """One stderr handler on the root logger at the chosen level: ``warning: …`` lines, each
    once. The handler's own level also holds back the INFO lines of libraries that set their
    loggers' levels themselves (Dask's scheduler and nanny)."""
    level = logging.ERROR if args.quiet else (logging.DEBUG if args.verbose > 1 else
                                              logging.INFO if args.verbose == 1 else logging.WARNING)
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_facility_cli", False):
            root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler._facility_cli = True   # replaced by the next main() of this process
    handler.setLevel(level)
    handler.setFormatter(_Lower("%(message)s"))
    handler.addFilter(_Once())
    root.addHandler(handler)
    root.setLevel(level)
