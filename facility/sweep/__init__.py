"""Sweeps over scenario overrides: a local process pool or a Dask cluster, one table, study outputs.

Public API (the CLI's ``sweep`` subcommand uses the last two):

* :func:`expand_cases` — ``--set`` lists/ranges and a ``--cases`` CSV → list of cases;
* :func:`validate_cases` — every case's scenario built and checked before any case runs;
* :func:`run_sweep` — run every case, write ``sweep.parquet``/``.csv``, case folders and the
  Pareto/cheapest/strategy outputs; returns the table;
* :func:`add_sweep_arguments`, :func:`main_sweep` — argparse glue.

See docs/studies.md for the definitions of the study quantities.
"""

from facility import lazy_face

# The names load on first use (PEP 562): the CLI's parser needs add_sweep_arguments only, and
# the engine pulls in pandas and the study outputs (~0.5–3 s) that a `facility validate` or a
# refused command line must not wait for.
_WHERE = {
    "expand_cases": "cases",
    "validate_cases": "cases",
    "add_sweep_arguments": "cli",
    "main_sweep": "cli",
    "load_records": "engine",
    "run_sweep": "engine",
    "cheapest_compliant": "study",
    "pareto_front": "study",
    "pareto_mask": "study",
    "strategy_table": "study",
}

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


__getattr__, __dir__ = lazy_face(__name__, _WHERE)
