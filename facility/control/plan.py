"""The MPC's call into the optimizer, and the numbers it plans with.

:func:`plan_once` solves one receding-horizon problem with
:func:`facility.optimize.solve_dispatch`, trying ever looser versions until one is feasible;
the helpers derive what the plan needs from the spec and the scenario: the limits scaled by
the MPC's margin (:func:`mpc_spec`, :func:`mpc_margin_frac`), the fastest steady PCC change
the limits allow (:func:`allowed_rate_mw_per_s`) and the price on PCC variation
(:func:`variation_cost_usd_per_mw`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from facility.errors import InfeasibleError
from facility.optimize import solve_dispatch
from facility.optimize.solvers.solve import without_diagnosis

__all__ = ["mpc_spec", "mpc_margin_frac", "allowed_rate_mw_per_s", "variation_cost_usd_per_mw",
           "plan_once", "DEFAULT_MARGIN_FRAC"]


_solve_dispatch = solve_dispatch      # tests monkeypatch this

_LINEAR_LIMITS = ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s", "max_ramp_mw_per_min",
                  "max_window_swing_mw", "max_dynamic_range_mw")


def mpc_spec(spec, margin_frac: float):
    """The spec the MPC plans against: linear limits scaled by (1 - margin_frac), spectral
    limits dropped (they are not LP constraints; the simulation checks them)."""
    upd = {k: getattr(spec, k) * (1.0 - margin_frac) for k in _LINEAR_LIMITS
           if getattr(spec, k) is not None}
    upd.update(max_band_energy_frac=None, max_band_peak_mw=None, bands=[])
    return spec.model_copy(update=upd)


#: MPC limit margin when neither the controller nor the optimize section sets one. [frac]
DEFAULT_MARGIN_FRAC = 0.3


def mpc_margin_frac(scenario) -> float:
    """Share by which the MPC tightens the spec's linear limits. [frac]

    ``controller.mpc_limit_margin_frac``; unset: ``optimize.limit_margin_frac`` where that is
    positive (a design sized with a margin is exact for plans at that margin, and no more),
    else DEFAULT_MARGIN_FRAC.
    """
    m = scenario.controller.mpc_limit_margin_frac
    if m is not None:
        return float(m)
    opt = float(scenario.optimize.limit_margin_frac)
    return opt if opt > 0 else DEFAULT_MARGIN_FRAC


def allowed_rate_mw_per_s(spec) -> float:
    """Fastest steady change of the PCC power the spec's linear limits allow. [MW/s]

    ``min(max_ramp_up, max_ramp_down, max_window_swing / window_s, max_ramp_per_min / 60)``
    over the limits that are set; inf when none is.
    """
    r = [math.inf]
    for k in ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s"):
        if getattr(spec, k) is not None:
            r.append(getattr(spec, k))
    if spec.max_window_swing_mw is not None:
        r.append(spec.max_window_swing_mw / spec.window_s)
    if spec.max_ramp_mw_per_min is not None:
        r.append(spec.max_ramp_mw_per_min / 60.0)
    return float(min(r))


def variation_cost_usd_per_mw(crossover_s: float, storages: dict, price_usd_per_mwh: float) -> float:
    """Price on the PCC variation that makes storing a load change of duration
    ``crossover_s / 2`` cost the same as following it. [USD/MW]

    A pulse of A MW lasting T/2 costs ``A T/2 / 3600 * lam * price`` in storage losses
    (``lam`` = the storages' mean round-trip loss ``1/eta_d - eta_c``) or ``2 A c`` in PCC
    variation; equal at ``c = T lam price / 14400``. Faster changes are stored, slower ones
    go to the grid (within the limits).
    """
    lam = [1.0 / p.eff_discharge_frac - p.eff_charge_frac for p in storages.values()]
    lam_m = max(float(np.mean(lam)) if lam else 0.0, 0.01)
    return max(crossover_s * lam_m * max(price_usd_per_mwh, 1.0) / 14400.0, 1e-9)


def plan_once(forecast_mw: np.ndarray, mpc_dt_s: float, attempts: list, spec, optimize_cfg,
              soc_now: dict, p_pcc_history_mw: np.ndarray | None = None, *,
              variation_cost: float = 0.0, variation_lag: int = 1) -> tuple[dict, np.ndarray, dict]:
    """Solve one MPC problem with :func:`facility.optimize.solve_dispatch`.

    Parameters
    ----------
    forecast_mw : numpy.ndarray (H,)
        Forecast load on the MPC grid. [MW]
    mpc_dt_s : float
        MPC step. [s]
    attempts : list of (status, storage_cfgs, soc_end)
        Tried in order until one is feasible: ``storage_cfgs`` the storages with fixed
        ratings, ``initial_soc_frac`` = now and their planning SoC window; ``soc_end`` the
        end-of-horizon SoC band per storage ((lo, hi) [frac]) or None, or a callable
        returning one (called when its turn comes; an attempt whose callable returns None
        is skipped). When none is feasible,
        the last one's storages are planned with penalized slacks (status 'slack').
    spec, optimize_cfg
        The MPC's spec (:func:`mpc_spec`) and optimize section.
    soc_now : dict
        Current SoC per storage. [frac]
    p_pcc_history_mw : numpy.ndarray, optional
        PCC power of the MPC steps just before now (window limits across the re-plan). [MW]
    variation_cost : float
        Price on the PCC variation. [USD/MW]
    variation_lag : int
        MPC steps the variation is taken over (1 = step to step; the iteration period: of
        the mean over one period, so a ripple of that period is not priced). [steps]

    Returns
    -------
    p_storage_mw : dict of (H,) arrays
    p_pcc_mw : (H,) array
    info : dict
        ``status``: the status of the attempt that was feasible, or 'slack' when none was
        and the plan is the one that breaks the limits least.

    Raises
    ------
    InfeasibleError
        The solver stopped at its time limit, or found nothing even with slacks.
    """
    kw = {"initial_soc_frac": soc_now, "terminal": "free",
          "pcc_variation_cost_usd_per_mw": variation_cost, "pcc_variation_lag_steps": int(variation_lag)}
    if p_pcc_history_mw is not None and p_pcc_history_mw.size:
        kw["p_pcc_history_mw"] = p_pcc_history_mw
    res = None
    with warnings.catch_warnings():
        # a plan whose complementarity repair fails keeps a few steps of simultaneous charge
        # and discharge; the loop applies their net power, which is what a converter does
        warnings.simplefilter("ignore", UserWarning)
        for status, cfgs, band in attempts:
            if callable(band):
                band = band()       # computed only when the attempts before it failed
                if band is None:
                    continue
            try:
                # an infeasible attempt only passes to the next: no diagnosis solve
                with without_diagnosis():
                    res = _solve_dispatch(forecast_mw, mpc_dt_s, cfgs, spec, optimize_cfg,
                                          terminal_soc_frac=band or None, **kw)
                break
            except InfeasibleError as exc:
                if "time_limit" in str(exc) or "time limit" in str(exc):
                    raise
        if res is None:
            # the limits cannot be met (the history already breaks them, or the storage is
            # too small for what comes): the plan that breaks them least
            status = "slack"
            res = _solve_dispatch(forecast_mw, mpc_dt_s, cfgs, spec,
                                  optimize_cfg.model_copy(update={"allow_slack": True}), **kw)
    p_sto = {n: np.asarray(res.p_storage_mw[n], dtype=float) for n in cfgs}
    pcc = getattr(res, "p_pcc_mw", None)
    pcc = (np.asarray(pcc, dtype=float) if pcc is not None
           else forecast_mw + sum(p_sto.values(), np.zeros_like(forecast_mw)))
    return p_sto, pcc, {"status": status}
