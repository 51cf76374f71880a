"""Site aggregation: GPU power -> IT power -> site power with a lagging cooling plant.

::

    p_gpu_mw     = sum over groups of n_gpus * p_gpu_w / 1e6
    p_it_mw      = p_gpu_mw * (1 + non_gpu_frac)
    p_cooling_mw = lag_tau[(pue - 1) * p_it_mw]
    p_site_mw    = p_it_mw + p_cooling_mw + base_load_mw

``lag_tau`` is a first-order low-pass with time constant ``cooling_tau_s`` (chillers, pumps and
fans do not follow 1 Hz swings), discretized exactly for a step ``dt_s``::

    y[n] = a * y[n-1] + (1 - a) * x[n],    a = exp(-dt_s / cooling_tau_s)

(:func:`scipy.signal.lfilter`). Its initial state is the mean of ``x`` over the first
``min(horizon, 5 * cooling_tau_s)``, so the cooling starts in steady state and the mean of
``p_cooling_mw`` equals ``(pue - 1) * mean(p_it_mw)`` for a load that is stationary over that
window; ``cooling_tau_s = 0`` makes cooling follow IT power instantly (then ``p_site_mw =
pue * p_it_mw + base_load_mw`` exactly).

The same lag runs per feeder (it is linear, so the feeder columns sum to the site total);
``base_load_mw`` sits on feeder 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal

from facility.errors import ScenarioError
from facility.workload.profile import LoadProfile

__all__ = ["SitePower", "cooling_lag", "site_power"]


@dataclass
class SitePower:
    """Power of the whole site and of each feeder, shape (T,) unless noted. [MW]

    Attributes
    ----------
    p_gpu_mw : GPU power of all groups. [MW]
    p_it_mw : IT power, GPUs plus non-GPU server power. [MW]
    p_cooling_mw : cooling power, lagging ``(pue - 1) * p_it_mw``. [MW]
    p_site_mw : site power, ``p_it_mw + p_cooling_mw + base_load_mw``. [MW]
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Site power per feeder; rows sum to ``p_site_mw``. [MW]
    """

    p_gpu_mw: np.ndarray
    p_it_mw: np.ndarray
    p_cooling_mw: np.ndarray
    p_site_mw: np.ndarray
    p_feeder_mw: np.ndarray


def cooling_lag(x: np.ndarray, dt_s: float, tau_s: float) -> np.ndarray:
    """First-order lag along the last axis, started in steady state.

    Parameters
    ----------
    x : numpy.ndarray, shape (..., T)
        Input (e.g. ``(pue - 1) * p_it_mw``). [MW]
    dt_s : float
        Step. [s]
    tau_s : float
        Time constant; 0 returns ``x`` unchanged. [s]

    Returns
    -------
    numpy.ndarray, same shape as ``x``
        ``y[n] = a y[n-1] + (1 - a) x[n]``, ``a = exp(-dt_s / tau_s)``, ``y[-1]`` = mean of
        ``x`` over the first ``min(T, ceil(5 tau_s / dt_s))`` steps. [MW]
    """
    x = np.asarray(x, dtype=float)
    if tau_s <= 0:
        return x.copy()
    a = float(np.exp(-dt_s / tau_s))
    n0 = max(1, min(x.shape[-1], int(np.ceil(5.0 * tau_s / dt_s))))
    y0 = x[..., :n0].mean(axis=-1, keepdims=True)
    y, _ = signal.lfilter([1.0 - a], [1.0, -a], x, axis=-1, zi=a * y0)
    return y


def site_power(profile: LoadProfile, p_gpu_w: np.ndarray | None, site, n_feeders: int) -> SitePower:
    """Aggregate per-group GPU power to site and feeder power.

    Parameters
    ----------
    profile : LoadProfile
        Rack groups (``groups.n_gpus``, ``groups.feeder``), time step.
    p_gpu_w : numpy.ndarray, shape (G, T), or None
        Actual GPU power per GPU after GPU-side controls [W]; None = ``profile.p_gpu_w``.
    site : facility.config.schema.SiteConfig
        ``non_gpu_frac``, ``pue``, ``cooling_tau_s`` [s], ``base_load_mw`` [MW].
    n_feeders : int
        Number of feeders F (:func:`facility.workload.default_n_feeders`).

    Returns
    -------
    SitePower
    """
    p = profile.p_gpu_w if p_gpu_w is None else p_gpu_w
    if p.shape != profile.p_gpu_w.shape:
        raise ValueError(f"p_gpu_w has shape {p.shape}, the profile {profile.p_gpu_w.shape}")
    feeder = profile.groups["feeder"].to_numpy(dtype=np.int64)
    if n_feeders < 1 or (feeder.size and feeder.max() >= n_feeders):
        raise ScenarioError(
            f"grid.n_feeders = {n_feeders}: rack groups are assigned to feeders up to "
            f"{int(feeder.max())}; allowed: >= {int(feeder.max()) + 1}")
    n_gpus = profile.groups["n_gpus"].to_numpy(dtype=float)
    # (F, G) incidence scaled by GPUs per group [MW per W]
    inc = np.zeros((n_feeders, feeder.size))
    inc[feeder, np.arange(feeder.size)] = n_gpus / 1e6
    gpu_f = inc @ p                                           # (F, T) [MW]
    it_f = gpu_f * (1.0 + site.non_gpu_frac)
    cool_f = cooling_lag((site.pue - 1.0) * it_f, profile.dt_s, site.cooling_tau_s)
    site_f = it_f + cool_f
    site_f[0] += site.base_load_mw
    return SitePower(
        p_gpu_mw=gpu_f.sum(axis=0),
        p_it_mw=it_f.sum(axis=0),
        p_cooling_mw=cool_f.sum(axis=0),
        p_site_mw=site_f.sum(axis=0),
        p_feeder_mw=np.ascontiguousarray(site_f.T),
    )
