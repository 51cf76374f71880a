"""Command-line flags of ``facility sweep`` and its entry point (the lead's CLI dispatches here)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from facility.errors import EXIT_ERROR, EXIT_OK, FacilityError, exit_code_for

__all__ = ["add_sweep_arguments", "main_sweep", "main"]

log = logging.getLogger(__name__)


def _has(parser: argparse.ArgumentParser, *, dest: str | None = None, option: str | None = None) -> bool:
    for action in parser._actions:  # argparse keeps no public registry of its actions
        if dest is not None and action.dest == dest:
            return True
        if option is not None and option in action.option_strings:
            return True
    return False


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the flags of the ``sweep`` subcommand on ``parser``.

    ``SCENARIO`` (positional) and ``--set`` are added only when the parser lacks them (a
    parent parser may provide them for every command).
    """
    if not _has(parser, dest="scenario"):
        parser.add_argument("scenario", type=Path, help="base scenario (TOML)")
    if not _has(parser, option="--set"):
        parser.add_argument("--set", dest="set", action="append", default=None, metavar="KEY=V1,V2,...",
                            help="swept key: a value list 'v1,v2,v3' or a range 'start:stop:n' (n points, "
                                 "both ends included); repeat for a Cartesian product")
    parser.add_argument("--cases", type=Path, default=None, metavar="CSV",
                        help="explicit cases: header = scenario keys (optional case_id column), one case per row")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="sweep folder: sweep.parquet/.csv, cases/<id>/, pareto.png/.html")
    parser.add_argument("--mode", choices=("run", "size"), default="run",
                        help="each case is a full run (default) or an optimal sizing + verification run")
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local process pool (default) or a Dask LocalCluster")
    parser.add_argument("--scheduler", default=None, metavar="ADDR",
                        help="submit to an existing Dask scheduler, e.g. tcp://host:8786 (implies dask; "
                             "workers must see --out)")
    parser.add_argument("--workers", type=int, default=None, help="parallel workers (default: every core)")
    parser.add_argument("--resume", action="store_true",
                        help="finish an interrupted sweep in --out: run only the cases without a folder")
    parser.add_argument("--dask-threads", action="store_true",
                        help="LocalCluster workers as threads of this process instead of processes")
    parser.add_argument("--case-plots", action="store_true", help="write each case's PNG plots too")
    parser.add_argument("--case-fn", default=None, metavar="MODULE:FUNCTION",
                        help="advanced: replace the co-simulation of each case (tests, custom studies)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main_sweep(args: argparse.Namespace) -> int:
    """Run ``facility sweep`` from parsed arguments; returns the exit code.

    0: the sweep finished (failed cases are rows with status = error, summarized on stderr);
    2: bad input (scenario file, --set, --cases, a folder holding another sweep), or every
    case failed on bad input; the exit code of the first error when every case failed; 1 for an
    unexpected failure.
    """
    from facility.sweep.engine import run_sweep

    set_items = getattr(args, "set", None) or getattr(args, "overrides", None) or []
    quiet = bool(getattr(args, "quiet", False))
    try:
        df = run_sweep(args.scenario, list(set_items), args.out, mode=getattr(args, "mode", "run"),
                       executor=getattr(args, "executor", "local"), scheduler=getattr(args, "scheduler", None),
                       workers=getattr(args, "workers", None), resume=getattr(args, "resume", False),
                       cases_csv=getattr(args, "cases", None), progress=not (quiet or getattr(args, "no_progress", False)),
                       case_fn=getattr(args, "case_fn", None), plots=getattr(args, "case_plots", False),
                       dask_processes=not getattr(args, "dask_threads", False))
    except FacilityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print("interrupted: finished cases are kept; rerun with --resume", file=sys.stderr)
        return 130
    n = len(df)
    bad = df[df["status"] != "ok"] if n else df
    if n and len(bad) == n:
        print(f"error: every case failed; first: {bad['error_type'].iloc[0]}: {bad['error'].iloc[0]}", file=sys.stderr)
        return _code_of(bad["error_type"].iloc[0])
    if quiet:
        return EXIT_OK
    print(f"sweep: {n - len(bad)} of {n} cases ok -> {Path(args.out) / 'sweep.parquet'}", file=sys.stderr)
    for _, row in bad.head(5).iterrows():
        print(f"  {row['case_id']}: {row['error_type']}: {str(row['error']).splitlines()[0] if row['error'] else ''}",
              file=sys.stderr)
    if len(bad) > 5:
        print(f"  … and {len(bad) - 5} more (see the error column)", file=sys.stderr)
    return EXIT_OK


def _code_of(error_type: str) -> int:
    import facility.errors as fe

    cls = getattr(fe, str(error_type), None)
    return getattr(cls, "exit_code", EXIT_ERROR) if isinstance(cls, type) else EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """``python -m facility.sweep SCENARIO --set … --out DIR`` (same flags as ``facility sweep``)."""
    parser = argparse.ArgumentParser(prog="python -m facility.sweep", description="Sweep a scenario over overrides.")
    add_sweep_arguments(parser)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    return main_sweep(parser.parse_args(argv))
