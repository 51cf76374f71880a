"""Resource estimate of a run before it starts: peak memory and a rough wall time.

The estimate is a linear model in the sizes that drive the arrays of a run, calibrated on
this code base (peak RSS of ``facility run`` measured with ``resource.getrusage`` on the
bundled scenarios at 6,000-360,000 steps and 1-256 rack groups; see docs/architecture.md,
"Resource estimate"):

    memory = base + T (per_step + S per_storage_step + F per_feeder_step)
             + G T (per_cell + per_control_cell x n_gpu_passes) + n_lp per_lp_variable

plus ``trace_bytes x per_trace_byte`` for the trace files of trace jobs (each at most
:data:`facility.config.files.MAX_TRACE_BYTES`), ``replay points x 8 B x``
:data:`~facility.workload.trace_grid.REPLAY_ARRAYS` for the uniform grids the traces are replayed on
(their time span / their median poll interval: a clock jump in a file shows here), and
``K x per_crash`` for the crashes and restarts the ``[jobs.failures]`` tables make
(:func:`expected_crashes`: the declared ones, or the expected count of the Poisson process,
``span / (1 / lambda + restart_after_s)`` with ``lambda = rate_per_gpu_h x n_gpus / 3600``;
measured ~3.5 kB each, two ``events.json`` rows of ~180 B and ~90 us each), with T steps, G rack groups, S storages, F feeders, ``n_gpu_passes`` the number of GPU-control
passes (0 without GPU controls, 1 with, 2 under the co-design) and ``n_lp`` the variables of
the largest LP the run builds (:func:`facility.config.preconditions.lp_size`: the full LP, an
upper bound when an exact reduction applies). Measured: base ~380 MB (interpreter, numpy,
pandas, pandapower), ~480 B per step, ~10 B per rack-group step for the load matrix, ~20 B
more per pass of the GPU controls, ~2 kB per LP variable. The wall-time figure is rough (within
a factor of a few on an idle core); the LP's part grows faster than linearly and is the full
LP's, so sizings that reduce exactly (coarser grid, periodic steady state) finish far sooner;
an MPC re-plans one small LP every ``controller.replan_s``. Measured against it (peak RSS,
wall time on a shared core): default, 1 h, 256 groups: 1.46 GiB estimated / 1.41 GiB measured;
gpu_smoothing_floor, 30 min: 0.78 / 0.75 GiB; combined_multi_job (MPC, 3 storages), 30 min:
1.63 / 1.14 GiB, ~90 s / 97 s.

:func:`check_resources` refuses a scenario whose estimate exceeds a memory budget (the CLI's
``--max-memory-gib``, default :func:`default_max_memory_gib`) with the estimate, its largest
parts and the keys that shrink it, instead of an out-of-memory kill mid-run.

The estimate takes a resolved scenario (its GPU models from ``scenario.library``).

May import: :mod:`facility.config`, :mod:`facility.errors` and :mod:`facility.workload` (the
rack groups, feeders and trace replay grids the run will allocate).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from facility.config.files import free_bytes
from facility.config.preconditions import lp_size, n_steps
from facility.errors import ResourceError, ScenarioError
from facility.workload.checks import job_traces, total_groups
from facility.workload.groups import default_n_feeders
from facility.workload.trace_grid import REPLAY_ARRAYS, replay_points

try:
    import resource
except ImportError:   # not on Windows: no rlimits there
    resource = None

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = ["ResourceEstimate", "estimate_resources", "default_max_memory_gib", "check_resources",
           "machine_memory_gib", "trace_file_bytes", "trace_replay_points", "expected_crashes",
           "check_disk_space", "lp_strategy", "STRATEGY_TEXT"]

_MB = 1e6
_GIB = 2.0 ** 30
BASE_B = 380 * _MB
PER_STEP_B = 480.0
PER_STORAGE_STEP_B = 120.0
PER_FEEDER_STEP_B = 150.0
PER_CELL_B = 10.0
PER_CONTROL_CELL_B = 20.0
PER_LP_VARIABLE_B = 2000.0
#: Memory while a trace file is parsed, per byte of the file. [B/B] Measured (peak RSS of
#: ``facility validate``): 23 MB and 46 MB 8-GPU nvidia-smi logs added 231 MB and 465 MB
#: (10.0 B/B); the issue's 212 MB log added ~2.2 GiB (~10.4 B/B). Counted in full on top of
#: the run's other parts (the trace is parsed before the run's arrays exist, so this
#: overestimates run's peak somewhat: 46 MB log, 60 s run: 0.79 GiB estimated, 0.61 measured).
PER_TRACE_BYTE_B = 10.5
#: Memory per crash of a job (its crash and restart events, their texts, the schedule arrays).
#: [B] Measured (peak RSS of ``facility run``, 10^7 GPUs at 0.01 per GPU-hour, restart_after_s =
#: 0): 33,390 crashes +115 MB, 133,000 crashes +467 MB (3.5 kB each).
PER_CRASH_B = 3500.0
#: Bytes of ``events.json`` per crash (a crash and a restart row). [B] Measured: 12.0 MB for
#: 33,390 crashes, 47.9 MB for 133,000 (360 B each).
EVENTS_JSON_PER_CRASH_B = 360.0

_BASE_S = 2.0
_PER_STEP_S = 3e-6
_PER_CELL_S = 3e-9
_PER_LP_VARIABLE_S = 1e-3
#: The interior strategy's share per LP variable (its PIQP solves are about linear in the
#: steps): measured 14 s of CPU for one sizing solve of 72,000 variables (12,000 steps at
#: 0.02 s, one storage, ERCOT window; benchmarks/bench_sizing_hybrid.py), two of them for the
#: network-loss rounds of ``size``. [s]
_PER_INTERIOR_VARIABLE_S = 4e-4
#: Steps from which the full LP's simplex time grows faster than linearly (jittered loads:
#: 12,000 steps 140 s, 36,000 steps no answer in 600 s): its estimate is scaled by
#: T / this beyond. [steps]
_SIMPLEX_LINEAR_STEPS = 12000
#: The interior strategy's shortest horizons, sizing and dispatch
#: (:data:`facility.optimize.strategies.interior.MIN_STEPS`, ``DISPATCH_MIN_STEPS``; a test
#: checks they agree: config does not import the optimizer). [steps]
INTERIOR_MIN_STEPS = 2000
INTERIOR_DISPATCH_MIN_STEPS = 6000
_PER_JOB_S = 1.5e-3
_PER_MPC_VARIABLE_S = 5e-5
_PER_CRASH_S = 9e-5
_PER_REPLAY_POINT_S = 5e-8


@dataclass(frozen=True)
class ResourceEstimate:
    """Estimated peak memory and wall time of one run.

    Attributes
    ----------
    memory_gib : float
        Peak resident memory. [GiB]
    time_s : float
        Rough wall time on one core. [s]
    n_steps, n_groups, n_storages, n_feeders, n_lp_variables : int
        The sizes the estimate is built from (``n_storages``: units, one per candidate
        technology of a hybrid section).
    strategy : str
        The optimizer's strategy the estimate assumes (:func:`lp_strategy`; empty: no LP).
    parts_gib : dict
        Memory per part (``base``, ``steps``, ``load matrix``, ``GPU controls``, ``LP``,
        ``trace files``, ``trace replay``, ``crashes``). [GiB]
    trace_bytes : int
        Size of the trace files read. [bytes]
    replay_points : int
        Points of the uniform grids the trace jobs are replayed on. [-]
    n_crashes : float
        Expected crashes of all jobs in the horizon (:func:`expected_crashes`). [-]
    events_bytes : float
        Expected size of ``events.json`` from the crashes. [bytes]
    """

    memory_gib: float
    time_s: float
    n_steps: int
    n_groups: int
    n_storages: int
    n_feeders: int
    n_lp_variables: int
    parts_gib: dict = field(default_factory=dict)
    trace_bytes: int = 0
    replay_points: int = 0
    n_crashes: float = 0.0
    events_bytes: float = 0.0
    strategy: str = ""

    def summary(self) -> str:
        """One line: memory, time and the sizes."""
        lp = f", LP {self.n_lp_variables:,} variables" if self.n_lp_variables else ""
        if self.trace_bytes:
            lp += f", trace files {self.trace_bytes / 1e6:,.1f} MB"
        if self.replay_points:
            lp += f", trace replay grid {self.replay_points:,} points"
        if self.n_crashes >= 1:
            lp += f", ~{self.n_crashes:,.0f} crashes (events.json ~{_fmt_bytes(self.events_bytes)})"
        if self.strategy:
            lp += f"; optimizer: {STRATEGY_TEXT.get(self.strategy, self.strategy)}"
        up = "up to " if self.n_lp_variables else ""
        return (f"estimated peak memory {self.memory_gib:.2f} GiB, wall time {up}~{_fmt_s(self.time_s)} "
                f"({self.n_steps:,} steps x {self.n_groups:,} rack groups, {self.n_storages} storage(s), "
                f"{self.n_feeders} feeder(s){lp})")


def _fmt_bytes(b: float) -> str:
    return f"{b / 1e9:,.3g} GB" if b >= 1e9 else (f"{b / 1e6:,.3g} MB" if b >= 1e6 else f"{b / 1e3:,.3g} kB")


#: What :func:`lp_strategy`'s names mean, for the summary line.
STRATEGY_TEXT = {
    "interior": "interior strategy, about linear in the steps",
    "hybrid": "interior strategy, the first candidate technology alone, then the others "
              "pruned by a bound or solved with it",
    "full": "full LP, HiGHS' simplex, faster than linear in the steps",
    "levers": "one LP per GPU-lever piece",
    "mpc": "MPC re-plans",
}


def lp_strategy(s: "Scenario") -> str:
    """The optimizer strategy a run of ``s`` will take, as the driver picks it
    (:func:`facility.optimize.driver.api.solve_on_grid`): ``"interior"`` (long horizons,
    self-discharge included), ``"hybrid"`` (the same with candidate technologies,
    :mod:`facility.optimize.driver.prune`), ``"full"`` (short horizons, or an initial SoC
    outside its band), ``"levers"`` (GPU levers as decisions), ``"mpc"`` (a dispatch under the
    MPC), ``""`` (no LP). An exact reduction (a repeating load: coarser grid, periodic steady
    state) is found on the load itself and only makes the run faster."""
    units = s.storage_units()
    sizing = any(st.extendable for st in units.values())
    if not units or not (sizing or s.controller.kind in ("optimal", "mpc")):
        return ""
    if s.controller.kind == "mpc" and not sizing:
        return "mpc"
    if any(lv != "storage" for lv in s.optimize.levers):
        return "levers"
    floor = INTERIOR_MIN_STEPS if sizing else INTERIOR_DISPATCH_MIN_STEPS
    soc_ok = all(st.min_soc_frac + float(getattr(st, "reserve_frac", 0.0)) <= st.initial_soc_frac
                 <= st.max_soc_frac for st in units.values())
    if n_steps(s) < floor or not soc_ok:
        return "full"
    hybrid = any(getattr(st, "technologies", None) and len(st.technologies) > 1 and st.extendable
                 for st in s.storages().values())
    return "hybrid" if hybrid else "interior"


def _fmt_s(t: float) -> str:
    if t < 120:
        return f"{t:.0f} s"
    if t < 7200:
        return f"{t / 60:.0f} min"
    return f"{t / 3600:.1f} h"


def estimate_resources(s: "Scenario") -> ResourceEstimate:
    """Estimate the peak memory and wall time of ``facility run`` (or ``size``) on ``s``.

    Nothing is allocated: the sizes come from the scenario (see the module docstring).
    """
    T = n_steps(s)
    G = total_groups(s, s.library)
    S = len(s.storage_units())
    F = default_n_feeders(s) if s.grid.enabled else 1
    gpu_on = s.gpu_smoothing.enabled or s.firefly.enabled or s.power_cap.enabled
    codesign = gpu_on and S and s.controller.kind != "none" and s.controller.codesign
    passes = (2 if codesign else 1) if gpu_on else 0
    n_lp = lp_size(s)
    trace_b = trace_file_bytes(s)
    replay = trace_replay_points(s)
    crashes = expected_crashes(s)
    strategy = lp_strategy(s)
    parts = {
        "base": BASE_B,
        "steps": T * (PER_STEP_B + S * PER_STORAGE_STEP_B + F * PER_FEEDER_STEP_B),
        "load matrix": float(G) * T * PER_CELL_B,
        "GPU controls": float(G) * T * PER_CONTROL_CELL_B * passes,
        "LP": n_lp * PER_LP_VARIABLE_B,
        "trace files": trace_b * PER_TRACE_BYTE_B,
        "trace replay": replay * 8.0 * REPLAY_ARRAYS,
        "crashes": crashes * PER_CRASH_B,
    }
    mem = sum(parts.values())
    t = (_BASE_S + T * _PER_STEP_S * (1 + 0.2 * (S + F)) + float(G) * T * _PER_CELL_S * (1 + passes)
         + _lp_time_s(s, n_lp, strategy) + len(s.jobs) * _PER_JOB_S + crashes * _PER_CRASH_S
         + replay * _PER_REPLAY_POINT_S)
    return ResourceEstimate(memory_gib=mem / _GIB, time_s=t, n_steps=T, n_groups=G, n_storages=S,
                            n_feeders=F, n_lp_variables=n_lp, trace_bytes=trace_b,
                            parts_gib={k: v / _GIB for k, v in parts.items()}, replay_points=int(replay),
                            n_crashes=crashes, events_bytes=crashes * EVENTS_JSON_PER_CRASH_B,
                            strategy=strategy)


def trace_replay_points(s: "Scenario") -> int:
    """Points of the uniform grids the trace jobs are replayed on (each file once; a trace that
    cannot be read counts 0: the checks report it). [-]"""
    seen = {}
    for _, _, tr in job_traces(s, skip=(ScenarioError, OSError, ValueError)):
        seen[tr.info.path] = replay_points(float(tr.t_s[-1]), tr.info.median_interval_s)
    return int(sum(seen.values()))


def expected_crashes(s: "Scenario") -> float:
    """Expected crashes of all jobs within the horizon. [-]

    A job's declared ``crash_times_s`` count as they are; a rate draws a Poisson process in the
    job's running time that pauses while it is down (``restart_after_s``), so over a span
    ``D`` (job start to stop or horizon end) about ``D / (1 / lambda + restart_after_s)``
    crashes come, ``lambda = rate_per_gpu_h x n_gpus / 3600`` [1/s]
    (:func:`facility.workload.failures.failure_times_s`).
    """
    total = 0.0
    horizon = s.time.horizon_s
    for job in s.jobs:
        f = getattr(job, "failures", None)
        if f is None:
            continue
        if f.crash_times_s:
            total += sum(1 for t in f.crash_times_s if t < horizon)
            continue
        lam = float(f.rate_per_gpu_h or 0.0) * job.n_gpus / 3600.0
        end = horizon if job.stop_s is None else min(horizon, job.stop_s)
        span = end - max(job.start_s, 0.0)
        if lam > 0 and span > 0:
            total += span / (1.0 / lam + f.restart_after_s)
    return total


def trace_file_bytes(s: "Scenario") -> int:
    """Total size of the trace files the scenario's trace jobs read (each file once). [bytes]"""
    seen = set()
    for job in s.jobs:
        if job.workload == "trace" and job.trace_file:
            try:
                p = os.path.realpath(job.trace_file)
                seen.add((p, os.stat(p).st_size))
            except (OSError, ValueError):
                continue   # reported by the checks
    return sum(size for _, size in seen)


def _lp_time_s(s: "Scenario", n_lp: int, strategy: str) -> float:
    """The optimizer's share of the wall time, by the strategy it will take (``strategy``,
    :func:`lp_strategy` of ``s``):
    the interior strategy about linear in the LP's variables (a hybrid: the first candidate
    alone, then at most the hybrid LP), the full LP's simplex faster than linear past
    :data:`_SIMPLEX_LINEAR_STEPS`, or the MPC's re-plans (one small LP every
    ``controller.replan_s``; measured ~50 us per variable). [s]"""
    if strategy == "mpc":
        n_replan = max(1, int(s.time.horizon_s / s.controller.replan_s))
        return n_replan * n_lp * _PER_MPC_VARIABLE_S
    if strategy == "interior":
        return n_lp * _PER_INTERIOR_VARIABLE_S
    if strategy == "hybrid":
        # the first candidate alone (the LP less the other units' 3 columns per step), then at
        # most the hybrid LP
        n_units = len(s.storage_units())
        first = n_lp - (n_units - 1) * 3 * n_steps(s)
        return (first + n_lp) * _PER_INTERIOR_VARIABLE_S
    if strategy == "full":
        return n_lp * _PER_LP_VARIABLE_S * max(1.0, n_steps(s) / _SIMPLEX_LINEAR_STEPS)
    return n_lp * _PER_LP_VARIABLE_S


def machine_memory_gib() -> float | None:
    """Memory this process may use: the least of the machine's physical memory, the memory
    limits of its cgroups (v2 ``memory.max`` and v1 ``memory.limit_in_bytes``, of its own
    cgroup and every one above it, as ``/proc/self/cgroup`` names them) and its address-space
    and data limits (``ulimit -v``, ``-d``). [GiB] (None when none can be read)"""
    limits = []
    try:
        limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    for f in _cgroup_limit_files():
        try:
            text = open(f).read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 2 ** 60:
            limits.append(int(text))
    try:
        rlimits = (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", None)) if resource else ()
        for r in rlimits:
            if r is None:
                continue
            soft = resource.getrlimit(r)[0]
            if soft != resource.RLIM_INFINITY and soft > 0:
                limits.append(int(soft))
    except (ValueError, OSError):
        pass
    return min(limits) / _GIB if limits else None


def _cgroup_limit_files() -> list[str]:
    """The memory-limit files of this process's cgroups and their ancestors (Linux)."""
    out = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    try:
        lines = open("/proc/self/cgroup").read().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, ctrls, path = parts
        if hid == "0" and ctrls == "":
            base, name = "/sys/fs/cgroup", "memory.max"
        elif "memory" in ctrls.split(","):
            base, name = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
        else:
            continue
        rel = path.strip("/")
        while rel:
            out.append(f"{base}/{rel}/{name}")
            rel = rel.rpartition("/")[0]
    return out


def default_max_memory_gib() -> float:
    """Default memory budget of a run: 80 % of :func:`machine_memory_gib` (16 GiB when the
    machine's memory cannot be read). [GiB]"""
    m = machine_memory_gib()
    return 0.8 * m if m else 16.0


def check_resources(s: "Scenario", max_memory_gib: float | None = None,
                    source: str = "<scenario>") -> ResourceEstimate:
    """The estimate of ``s``, or a :class:`~facility.errors.ResourceError` (a
    :class:`ScenarioError`, exit code 2) when it exceeds the budget.

    Parameters
    ----------
    s : Scenario
        Validated scenario.
    max_memory_gib : float, optional
        Budget [GiB]; None = :func:`default_max_memory_gib`.
    source : str
        File name for the message.

    Raises
    ------
    ScenarioError
        The estimated peak memory exceeds the budget; the message gives the estimate, its
        largest parts and the keys that reduce them.
    """
    budget = default_max_memory_gib() if max_memory_gib is None else float(max_memory_gib)
    est = estimate_resources(s)
    if est.memory_gib <= budget:
        return est
    parts = sorted(((v, k) for k, v in est.parts_gib.items() if k != "base"), reverse=True)
    big = ", ".join(f"{k} {v:.2f} GiB" for v, k in parts[:3] if v > 0)
    keys = ["a shorter time.horizon_s", "a larger time.dt_s"]
    if est.parts_gib["load matrix"] + est.parts_gib["GPU controls"] > 0.25 * est.memory_gib:
        keys.append("fewer rack groups (jobs.*.n_rack_groups)")
    if est.parts_gib["GPU controls"] > 0.25 * est.memory_gib:
        keys.append("controller.codesign = false")
    if est.parts_gib["LP"] > 0.25 * est.memory_gib:
        keys.append("fewer extendable storages or optimize.coarsen = true")
    if est.parts_gib["trace files"] > 0.25 * est.memory_gib:
        keys.append("a shorter trace file (jobs.*.trace_file)")
    if est.parts_gib["trace replay"] > 0.25 * est.memory_gib:
        keys.append("a trace file spanning less time (jobs.*.trace_file: check its timestamps for a jump)")
    if est.parts_gib["crashes"] > 0.25 * est.memory_gib:
        keys.append(f"fewer crashes (~{est.n_crashes:,.0f} expected: a lower jobs.*.failures.rate_per_gpu_h, "
                    f"fewer n_gpus or a longer restart_after_s)")
    raise ResourceError(
        f"{source}: the run needs more memory than the budget: {est.summary()}; largest parts: "
        f"{big}; budget --max-memory-gib = {budget:.2f} GiB. Use {', '.join(keys)}, or raise "
        f"--max-memory-gib if the machine has the memory")


def check_disk_space(est: ResourceEstimate, out) -> None:
    """Refuse (:class:`~facility.errors.ResourceError`, exit 2) before the run when the
    ``events.json`` the estimate expects does not fit the free space of ``out``'s file system.

    Only what is known to be large is counted (the crash events; the other files of a result
    are a few MB per 10^5 steps), so a run is not refused on a guess; a disk that fills anyway
    is reported when the write fails.
    """
    if est.events_bytes < 1e6:
        return
    free = free_bytes(out)
    if free is not None and est.events_bytes > free:
        raise ResourceError(
            f"--out {out}: the run would write an events.json of ~{_fmt_bytes(est.events_bytes)} "
            f"(~{est.n_crashes:,.0f} crashes and their restarts) but its file system has "
            f"{_fmt_bytes(free)} free; free space, choose another --out, or make fewer crashes "
            f"(jobs.*.failures.rate_per_gpu_h, n_gpus, restart_after_s, time.horizon_s)")

