"""The load generator's output: per-rack-group GPU power on a uniform time grid."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["LoadProfile"]


@dataclass
class LoadProfile:
    """GPU power of every rack group, before and after GPU-side controls.

    Rows of the 2-D arrays are rack groups (``groups`` describes them), columns are time steps.

    Attributes
    ----------
    t_s : numpy.ndarray, shape (T,)
        Time of each step from scenario start. [s]
    dt_s : float
        Uniform time step. [s]
    groups : pandas.DataFrame
        One row per rack group: ``job`` (name), ``job_index``, ``gpu`` (model name), ``n_gpus``,
        ``tdp_w`` [W], ``idle_w`` [W], ``feeder`` (index of the LV feeder bus it hangs on).
    p_gpu_w : numpy.ndarray, shape (G, T)
        Power of one GPU of the group, as the workload demands it. [W per GPU]
    running : numpy.ndarray of bool, shape (G, T)
        True while the job's workload runs on the group: from ``start_s`` to the end of the
        stop ramp (``stop_s + ramp_s``), ramps and checkpoints included; False before and after
        (and after the end of a trace that is not looped).
    compute : numpy.ndarray of bool, shape (G, T)
        True in compute phases (the GPU does useful work at high power).
    meta : dict
        Per-job information (iteration count, mean period, ...), free form.
    """

    t_s: np.ndarray
    dt_s: float
    groups: pd.DataFrame
    p_gpu_w: np.ndarray
    running: np.ndarray
    compute: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def n_steps(self) -> int:
        """Number of time steps T."""
        return int(self.t_s.size)

    @property
    def n_groups(self) -> int:
        """Number of rack groups G."""
        return int(self.p_gpu_w.shape[0])

    def group_power_mw(self, p_gpu_w: np.ndarray | None = None) -> np.ndarray:
        """GPU power of each group, all its GPUs together, shape (G, T). [MW]"""
        p = self.p_gpu_w if p_gpu_w is None else p_gpu_w
        return p * (self.groups["n_gpus"].to_numpy(dtype=float)[:, None] / 1e6)

    def total_gpu_mw(self, p_gpu_w: np.ndarray | None = None) -> np.ndarray:
        """GPU power of the whole site, shape (T,). [MW]"""
        p = self.p_gpu_w if p_gpu_w is None else p_gpu_w
        return self.groups["n_gpus"].to_numpy(dtype=float) @ p / 1e6
