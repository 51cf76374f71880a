"""Check a plan step by step against every constraint of the full LP, outside the LP.

Every strategy that does not solve the full LP itself (coarsened grid, periodic reduction,
interior) passes its expanded plan through :func:`verify_plan` before returning it.
"""

from __future__ import annotations

import numpy as np

from facility.metrics import rolling_min_max
from facility.optimize.model.lever_columns import check_lever_plan, lever_site_mw
from facility.optimize.model.storage_data import S_PER_H
from facility.optimize.model.spectral import bin_limits, has_spectral_limits, spectral_violations
from facility.optimize.model.windows import lag_bounds

__all__ = ["lag_bound_excess_mw", "lag_bound_violation_mw", "verify_plan"]


def lag_bound_excess_mw(x: np.ndarray, lb) -> np.ndarray:
    """Per-step excess of one lag bound: v[u] = σ (x[u] - x[t]) - B at its worst t in
    [u - k, u - 1], for u = 1 .. N-1 (v[0] = -inf: no earlier step). [MW; ≤ 0 where it holds]

    O(N) with the trailing extrema of :func:`facility.metrics.rolling_min_max`.
    """
    x = np.asarray(x, dtype=float)
    v = np.full(x.size, -np.inf)
    if x.size < 2:
        return v
    k = min(lb.k, x.size - 1)
    # lo/hi[i] = extreme of x[i-k+1 .. i]: every step that step i + 1 is compared with
    lo, hi = rolling_min_max(x, k - 1)
    v[1:] = (x[1:] - lo[:-1] if lb.direction == "up" else hi[:-1] - x[1:]) - lb.bound_mw
    return v


def lag_bound_violation_mw(p_pcc_mw: np.ndarray, spec, dt_s: float, margin_frac: float = 0.0,
                           p_hist_mw: np.ndarray | None = None) -> float:
    """Largest violation of any window limit by a PCC power series (≤ 0 when compliant). [MW]

    Uses the lag-bound form of :mod:`facility.optimize.model.windows`. With ``p_hist_mw`` (the PCC power just before t = 0), pairs that start in the
    history count too.
    """
    x = np.asarray(p_pcc_mw, dtype=float)
    H = 0 if p_hist_mw is None else int(np.asarray(p_hist_mw).size)
    if H:
        x = np.concatenate([np.asarray(p_hist_mw, dtype=float).ravel(), x])
    worst = -np.inf
    for lb in lag_bounds(spec, dt_s, margin_frac):
        v = lag_bound_excess_mw(x, lb)[max(H, 1):]  # rows end inside the horizon only
        if v.size:
            worst = max(worst, float(np.max(v)))
    return worst if np.isfinite(worst) else 0.0


def verify_plan(load, dt_s, data, spec, plan: dict, margin_frac: float = 0.0,
                p_hist_mw: np.ndarray | None = None, *, levers=None,
                lever_plan: dict | None = None) -> str | None:
    """Check a plan on the full horizon against every constraint of the full LP.

    Besides the LP's rows it checks that no storage charges and discharges at once
    (min(p_ch, p_dis) <= 1e-6 MW: the plan must be realizable, see
    :func:`facility.optimize.solvers.solve.repair_complementarity`).

    Parameters
    ----------
    plan : dict of name -> (p_rated, e_rated, p_ch (T,), p_dis (T,), e (T+1,))
    levers, lever_plan : LeverSet and its decisions, optional
        The GPU levers (:mod:`facility.optimize.model.levers`): their bounds are checked and their
        site response is part of the PCC power.

    Returns
    -------
    str or None
        None when the plan meets them (to 1e-5 MW, and to 1e-6 of the energy rating but at
        least 1e-6 MWh: the LP's rows in MWh hold to HiGHS's primal feasibility tolerance,
        1e-7, so a tighter check would refuse a solver-optimal plan of a storage of a few Wh),
        else what fails.
    """
    from scipy.signal import lfilter

    pcc = np.asarray(load, dtype=float).copy()
    h = dt_s / S_PER_H
    if levers is not None and lever_plan:
        bad = check_lever_plan(levers, lever_plan)
        if bad is not None:
            return bad
        pcc = pcc + lever_site_mw(levers, lever_plan, dt_s)
    for n, (p_r, e_r, ch, dis, e) in plan.items():
        s = data[n]
        pcc = pcc + ch - dis
        tol_e = 1e-6 * max(e_r, 1.0)
        if min(ch.min(), dis.min()) < -1e-7 or max(ch.max(), dis.max()) > p_r + 1e-5:
            return f"{n}: power outside [0, rating]"
        if ch.size and np.max(np.minimum(ch, dis)) > 1e-6:
            return f"{n}: charges and discharges at once"
        if not (s.p_lo - 1e-7 <= p_r <= s.p_hi + 1e-7 and s.e_lo - 1e-7 <= e_r <= s.e_hi + 1e-7):
            return f"{n}: rating outside its bounds"
        if e.min() < s.soc_min * e_r - tol_e or e.max() > s.soc_max * e_r + tol_e:
            return f"{n}: stored energy outside the SoC bounds"
        a = 1.0 - s.sigma_per_h * h
        rec = lfilter([1.0], [1.0, -a], h * (s.eta_c * ch - dis / s.eta_d), zi=[a * e[0]])[0]
        if np.max(np.abs(rec - e[1:])) > tol_e:
            return f"{n}: stored energy does not follow the SoC recursion"
        if abs(e[0] - s.soc0 * e_r) > tol_e:
            return f"{n}: initial SoC"
        if (s.terminal == "at_least_initial" and e[-1] < e[0] - tol_e) or (
                s.terminal == "equal_initial" and abs(e[-1] - e[0]) > tol_e):
            return f"{n}: terminal SoC"
        if ((s.soc_end_lo is not None and e[-1] < s.soc_end_lo * e_r - tol_e)
                or (s.soc_end_hi is not None and e[-1] > s.soc_end_hi * e_r + tol_e)):
            return f"{n}: terminal SoC band"
        if s.max_ramp_mw_per_s is not None and ch.size > 1 and (
                np.max(np.abs(np.diff(ch - dis))) > s.max_ramp_mw_per_s * dt_s + 1e-5):
            return f"{n}: converter ramp limit"
    if lag_bound_violation_mw(pcc, spec, dt_s, margin_frac, p_hist_mw) > 1e-5:
        return "a window limit"
    if (spec.max_dynamic_range_mw is not None
            and np.ptp(pcc) > spec.max_dynamic_range_mw * (1 - margin_frac) + 1e-5):
        return "the dynamic range"
    if has_spectral_limits(spec):
        k, amp, _ = spectral_violations(pcc, bin_limits(spec, pcc.size, dt_s, margin_frac),
                                        sides=None, tol_mw=1e-6)
        if k.size:
            return f"a spectral limit ({k.size} FFT bins, worst {amp.max():.4g} MW)"
    return None
