"""The one SoC bookkeeping routine, shared by simulator, controllers and optimizer checks.

Energy balance of one step of length dt (``dt_h = dt_s / 3600``), consumer frame
(``p > 0`` charging, ``p_ch = max(p, 0)``, ``p_dis = max(-p, 0)``)::

    e[t] = e[t-1] * (1 - self_discharge_frac_per_h * dt_h) + (eta_c * p_ch - p_dis / eta_d) * dt_h

The delivered power first passes the converter (first-order lag ``response_s``, then the ramp
limit), then saturates at ``+-p_rated_mw`` (and, in the closed loop, at the network's
headroom of the step, :func:`storage_step_bounded`) and at the power that would leave
``[e_min_mwh, e_max_mwh]``: a storage never reaches an impossible SoC, it saturates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from facility.storage.params import StorageParams

__all__ = ["StorageTrace", "simulate_soc", "replay_delivered", "storage_step", "storage_step_bounded", "LIMIT_NONE",
           "LIMIT_POWER", "LIMIT_EMPTY", "LIMIT_FULL", "LIMIT_NETWORK", "LIMIT_NAMES"]

LIMIT_NONE = 0
LIMIT_POWER = 1   # |p| clipped at p_rated_mw
LIMIT_EMPTY = 2   # discharge clipped at e_min_mwh
LIMIT_FULL = 3    # charge clipped at e_max_mwh
LIMIT_NETWORK = 4  # clipped at the network's headroom (feeder, substation, BESS transformer)
LIMIT_NAMES = {LIMIT_NONE: "none", LIMIT_POWER: "power", LIMIT_EMPTY: "min_soc",
               LIMIT_FULL: "max_soc", LIMIT_NETWORK: "network"}


@njit(cache=True, inline="always")
def storage_step(p_set, p_prev, e_prev, p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha,
                 ramp_step, dt_h):
    """Advance one storage by one step.

    Parameters
    ----------
    p_set : float
        Requested power (consumer frame). [MW]
    p_prev : float
        Power delivered in the previous step. [MW]
    e_prev : float
        Stored energy at the end of the previous step. [MWh]
    p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha, ramp_step : float
        See :meth:`StorageParams.kernel_args`.
    dt_h : float
        Step length. [h]

    Returns
    -------
    p : float
        Delivered power. [MW]
    e : float
        Stored energy at the end of the step. [MWh]
    limit : int
        ``LIMIT_*`` code of the saturation that clipped the power (0 if none).
    """
    return storage_step_bounded(p_set, p_prev, e_prev, p_rated, np.inf, -np.inf, eta_c, eta_d,
                                k_self, e_min, e_max, alpha, ramp_step, dt_h)


@njit(cache=True, inline="always")
def storage_step_bounded(p_set, p_prev, e_prev, p_rated, p_hi, p_lo, eta_c, eta_d, k_self,
                         e_min, e_max, alpha, ramp_step, dt_h):
    """:func:`storage_step` with the step's network headroom as extra bounds.

    The delivered power is clipped to ``[max(-p_rated, p_lo), min(p_rated, p_hi)]`` (``p_hi ≥ 0
    ≥ p_lo``: the network may stop a storage, never force it); a clip at ``p_hi`` / ``p_lo``
    reports :data:`LIMIT_NETWORK`. [MW]
    """
    p = p_prev + alpha * (p_set - p_prev)
    if p > p_prev + ramp_step:
        p = p_prev + ramp_step
    elif p < p_prev - ramp_step:
        p = p_prev - ramp_step
    tol = 1e-6 * (p_rated + 1.0)      # clipping smaller than this (LP round-off) is no saturation
    limit = 0
    hi, lim_hi = p_rated, 1
    if p_hi < hi:
        hi, lim_hi = p_hi, 4
    lo, lim_lo = -p_rated, 1
    if p_lo > lo:
        lo, lim_lo = p_lo, 4
    if p > hi:
        if p - hi > tol:
            limit = lim_hi
        p = hi
    elif p < lo:
        if lo - p > tol:
            limit = lim_lo
        p = lo
    e_keep = e_prev * k_self
    if p > 0.0:
        p_max = (e_max - e_keep) / (eta_c * dt_h)
        if p_max < 0.0:
            p_max = 0.0
        if p >= p_max:
            if p - p_max > tol:
                limit = 3
            p = p_max
            e = e_max if e_keep <= e_max else e_keep
        else:
            e = e_keep + eta_c * p * dt_h
    elif p < 0.0:
        p_min = -(e_keep - e_min) * eta_d / dt_h
        if p_min > 0.0:
            p_min = 0.0
        if p <= p_min:
            if p_min - p > tol:
                limit = 2
            p = p_min
            e = e_min if e_keep >= e_min else e_keep
        else:
            e = e_keep + p / eta_d * dt_h
    else:
        e = e_keep
    return p, e, limit


@njit(cache=True)
def _simulate(p_set, p0, e0, p_rated, eta_c, eta_d, k_self, e_min, e_max, alpha, ramp_step, dt_h):
    n = p_set.size
    p_out = np.empty(n)
    e_out = np.empty(n)
    lim = np.zeros(n, dtype=np.int8)
    p_prev = p0
    e = e0
    for t in range(n):
        p, e, code = storage_step(p_set[t], p_prev, e, p_rated, eta_c, eta_d, k_self, e_min,
                                  e_max, alpha, ramp_step, dt_h)
        p_out[t] = p
        e_out[t] = e
        lim[t] = code
        p_prev = p
    return p_out, e_out, lim


@dataclass
class StorageTrace:
    """What a storage did over the horizon.

    Attributes
    ----------
    p_mw : numpy.ndarray, shape (T,)
        Delivered power in step t (consumer frame, > 0 charging). [MW]
    soc_frac : numpy.ndarray, shape (T,)
        SoC at the END of step t (after p_mw[t] acted for dt_s); the SoC before step 0 is
        ``params.initial_soc_frac``. A storage with e_rated_mwh = 0 reports its initial SoC. [frac]
    e_mwh : numpy.ndarray, shape (T,)
        Stored energy at the end of step t. [MWh]
    saturated : numpy.ndarray of bool, shape (T,)
        True where a power or SoC limit clipped the requested power.
    limit : numpy.ndarray of int8, shape (T,)
        Which limit: 0 none, 1 power, 2 min_soc, 3 max_soc (``LIMIT_NAMES``).
    """

    p_mw: np.ndarray
    soc_frac: np.ndarray
    e_mwh: np.ndarray
    saturated: np.ndarray
    limit: np.ndarray

    @classmethod
    def from_energy(cls, p_mw: np.ndarray, e_mwh: np.ndarray, limit: np.ndarray,
                    params: StorageParams) -> "StorageTrace":
        """Build a trace from delivered power, stored energy and limit codes."""
        if params.e_rated_mwh > 0:
            soc = e_mwh / params.e_rated_mwh
        else:
            soc = np.full(e_mwh.shape, params.initial_soc_frac)
        return cls(p_mw=p_mw, soc_frac=soc, e_mwh=e_mwh, saturated=limit > 0, limit=limit)


def replay_delivered(p_mw: np.ndarray, params: StorageParams, dt_s: float, *,
                     initial_soc_frac: float | None = None) -> StorageTrace:
    """The SoC of a storage that delivered ``p_mw`` (its converter's lag and ramp already in
    it): :func:`simulate_soc` without converter dynamics, so only the power and SoC limits can
    still clip (and flag) a step. Used where a run's storage power is changed after the
    closed loop (a rack dark in a voltage sag). [MW] → trace"""
    p_set = np.ascontiguousarray(p_mw, dtype=np.float64)
    soc0 = params.initial_soc_frac if initial_soc_frac is None else float(initial_soc_frac)
    a = params.kernel_args(dt_s)
    p, e, lim = _simulate(p_set, 0.0, soc0 * params.e_rated_mwh, *a[:6], 1.0, np.inf, dt_s / 3600.0)
    return StorageTrace.from_energy(p, e, lim, params)


def simulate_soc(p_set_mw: np.ndarray, params: StorageParams, dt_s: float, *,
                 initial_soc_frac: float | None = None, p_initial_mw: float = 0.0) -> StorageTrace:
    """Apply a power set-point series to a storage, with saturation and converter dynamics.

    Parameters
    ----------
    p_set_mw : array_like, shape (T,)
        Requested power per step, consumer frame (> 0 charging). [MW]
    params : StorageParams
        The storage.
    dt_s : float
        Step length. [s]
    initial_soc_frac : float, optional
        SoC before step 0; default ``params.initial_soc_frac``. [frac]
    p_initial_mw : float
        Power delivered before step 0 (start of the ramp limit and lag). [MW]

    Returns
    -------
    StorageTrace
        Delivered power, SoC at the end of each step, energy and saturation flags.
    """
    p_set = np.ascontiguousarray(p_set_mw, dtype=np.float64)
    if p_set.ndim != 1:
        raise ValueError(f"p_set_mw must be 1-D, got shape {p_set.shape}")
    if not np.all(np.isfinite(p_set)):
        raise ValueError("p_set_mw contains NaN or inf")
    soc0 = params.initial_soc_frac if initial_soc_frac is None else float(initial_soc_frac)
    e0 = soc0 * params.e_rated_mwh
    p, e, lim = _simulate(p_set, float(p_initial_mw), e0, *params.kernel_args(dt_s), dt_s / 3600.0)
    return StorageTrace.from_energy(p, e, lim, params)
