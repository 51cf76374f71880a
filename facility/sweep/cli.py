"""Command-line flags of ``facility sweep`` and its entry point (the lead's CLI dispatches here)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from facility.errors import EXIT_CASES_FAILED, EXIT_ERROR, EXIT_OK, FacilityError, exit_code_for

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
                        help="sweep folder: sweep.parquet/.csv, cases/<id>/, pareto.png/.html; a new or empty "
                             "folder, an earlier sweep with --resume or --force; a folder holding anything "
                             "else is refused")
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
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier sweep (or run result) in --out with a fresh sweep")
    parser.add_argument("--dask-threads", action="store_true",
                        help="LocalCluster workers as threads of this process instead of processes")
    parser.add_argument("--case-plots", action="store_true", help="write each case's PNG plots too")
    parser.add_argument("--case-fn", default=None, metavar="MODULE:FUNCTION",
                        help="advanced: replace the co-simulation of each case (tests, custom studies)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def main_sweep(args: argparse.Namespace) -> int:
    """Run ``facility sweep`` from parsed arguments; returns the exit code.

    Exit codes:

    * 0 — every case ran (status = ok);
    * 5 (:data:`facility.errors.EXIT_CASES_FAILED`) — the sweep finished but some cases failed:
      they are rows with status = error, the table and study outputs hold the rest, stderr
      says how many failed and shows the first errors; ``--resume`` does not rerun them
      (delete their folders under ``cases/`` to retry);
    * when every case failed: the exit code of the first case's error (2 bad input,
      3 infeasible, 4 power flow, 1 anything else);
    * 2 — bad input found before any case ran: scenario file, ``--set`` / ``--cases`` syntax,
      a case whose overrides do not validate (every case is checked first; the message names
      the key, the value and the cases), or an ``--out`` that may not be written;
    * 1 — an unexpected failure; 130 — interrupted.
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
                       dask_processes=not getattr(args, "dask_threads", False), force=getattr(args, "force", False))
    except FacilityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code_for(exc)
    except KeyboardInterrupt:
        print("interrupted: finished cases are kept; rerun with --resume", file=sys.stderr)
        return 130
    n = len(df)
    bad = df[df["status"] != "ok"] if n else df
    if n and len(bad) == n:
        print(f"error: every case failed ({n} of {n}); first: {bad['error_type'].iloc[0]}: {bad['error'].iloc[0]}",
              file=sys.stderr)
        return _code_of(bad["error_type"].iloc[0])
    if len(bad):
        print(f"error: {len(bad)} of {n} cases failed (status = error in {Path(args.out) / 'sweep.parquet'}); "
              f"{n - len(bad)} ok", file=sys.stderr)
    elif not quiet:
        print(f"sweep: {n} of {n} cases ok -> {Path(args.out) / 'sweep.parquet'}", file=sys.stderr)
    if n and not quiet:
        print(summary_table(df))
    for _, row in bad.head(5).iterrows():
        print(f"  {row['case_id']}: {row['error_type']}: {str(row['error']).splitlines()[0] if row['error'] else ''}",
              file=sys.stderr)
    if len(bad) > 5:
        print(f"  … and {len(bad) - 5} more (see the error column)", file=sys.stderr)
    return EXIT_CASES_FAILED if len(bad) else EXIT_OK


#: Rows of the sweep table printed on stdout (all of them are in sweep.csv).
MAX_PRINTED_ROWS = 40

_SHOWN = (("status", "status"), ("compliance.compliant", "compliant"),
          ("pcc.max_window_swing_mw", "swing_mw"), ("energy.energy_overhead_frac", "overhead_%"),
          ("cost.total_usd", "cost_musd"))


def summary_table(df) -> str:
    """The sweep's table for the terminal: one row per case (the swept keys, status, compliance,
    PCC swing, energy overhead, total cost), at most :data:`MAX_PRINTED_ROWS` rows, then the
    cheapest compliant case per spec."""
    from facility.sweep.study import COMPLIANT, TOTAL, _override_columns, cheapest_compliant

    cols = ["case_id"] + [c for c in _override_columns(df) if c in df.columns]
    view = df[cols].copy()
    for src, name in _SHOWN:
        if src not in df.columns:
            continue
        v = df[src]
        if name == "overhead_%":
            v = 100.0 * v.astype(float)
        elif name == "cost_musd":
            v = v.astype(float) / 1e6
        view[name] = v
    text = view.head(MAX_PRINTED_ROWS).to_string(index=False, float_format=lambda x: f"{x:.4g}")
    if len(view) > MAX_PRINTED_ROWS:
        text += f"\n… {len(view) - MAX_PRINTED_ROWS} more rows in sweep.csv"
    if TOTAL in df.columns and COMPLIANT in df.columns and (df["status"] == "ok").any():
        for _, row in cheapest_compliant(df).iterrows():
            spec = row.get("spec_name")
            where = f" ({spec})" if isinstance(spec, str) and spec else ""
            if isinstance(row.get("case_id"), str):
                text += (f"\ncheapest compliant{where}: {row['case_id']}, "
                         f"{float(row[TOTAL]) / 1e6:.4g} M USD")
            else:
                text += f"\ncheapest compliant{where}: none ({row.get('note', '')})"
    return text


def _code_of(error_type: str) -> int:
    import facility.errors as fe

    cls = getattr(fe, str(error_type), None)
    return getattr(cls, "exit_code", EXIT_ERROR) if isinstance(cls, type) else EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """``python -m facility.sweep SCENARIO --set … --out DIR`` (same flags as ``facility sweep``)."""
    parser = argparse.ArgumentParser(prog="python -m facility.sweep", description="Sweep a scenario over overrides.")
    add_sweep_arguments(parser)
    from facility.cli_logging import setup_logging

    setup_logging(argparse.Namespace(quiet=False, verbose=0))   # 'warning: …' once, as facility's
    return main_sweep(parser.parse_args(argv))
