"""Rack groups of a job and their assignment to feeders."""

from __future__ import annotations

import math

import numpy as np

from facility.errors import ScenarioError

__all__ = ["MAX_DEFAULT_GROUPS", "MAX_DEFAULT_FEEDERS", "rack_groups", "group_gpu_counts", "assign_feeders",
           "default_n_feeders"]

MAX_DEFAULT_GROUPS = 64
MAX_DEFAULT_FEEDERS = 8


def rack_groups(n_gpus: int, gpus_per_rack: int, n_rack_groups: int | None) -> tuple[int, int]:
    """``(G, n_racks)``: the rack groups of a job (``n_rack_groups``, or None =
    ``min(64, n_racks)``) and its racks, ``ceil(n_gpus / gpus_per_rack)`` (the last one may be
    partly filled). G is not checked against the racks: :func:`group_gpu_counts` refuses more."""
    n_racks = math.ceil(n_gpus / gpus_per_rack)
    return (min(MAX_DEFAULT_GROUPS, n_racks) if n_rack_groups is None else n_rack_groups), n_racks


def group_gpu_counts(n_gpus: int, gpus_per_rack: int, n_rack_groups: int | None,
                     key: str = "jobs.0") -> np.ndarray:
    """Split a job's GPUs into rack groups of whole racks.

    ``n_racks = ceil(n_gpus / gpus_per_rack)`` (the last rack may be partly filled); racks are
    shared out as evenly as possible (the first groups get one rack more), so the counts sum to
    ``n_gpus`` exactly.

    Parameters
    ----------
    n_gpus : int
        GPUs of the job.
    gpus_per_rack : int
        GPUs per rack.
    n_rack_groups : int or None
        Number of groups; None = ``min(64, n_racks)``.
    key : str
        Scenario key of the job, for messages.

    Returns
    -------
    numpy.ndarray of int, shape (G,)
        GPUs per group.
    """
    g, n_racks = rack_groups(n_gpus, gpus_per_rack, n_rack_groups)
    if g > n_racks:
        raise ScenarioError(
            f"{key}.n_rack_groups = {g} exceeds the job's {n_racks} rack(s) "
            f"({n_gpus} GPUs / {gpus_per_rack} GPUs per rack); allowed: 1..{n_racks}")
    racks = np.full(g, n_racks // g, dtype=np.int64)
    racks[: n_racks % g] += 1
    gpu_edge = np.minimum(np.cumsum(racks) * gpus_per_rack, n_gpus)
    return np.diff(np.concatenate([[0], gpu_edge]))


def default_n_feeders(scenario) -> int:
    """Number of feeders: ``grid.n_feeders``, or one per job capped at 8."""
    if scenario.grid.n_feeders is not None:
        return int(scenario.grid.n_feeders)
    return min(len(scenario.jobs), MAX_DEFAULT_FEEDERS)


def assign_feeders(job_index: np.ndarray, n_feeders: int | None) -> np.ndarray:
    """Feeder of each rack group.

    Parameters
    ----------
    job_index : numpy.ndarray of int, shape (G,)
        Job of each group, groups of all jobs in scenario order.
    n_feeders : int or None
        ``grid.n_feeders``. None: feeder = job index, capped at 7 (jobs beyond the 8th share
        feeder 7). Else the groups of all jobs go round-robin over the feeders.
    """
    if n_feeders is None:
        return np.minimum(job_index, MAX_DEFAULT_FEEDERS - 1).astype(np.int64)
    return np.arange(job_index.size, dtype=np.int64) % n_feeders
