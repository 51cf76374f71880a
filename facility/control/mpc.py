"""Receding-horizon control: forecasts and the call into the optimizer.

Every ``controller.replan_s`` of simulated time the MPC

1. takes what it has measured (the drawn load up to ``measurement_delay_s`` ago), averages it
   onto the MPC grid (``mpc_dt_s``, an integer multiple ``r`` of ``dt_s``),
2. forecasts the next ``horizon_s``: ``perfect`` (the load it will draw, known exactly),
   ``persistence`` (the last measured block repeated) or ``periodic`` (the last period
   repeated; the period is ``forecast_period_s`` or the lag of the highest autocorrelation
   peak of the last 60 s of measurements),
3. solves :func:`facility.optimize.solve_dispatch` on that forecast with the storages' SoC as
   the simulator has it now (``initial_soc_frac`` of each storage's copy) and
4. hands the plan (PCC target and per-storage power, held over each MPC step) to the loop,
   which applies it until the next re-plan; the fastest storage closes the gap between the
   plan's load and the measured one.
"""

from __future__ import annotations

import numpy as np

from facility.errors import InfeasibleError

__all__ = ["estimate_period_steps", "forecast_load", "block_mean", "plan_once", "mpc_spec"]


def _default_solve_dispatch(*args, **kw):
    """Indirection to :func:`facility.optimize.solve_dispatch` (imported when first needed)."""
    from facility.optimize import solve_dispatch

    return solve_dispatch(*args, **kw)


_solve_dispatch = _default_solve_dispatch      # tests monkeypatch this


def _solver_accepts(name: str) -> bool:
    """Whether the solver accepts the keyword ``name``."""
    import inspect

    target = _solve_dispatch
    if target is _default_solve_dispatch:
        try:
            from facility.optimize import solve_dispatch as target
        except ImportError:
            return False
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


_LINEAR_LIMITS = ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s", "max_ramp_mw_per_min",
                  "max_window_swing_mw", "max_dynamic_range_mw")


def mpc_spec(spec, margin_frac: float):
    """The spec the MPC plans against: linear limits scaled by (1 - margin_frac), spectral
    limits dropped (they are not LP constraints; the simulation checks them)."""
    upd = {k: getattr(spec, k) * (1.0 - margin_frac) for k in _LINEAR_LIMITS
           if getattr(spec, k) is not None}
    upd.update(max_band_energy_frac=None, max_band_peak_mw=None, bands=[])
    return spec.model_copy(update=upd)


def block_mean(x: np.ndarray, r: int) -> np.ndarray:
    """Mean over consecutive blocks of ``r`` samples, aligned to the END of ``x``."""
    n = (x.size // r) * r
    if n == 0:
        return np.empty(0)
    return x[x.size - n:].reshape(-1, r).mean(axis=1)


def estimate_period_steps(hist: np.ndarray, min_lag: int = 2) -> int | None:
    """Period of a measured series in samples: the first lag after the first zero crossing
    whose (unbiased) autocorrelation comes within 10 % of the highest peak up to half the
    series; None if there is no clear peak (< 0.3)."""
    x = np.asarray(hist, dtype=float)
    n = x.size
    if n < 4 * min_lag:
        return None
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * n)
    ac = np.fft.irfft(f * np.conj(f))[:n]
    if ac[0] <= 0:
        return None
    ac = ac / ac[0] * n / (n - np.arange(n))          # unbiased
    half = n // 2
    neg = np.flatnonzero(ac[:half] < 0)
    if neg.size == 0:
        return None
    lo = max(int(neg[0]), min_lag)
    if lo >= half:
        return None
    seg = ac[lo:half]
    best = float(seg.max())
    if best <= 0.3:
        return None
    # the first lag that comes within 10 % of the best peak (multiples of the period tie)
    return lo + int(np.flatnonzero(seg >= 0.9 * best)[0])


def forecast_load(kind: str, hist_mw: np.ndarray, n_steps: int, *, lead_steps: int = 1,
                  period_steps: int | None = None, future_mw: np.ndarray | None = None) -> np.ndarray:
    """Forecast of the load on the MPC grid.

    Parameters
    ----------
    kind : {'perfect', 'persistence', 'periodic'}
        Forecast method.
    hist_mw : numpy.ndarray
        Measured history on the MPC grid, last sample = latest measurement. [MW]
    n_steps : int
        Number of MPC steps to forecast.
    lead_steps : int
        Distance from the last measured sample to the first forecast sample (>= 1).
    period_steps : int, optional
        Period for 'periodic' (falls back to persistence without it or without enough history).
    future_mw : numpy.ndarray, optional
        The true future for 'perfect'. [MW]
    """
    if kind == "perfect":
        if future_mw is None:
            raise ValueError("perfect forecast needs future_mw")
        return np.asarray(future_mw, dtype=float)[:n_steps]
    last = hist_mw[-1] if hist_mw.size else 0.0
    if kind == "periodic" and period_steps and hist_mw.size >= period_steps:
        off = lead_steps + np.arange(n_steps)
        k = np.ceil(off / period_steps)
        src = hist_mw.size - 1 + (off - k * period_steps).astype(np.int64)
        return hist_mw[src]
    return np.full(n_steps, last)


def plan_once(forecast_mw: np.ndarray, mpc_dt_s: float, storage_cfgs: dict, spec, optimize_cfg,
              soc_now: dict, p_pcc_history_mw: np.ndarray | None = None) -> tuple[dict, np.ndarray, dict]:
    """Solve one MPC problem.

    Parameters
    ----------
    forecast_mw : numpy.ndarray (H,)
        Forecast load on the MPC grid. [MW]
    mpc_dt_s : float
        MPC step. [s]
    storage_cfgs : dict of StorageConfig
        Storages with fixed ratings (``extendable = false``) and ``initial_soc_frac`` = now.
    spec, optimize_cfg
        ``scenario.spec`` and ``scenario.optimize``.
    soc_now : dict
        Current SoC per storage (also passed as ``initial_soc_frac``). [frac]
    p_pcc_history_mw : numpy.ndarray, optional
        PCC power of the MPC steps just before now, so the plan's window limits also see the
        past (passed where the solver takes ``p_pcc_history_mw``). [MW]

    Returns
    -------
    p_storage_mw : dict of (H,) arrays
    p_pcc_mw : (H,) array
    info : dict
        ``status`` ('ok', 'slack' after an infeasible first try).
    """
    # the SoC now travels twice: as each config's initial_soc_frac and, where the solver
    # takes it, as the initial_soc_frac keyword
    kw = {"initial_soc_frac": soc_now} if _solver_accepts("initial_soc_frac") else {}
    if p_pcc_history_mw is not None and p_pcc_history_mw.size and _solver_accepts("p_pcc_history_mw"):
        kw["p_pcc_history_mw"] = p_pcc_history_mw
    status = "ok"
    try:
        res = _solve_dispatch(forecast_mw, mpc_dt_s, storage_cfgs, spec, optimize_cfg, **kw)
    except InfeasibleError:
        status = "slack"
        res = _solve_dispatch(forecast_mw, mpc_dt_s, storage_cfgs, spec,
                              optimize_cfg.model_copy(update={"allow_slack": True}), **kw)
    p_sto = {n: np.asarray(res.p_storage_mw[n], dtype=float) for n in storage_cfgs}
    pcc = getattr(res, "p_pcc_mw", None)
    pcc = (np.asarray(pcc, dtype=float) if pcc is not None
           else forecast_mw + sum(p_sto.values(), np.zeros_like(forecast_mw)))
    return p_sto, pcc, {"status": status}

