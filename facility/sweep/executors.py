"""Where the cases run: in-process, a local process pool, or a Dask cluster.

Each executor yields one record per task as the task finishes. A case that raises is a record
with ``status = "error"`` written by the worker itself; a task that dies with its worker
(killed process, lost Dask worker) yields a record with ``status = "error"`` and
``persisted = False`` — no case folder exists for it, so ``--resume`` runs it again.

Pool workers and LocalCluster worker processes end with the sweep, also a SIGKILLed one
(:mod:`facility.sweep.lifeline`).
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Iterator, Sequence

from facility.errors import ScenarioError
from facility.sweep.lifeline import SWEEP_PID_ENV, die_with_parent
from facility.sweep.worker import CaseTask, execute_case

__all__ = ["EXECUTORS", "default_workers", "run_tasks"]

EXECUTORS = ("local", "dask")

#: How long to wait for an existing Dask scheduler to answer. [s]
CONNECT_TIMEOUT_S = 30.0


def default_workers() -> int:
    """Number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def _lost(task: CaseTask, exc: BaseException) -> dict:
    return {"case_id": task.case_id, "index": task.index, "overrides": dict(task.case),
            "mode": task.mode, "status": "error", "error": f"worker lost: {exc}",
            "error_type": type(exc).__name__, "traceback": "", "wall_s": float("nan"),
            "case_s": float("nan"), "result": {}, "persisted": False}


def _serial(tasks: Sequence[CaseTask]) -> Iterator[dict]:
    for task in tasks:
        yield execute_case(task)


def _local(tasks: Sequence[CaseTask], workers: int) -> Iterator[dict]:
    pool = ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent,
                               initargs=(os.getpid(),))
    try:
        futures = {pool.submit(execute_case, t): t for t in tasks}
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # BrokenProcessPool and the like
                yield _lost(futures[fut], exc)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _dask(tasks: Sequence[CaseTask], workers: int | None, scheduler: str | None,
          processes: bool) -> Iterator[dict]:
    try:
        from distributed import Client, LocalCluster, as_completed as dask_completed
    except ImportError:  # pragma: no cover - dependency present in the project
        raise ScenarioError("--executor dask needs the 'distributed' package (pip install distributed)") from None
    cluster = None
    if scheduler:
        try:
            client = Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except (OSError, ValueError, TypeError) as exc:   # refused, timed out, malformed address
            raise ScenarioError(f"--scheduler {scheduler}: cannot connect to a Dask scheduler: {exc} "
                                f"(expected an address such as tcp://host:8786)") from None
    else:
        # worker processes end with this sweep, also when it is SIGKILLed (facility.sweep.lifeline)
        tie = ({"preload": ["facility.sweep.lifeline"], "env": {SWEEP_PID_ENV: str(os.getpid())}}
               if processes else {})
        cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1,
                               processes=processes, dashboard_address=None,
                               silence_logs=logging.WARNING, **tie)
        client = Client(cluster)
    try:
        futures = [client.submit(execute_case, t, key=f"facility-case-{t.case_id}-{os.getpid()}", pure=False)
                   for t in tasks]
        by_key = {f.key: t for f, t in zip(futures, tasks)}
        for fut in dask_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # KilledWorker, lost connection
                yield _lost(by_key[fut.key], exc)
            fut.release()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_tasks(tasks: Sequence[CaseTask], executor: str = "local", *, workers: int | None = None,
              scheduler: str | None = None, dask_processes: bool = True) -> Iterator[dict]:
    """Run the tasks and yield their records in completion order.

    Parameters
    ----------
    tasks : sequence of CaseTask
    executor : {"local", "dask"}
        ``local``: a process pool of ``workers`` processes (default: every core); with one
        worker (or one task) the cases run in this process. ``dask``: a
        ``distributed.LocalCluster`` of ``workers`` single-threaded workers (processes, or
        threads of this process with ``dask_processes=False``), or the existing cluster at
        ``scheduler``.
    workers : int, optional
        Number of parallel workers.
    scheduler : str, optional
        Address of a running Dask scheduler (``tcp://host:8786``); implies ``dask``.
    dask_processes : bool
        LocalCluster workers as processes (default) or threads.
    """
    if scheduler:
        executor = "dask"
    if executor not in EXECUTORS:
        raise ScenarioError(f"--executor {executor!r}: expected one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise ScenarioError(f"--workers {workers}: must be ≥ 1")
    if not tasks:
        return iter(())
    if executor == "dask":
        return _dask(tasks, workers, scheduler, dask_processes)
    n = min(workers or default_workers(), len(tasks))
    return _serial(tasks) if n == 1 else _local(tasks, n)
