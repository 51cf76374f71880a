"""Running one case of a sweep inside a worker and writing its folder atomically.

A case folder ``cases/<case_id>/`` appears only complete: the case runs in a temporary
folder ``cases/.tmp-<case_id>-<random>/`` that is renamed into place at the end (a rename
within one file system is atomic). A killed sweep therefore leaves complete case folders and
stale temporary ones, which the next ``--resume`` deletes before it runs the missing cases.
A case on a Dask worker whose sweep was killed is neither started nor published
(:func:`facility.sweep.lifeline.sweep_gone`).

Every case folder holds ``case.json`` (id, overrides, status, error, timings, and the nested
``result``: metrics + derived study quantities) and whatever the case function wrote
(for ``run``: metrics.json, timeseries.parquet, report.html, scenario.resolved.toml,
manifest.json; ``size`` adds sizing.json).
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import socket
import tempfile
import time
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from facility.config.load import apply_overrides
from facility.scenario import scenario_from_dict
from facility.scenario.resources import check_resources
from facility.report.staging import apply_umask
from facility.sweep.derive import derive
from facility.sweep.lifeline import sweep_gone

# the layers a case runs (the sweep sits above them all)
from facility.errors import ScenarioError
from facility.optimize import sizing_to_json
from facility.report.io import write_json
from facility.run import orchestrator
from facility.sizing import pipeline

__all__ = ["CaseTask", "execute_case", "default_case_fn", "resolve_case_fn", "CASE_FILE"]

CASE_FILE = "case.json"


def _accepts(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def default_case_fn(scenario, out_dir: Path | None, mode: str = "run", plots: bool = False) -> dict:
    """One case with the real co-simulation: ``run_scenario`` or ``size_scenario``.

    Returns the nested ``metrics.json`` dict; ``size`` adds the ``sizing`` block
    (sizing.json content).
    """
    if mode == "size":
        kw = {"plots": plots} if _accepts(pipeline.size_scenario, "plots") else {}
        sol, res = pipeline.size_scenario(scenario, out_dir=out_dir, **kw)
        sizing = getattr(res, "sizing", None)
        if sizing is None:
            sizing = sizing_to_json(sol)
        return {**res.metrics, "sizing": sizing}
    kw = {"plots": plots} if _accepts(orchestrator.run_scenario, "plots") else {}
    res = orchestrator.run_scenario(scenario, out_dir=out_dir, **kw)
    return dict(res.metrics)


def resolve_case_fn(spec: Callable | str | None) -> Callable:
    """A case function from a callable, a ``module:attribute`` string, or None (the default)."""
    if spec is None:
        return default_case_fn
    if callable(spec):
        return spec
    mod, _, attr = str(spec).partition(":")
    if not mod or not attr:
        raise ScenarioError(f"--case-fn {spec!r}: expected module:function, e.g. "
                            f"facility.sweep.synthetic:synthetic_case")
    return getattr(importlib.import_module(mod), attr)


@dataclass(frozen=True)
class CaseTask:
    """Everything a worker needs for one case (picklable; no open files or clients).

    Attributes
    ----------
    case_id : str
        Folder name under ``cases/``.
    index : int
        Position of the case in the sweep.
    case : dict
        The case's own ``{key: value_text}`` overrides.
    overrides : tuple of str
        Every ``key=value`` applied in order: the base overrides, then the case's.
    raw : dict
        The scenario file as read (TOML dict), before any override.
    source : str
        Scenario file name, for messages.
    base_dir : str
        Folder relative trace files resolve against.
    cases_dir : str
        ``<out>/cases``.
    mode : str
        ``run`` or ``size``.
    case_fn : callable or str or None
        Case function (see :func:`resolve_case_fn`).
    plots : bool
        Ask the case function for PNG plots.
    """

    case_id: str
    index: int
    case: dict
    overrides: tuple
    raw: dict
    source: str
    base_dir: str
    cases_dir: str
    mode: str = "run"
    case_fn: Any = None
    plots: bool = False


def _call(fn: Callable, scenario, out_dir: Path, mode: str, plots: bool) -> dict:
    """Call a case function and normalize what it returns to the nested metrics dict.

    Accepted returns: a mapping (the metrics), an object with ``.metrics`` (a ``Results``;
    its ``.sizing`` becomes the ``sizing`` block), or ``(sizing_result, Results)`` as
    ``size_scenario`` returns. ``out_dir`` goes by keyword when the function names it
    (``run_scenario(scenario, *, out_dir=…)``), else positionally.
    """
    kw: dict[str, Any] = {}
    if _accepts(fn, "mode"):
        kw["mode"] = mode
    if _accepts(fn, "plots"):
        kw["plots"] = plots
    if _accepts(fn, "out_dir"):
        out = fn(scenario, out_dir=out_dir, **kw)
    else:
        out = fn(scenario, out_dir, **kw)
    if isinstance(out, tuple) and len(out) == 2 and hasattr(out[1], "metrics"):
        out = out[1]
    if hasattr(out, "metrics"):
        metrics = dict(out.metrics)
        if getattr(out, "sizing", None) is not None:
            metrics.setdefault("sizing", out.sizing)
        return metrics
    return dict(out)


def execute_case(task: CaseTask) -> dict:
    """Run one case and move its folder into place; never raises for a failing case.

    Returns
    -------
    dict
        The ``case.json`` record: ``case_id, index, overrides, status ("ok" | "error"),
        error, error_type, traceback, wall_s, case_s, started_utc, host, pid, result``.
        ``wall_s`` covers the whole task, ``case_s`` the case function alone.
    """
    t0 = time.perf_counter()
    cases_dir = Path(task.cases_dir)
    record: dict[str, Any] = {
        "case_id": task.case_id,
        "index": task.index,
        "overrides": dict(task.case),
        "mode": task.mode,
        "status": "ok",
        "error": "",
        "error_type": "",
        "traceback": "",
        "started_utc": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "case_s": 0.0,
        "result": {},
    }
    if sweep_gone():   # a Dask task whose sweep was killed (facility.sweep.lifeline)
        record.update(status="error", error_type="SweepGone", persisted=False, wall_s=0.0,
                      error="the sweep that submitted this case is gone; not run")
        return record
    if not cases_dir.is_dir():
        record.update(status="error", error_type="FileNotFoundError", persisted=False, wall_s=0.0,
                      error=f"{cases_dir} is not visible on worker host {record['host']}: workers of an "
                            f"existing Dask cluster need --out on a shared file system")
        return record
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{task.case_id}-", dir=cases_dir))
    apply_umask(tmp)   # a case folder gets the permissions of a plain mkdir, not mkdtemp's 0700
    try:
        scenario = scenario_from_dict(apply_overrides(task.raw, list(task.overrides)),
                                      source=f"{task.source} [case {task.case_id}]",
                                      base_dir=Path(task.base_dir))
        check_resources(scenario, getattr(task, "max_memory_gib", None),  # before it allocates
                        source=f"{task.source} [case {task.case_id}]")
        fn = resolve_case_fn(task.case_fn)
        tc = time.perf_counter()
        metrics = _call(fn, scenario, tmp, task.mode, task.plots)
        record["case_s"] = time.perf_counter() - tc
        metrics.update(derive(scenario, metrics, task.mode))
        record["result"] = metrics
    except Exception as exc:  # a failing case is a result, not the end of the sweep
        record.update(status="error", error=str(exc) or type(exc).__name__, error_type=type(exc).__name__,
                      traceback=traceback.format_exc(limit=20))
    record["wall_s"] = time.perf_counter() - t0
    if sweep_gone() or not cases_dir.is_dir():
        # the sweep was killed meanwhile (or its staging folder removed): publish nothing, so
        # nothing appears that no sweep will account for; --resume runs the case again
        shutil.rmtree(tmp, ignore_errors=True)
        record.update(persisted=False, status="error", error_type="SweepGone",
                      error="the sweep that submitted this case is gone; its result was not kept")
        return record
    tmp.mkdir(exist_ok=True)  # a case function may have replaced it atomically
    write_json(tmp / CASE_FILE, record)
    final = cases_dir / task.case_id
    try:
        os.rename(tmp, final)
    except OSError:
        # the folder exists already (the case ran twice): keep the first, complete result
        shutil.rmtree(tmp, ignore_errors=True)
    return record
