"""Sweeps over scenario overrides: a local process pool or a Dask cluster, one table, study outputs.

Public API (the CLI's ``sweep`` subcommand uses the last two):

* :func:`expand_cases` — ``--set`` lists/ranges and a ``--cases`` CSV → list of cases;
* :func:`validate_cases` — every case's scenario built and checked before any case runs;
* :func:`run_sweep` — run every case, write ``sweep.parquet``/``.csv``, case folders and the
  Pareto/cheapest/strategy outputs; returns the table;
* :func:`add_sweep_arguments`, :func:`main_sweep` — argparse glue.

See docs/studies.md for the definitions of the study quantities.
"""

from facility.sweep.cases import expand_cases, validate_cases
from facility.sweep.cli import add_sweep_arguments, main_sweep
from facility.sweep.engine import load_records, run_sweep
from facility.sweep.study import cheapest_compliant, pareto_front, pareto_mask, strategy_table

__all__ = [
    "expand_cases",
    "validate_cases",
    "run_sweep",
    "add_sweep_arguments",
    "main_sweep",
    "load_records",
    "pareto_mask",
    "pareto_front",
    "cheapest_compliant",
    "strategy_table",
]
