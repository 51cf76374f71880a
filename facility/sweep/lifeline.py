"""Workers that end with the sweep that started them, and tasks that notice a sweep is gone.

A sweep killed with SIGKILL runs no cleanup code, so its workers must notice on their own:

* **local pool** (:func:`facility.sweep.executors.run_tasks`, ``executor="local"``): each pool
  process runs :func:`die_with_parent` as its initializer;
* **Dask LocalCluster** (``executor="dask"``, no ``--scheduler``): each worker process loads
  this module as a Dask *preload* (:func:`dask_setup`), which runs :func:`die_with_parent`
  with the sweep's process id (handed over in :data:`SWEEP_PID_ENV`). Distributed's own
  nanny pipe ends the workers too; this does not depend on it. The nannies of a
  LocalCluster are objects inside the sweep process and die with it;
* **an existing cluster** (``--scheduler``): its workers are not the sweep's and stay. When the
  sweep's client disconnects, the scheduler drops the cases not yet started and marks the
  running ones cancelled; :func:`sweep_gone` tells a task so, and
  :func:`facility.sweep.worker.execute_case` then neither starts the case nor publishes a
  finished one (its temporary folder is removed: nothing half-written and nothing that
  looks complete). A case already computing runs to its end, as a worker thread cannot be
  stopped from outside; ``--resume`` runs it again.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from facility.report.staging import pid_alive

__all__ = ["PARENT_POLL_S", "SWEEP_PID_ENV", "die_with_parent", "dask_setup", "sweep_gone"]

#: How often a worker checks that the sweep that started it still runs. [s]
PARENT_POLL_S = 0.5

#: Environment variable that hands the sweep's process id to its Dask worker processes.
SWEEP_PID_ENV = "FACILITY_SWEEP_PID"


def _arm_deathsig() -> None:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills this process when its parent
    *thread* ends (Linux only; silently nothing elsewhere)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - not Linux
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        pass


def die_with_parent(sweep_pid: int, poll_s: float = PARENT_POLL_S, deathsig: bool = True) -> bool:
    """End this process as soon as the sweep process ``sweep_pid`` is gone.

    A daemon thread checks every ``poll_s`` that this process was not re-parented (its
    parent was the sweep, or a helper such as a fork server) and that ``sweep_pid`` still
    exists, and ends the process (``os._exit(1)``) otherwise. With ``deathsig`` and the sweep
    as direct parent, Linux also sends SIGKILL at the parent's death (``PR_SET_PDEATHSIG``;
    only where the parent's spawning thread lives as long as the worker, as in a
    ``ProcessPoolExecutor`` started from the sweep's main thread).

    Parameters
    ----------
    sweep_pid : int
        Process id of the sweep.
    poll_s : float
        Check interval. [s]
    deathsig : bool
        Arm ``PR_SET_PDEATHSIG`` too.

    Returns
    -------
    bool
        False (nothing armed) when this *is* the sweep process (threads of the sweep itself).
    """
    if os.getpid() == sweep_pid:
        return False
    ppid = os.getppid()
    if deathsig and ppid == sweep_pid:
        _arm_deathsig()

    def gone() -> bool:
        return os.getppid() != ppid or (ppid != sweep_pid and not pid_alive(sweep_pid))

    if gone() or not pid_alive(sweep_pid):  # the sweep died before the watch was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if gone():
                os._exit(1)

    threading.Thread(target=watch, name="facility-sweep-watch", daemon=True).start()
    return True


def dask_setup(worker) -> None:
    """Dask preload hook (``Nanny(preload=["facility.sweep.lifeline"])``): tie this worker
    process to the sweep named by :data:`SWEEP_PID_ENV` (:func:`die_with_parent`)."""
    pid = os.environ.get(SWEEP_PID_ENV, "")
    if pid.isdigit():
        # not PR_SET_PDEATHSIG: a nanny starts its worker from a helper thread, whose end
        # (not the sweep's) would fire the signal
        die_with_parent(int(pid), deathsig=False)


def sweep_gone() -> bool:
    """Whether this code runs as a Dask task whose sweep no longer wants it.

    True when the task's key is cancelled or forgotten on its worker: the sweep's client
    disconnected (killed) or cancelled it. False outside Dask (local pool, in-process).
    """
    if "distributed" not in sys.modules:   # no Dask worker imports nothing of distributed
        return False
    try:
        from distributed import get_worker
        from distributed.worker import thread_state

        worker = get_worker()
        key = getattr(thread_state, "key", None)
        if key is None:
            return False
        ts = worker.state.tasks.get(key)
    except Exception:  # noqa: BLE001 - not in a worker thread, or an internal layout we do not know
        return False
    return ts is None or ts.state in ("cancelled", "released", "forgotten")
