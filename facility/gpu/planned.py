"""Decisions of the mix optimizer realized through the GPU controls: per-job floor and cap,
and a planned burn trajectory (a dummy load that fills the GPUs up to a time-varying target).

:class:`GpuPlan` carries them into :func:`facility.gpu.apply_gpu_controls`: the floor and the
cap replace ``gpu_smoothing.floor_frac`` / ``power_cap.cap_frac`` for the jobs they name, and the
planned burn is added last (:func:`add_planned_burn`), so the GPU power becomes what the
optimizer planned (docs/formulation.md, GPU levers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["GpuPlan", "add_planned_burn"]


@dataclass(frozen=True)
class GpuPlan:
    """Per-job GPU lever decisions.

    Attributes
    ----------
    floor_frac : dict of job -> float
        Power floor [frac of TDP] (the ``gpu_smoothing`` stage must be enabled).
    cap_frac : dict of job -> float
        Power cap [frac of TDP] (the ``power_cap`` stage must be enabled).
    burn_mw : dict of job -> numpy.ndarray (T,)
        Planned burn on top of the other controls, all the job's GPUs together. [MW]
    """

    floor_frac: dict = field(default_factory=dict)
    cap_frac: dict = field(default_factory=dict)
    burn_mw: dict = field(default_factory=dict)

    @staticmethod
    def per_group(jobs: np.ndarray, by_job: dict, default: np.ndarray) -> np.ndarray:
        """Per-group values: ``by_job[job]`` where given, else ``default``."""
        out = np.asarray(default, dtype=float).copy()
        for job, v in by_job.items():
            if v is not None:
                out[jobs == job] = float(v)
        return out


def add_planned_burn(p_w: np.ndarray, running: np.ndarray, n_gpus: np.ndarray, ceiling_w: np.ndarray,
                     jobs: np.ndarray, burn_mw: dict) -> np.ndarray:
    """Add each job's planned burn to its groups, in proportion to their headroom.

    Group g of job j gets b_j(t) n_g h_g(t) / Σ_g n_g h_g(t) [MW], h_g = (ceiling_g − p_g)^+ on
    running steps, i.e. b_j(t) h_g(t) / Σ n h [W] per GPU: each group stays under its ceiling
    as long as b_j ≤ Σ_g n_g h_g (the optimizer's headroom row). A burn above the headroom is
    clipped to it.

    Parameters
    ----------
    p_w : numpy.ndarray (G, T)
        GPU power after the other controls. [W per GPU]
    running : numpy.ndarray of bool (G, T)
    n_gpus, ceiling_w : numpy.ndarray (G,)
        GPUs per group; highest power per GPU (TDP or the cap). [-], [W]
    jobs : numpy.ndarray of str (G,)
        Job of each group.
    burn_mw : dict of job -> numpy.ndarray (T,)
        Planned burn per job. [MW]

    Returns
    -------
    numpy.ndarray (G, T)
        GPU power with the burn. [W per GPU]
    """
    p = np.array(p_w, dtype=float, copy=True)
    for job, b in burn_mw.items():
        g = np.flatnonzero(jobs == job)
        if g.size == 0 or b is None:
            continue
        head = np.where(running[g], np.maximum(ceiling_w[g, None] - p[g], 0.0), 0.0)  # W per GPU
        total_mw = (n_gpus[g, None] * head).sum(axis=0) / 1e6
        b = np.minimum(np.maximum(np.asarray(b, dtype=float), 0.0), total_mw)
        frac = np.divide(b, total_mw, out=np.zeros_like(b), where=total_mw > 0)
        p[g] += head * frac[None, :]
    return p
