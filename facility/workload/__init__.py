"""GPU-cluster load generator and site aggregation.

:func:`generate_load` turns a scenario's ``[[jobs]]`` into per-rack-group GPU power
(:class:`LoadProfile`); :func:`site_power` turns (possibly controlled) GPU power into IT,
cooling, site and per-feeder power (:class:`SitePower`). See ``docs/workload.md``.
"""

from facility.workload.archetypes import ARCHETYPES, JobParams, resolve_job_params
from facility.workload.generate import generate_load, job_waveform
from facility.workload.groups import assign_feeders, default_n_feeders, group_gpu_counts
from facility.workload.iterations import IterationPlan, draw_iteration_plan, iteration_wave
from facility.workload.profile import LoadProfile
from facility.workload.site import SitePower, cooling_lag, site_power
from facility.workload.timeline import checkpoint_mask, envelope_frac, running_mask, time_grid
from facility.workload.trace import read_trace, trace_on_grid

__all__ = [
    "ARCHETYPES",
    "IterationPlan",
    "JobParams",
    "LoadProfile",
    "SitePower",
    "assign_feeders",
    "checkpoint_mask",
    "cooling_lag",
    "default_n_feeders",
    "draw_iteration_plan",
    "envelope_frac",
    "generate_load",
    "group_gpu_counts",
    "iteration_wave",
    "job_waveform",
    "read_trace",
    "resolve_job_params",
    "running_mask",
    "site_power",
    "time_grid",
    "trace_on_grid",
]
