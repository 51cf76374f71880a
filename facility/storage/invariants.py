"""Invariants every storage simulation (and every optimizer dispatch) must satisfy.

1. Energy balance, step by step and over the horizon::

       e[t] - e[t-1] * (1 - sd * dt_h) = (eta_c * p_ch[t] - p_dis[t] / eta_d) * dt_h
       sum_t (eta_c p_ch - p_dis / eta_d) dt_h - sum_t e[t-1] sd dt_h = E_T - E_0

2. ``min_soc_frac <= soc <= max_soc_frac`` (self-discharge alone may sink below the minimum:
   the check allows it only where the step neither discharged nor could have).
3. No simultaneous charge and discharge: ``min(p_ch, p_dis) <= tol`` (only meaningful for the
   optimizer's split variables; a net power series satisfies it by construction).
"""

from __future__ import annotations

import numpy as np

from facility.storage.params import StorageParams

__all__ = ["storage_invariants", "assert_storage_invariants"]


def storage_invariants(p_mw: np.ndarray | None, soc_frac: np.ndarray, params: StorageParams,
                       dt_s: float, *, p_charge_mw: np.ndarray | None = None,
                       p_discharge_mw: np.ndarray | None = None,
                       initial_soc_frac: float | None = None) -> dict:
    """Residuals of the storage invariants.

    Parameters
    ----------
    p_mw : array_like (T,) or None
        Net storage power, consumer frame (> 0 charging); may be None when the split powers
        are given. [MW]
    soc_frac : array_like (T,)
        SoC at the end of each step. [frac]
    params : StorageParams
        The storage.
    dt_s : float
        Step length. [s]
    p_charge_mw, p_discharge_mw : array_like (T,), optional
        Split non-negative powers (optimizer convention). [MW]
    initial_soc_frac : float, optional
        SoC before step 0; default ``params.initial_soc_frac``. [frac]

    Returns
    -------
    dict
        ``max_step_residual_mwh``, ``horizon_residual_mwh``, ``max_soc_below_min_frac``,
        ``max_soc_above_max_frac``, ``max_simultaneous_mw`` (all >= 0).
    """
    soc = np.asarray(soc_frac, dtype=float)
    if p_charge_mw is None or p_discharge_mw is None:
        p = np.asarray(p_mw, dtype=float)
        p_ch, p_dis = np.maximum(p, 0.0), np.maximum(-p, 0.0)
    else:
        p_ch = np.asarray(p_charge_mw, dtype=float)
        p_dis = np.asarray(p_discharge_mw, dtype=float)
    soc0 = params.initial_soc_frac if initial_soc_frac is None else float(initial_soc_frac)
    dt_h = dt_s / 3600.0
    e = soc * params.e_rated_mwh
    e_prev = np.concatenate(([soc0 * params.e_rated_mwh], e[:-1]))
    loss_self = e_prev * params.self_discharge_frac_per_h * dt_h
    flow = (params.eff_charge_frac * p_ch - p_dis / params.eff_discharge_frac) * dt_h
    step_res = e - e_prev + loss_self - flow
    horizon_res = (e[-1] - e_prev[0]) - (flow.sum() - loss_self.sum()) if e.size else 0.0
    tol_soc = 1e-9
    below = params.min_soc_frac - soc
    # self-discharge may sink an idle storage below its minimum; that is not a violation
    idle = p_dis <= 1e-12
    below = np.where(idle & (np.concatenate(([soc0], soc[:-1])) <= params.min_soc_frac + tol_soc),
                     0.0, below)
    return {
        "max_step_residual_mwh": float(np.abs(step_res).max()) if e.size else 0.0,
        "horizon_residual_mwh": float(abs(horizon_res)),
        "max_soc_below_min_frac": float(max(below.max(), 0.0)) if e.size else 0.0,
        "max_soc_above_max_frac": float(max((soc - params.max_soc_frac).max(), 0.0)) if e.size else 0.0,
        "max_simultaneous_mw": float(np.minimum(p_ch, p_dis).max()) if e.size else 0.0,
    }


def assert_storage_invariants(p_mw, soc_frac, params: StorageParams, dt_s: float, *,
                              tol_mwh: float = 1e-6, tol_soc_frac: float = 1e-7,
                              tol_mw: float = 1e-6, **kw) -> dict:
    """Check :func:`storage_invariants` against tolerances; raise AssertionError naming the
    violated invariant, otherwise return the residuals.

    ``tol_mwh`` is scaled by ``max(1, e_rated_mwh)``; ``tol_mw`` by ``max(1, p_rated_mw)``.
    """
    r = storage_invariants(p_mw, soc_frac, params, dt_s, **kw)
    scale_e = max(1.0, params.e_rated_mwh)
    scale_p = max(1.0, params.p_rated_mw)
    bad = []
    if r["max_step_residual_mwh"] > tol_mwh * scale_e:
        bad.append(f"energy balance per step off by {r['max_step_residual_mwh']:.3g} MWh")
    if r["horizon_residual_mwh"] > tol_mwh * scale_e:
        bad.append(f"energy balance over the horizon off by {r['horizon_residual_mwh']:.3g} MWh")
    if r["max_soc_below_min_frac"] > tol_soc_frac:
        bad.append(f"SoC below min_soc_frac by {r['max_soc_below_min_frac']:.3g}")
    if r["max_soc_above_max_frac"] > tol_soc_frac:
        bad.append(f"SoC above max_soc_frac by {r['max_soc_above_max_frac']:.3g}")
    if r["max_simultaneous_mw"] > tol_mw * scale_p:
        bad.append(f"simultaneous charge and discharge of {r['max_simultaneous_mw']:.3g} MW")
    if bad:
        raise AssertionError(f"{params.name}: " + "; ".join(bad))
    return r
