"""Exact time coarsening of the sizing / dispatch LP.

A square-wave training load sampled at 10 ms changes value only at a few instants per
iteration, and the window limits span whole multiples of some step count. Where that holds,
the LP on the fine grid and the LP on a grid g times coarser have the same optimum, so the
coarse one is solved and its plan expanded (each coarse step held for g fine steps).

**Conditions** (:func:`coarsening_factor`): the load is constant on every group of g
consecutive steps (g divides every index where the load changes, and the horizon), every lag
bound of the spec spans k = g·k_c steps (:mod:`facility.optimize.model.windows`), no storage has
self-discharge or a converter ramp limit, and there is no PCC history.

**GPU levers** (:mod:`facility.optimize.model.levers`) keep the proof when every per-step datum of
theirs (headroom, floor and cap coefficients) is constant on the groups too, which
:func:`coarsen` demands of all of them (:meth:`Problem.step_data`): their columns are a scalar
(F, C and the cap's chord segments, like the ratings) or one per step (the burn, like a
storage's charge), their rows are linear per step with data constant on groups, their cost
linear in Δt, so holding a coarse plan and averaging a fine one both keep feasibility and
cost. A lagging cooling plant (one state per step with a decay, like self-discharge) breaks
the averaging step: no coarsening then.

**Spectral limits** break it too: averaging a fine plan over groups mixes each FFT bin with
its aliases, so the average of a compliant plan need not be compliant (a fine plan can shape
the edges inside a group to remove high-frequency content a held plan cannot). With
``max_band_peak_mw`` or ``[[bands]]`` set the LP is solved on the given grid.

**Proof.** *Restriction:* a coarse plan held constant over each group is a fine plan with the
same cost (the cost is linear in the step powers and Δt). Its PCC power is constant on groups;
two fine steps t1 < t2 with t2 − t1 ≤ k lie in groups i1 ≤ i2 with i2 − i1 ≤ ⌈k/g⌉ = k_c, so
the coarse lag bounds imply the fine ones. Without self-discharge the stored energy is linear
within a group, so its bounds at the group boundaries hold in between. *Relaxation:* average a
feasible fine plan over each group. Ratings, costs and the stored energy at group boundaries
are unchanged (the recursion is a sum when σ = 0). For groups i < j with j − i ≤ ⌊k/g⌋ = k_c,
pair every fine step t of group i with t + (j − i) g (a lag ≤ k): each pair meets the bound,
so their averages do. The dynamic range holds for averages. So the averaged plan is feasible
for the coarse LP at the same cost, and both optima are equal. The expanded plan is still
checked step by step on the fine grid (:func:`facility.optimize.certificates.verify.verify_plan`).
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np

from facility.optimize.model.result import pack_result
from facility.optimize.certificates.verify import verify_plan
from facility.optimize.model.windows import lag_bounds

__all__ = ["coarsening_factor", "expand_steps", "coarsen", "expand_result"]


def _lag_signature(spec, dt_s: float, margin_frac: float):
    return [(b.limit, b.direction, b.k, b.bound_mw) for b in lag_bounds(spec, dt_s, margin_frac)]


def coarsening_factor(load: np.ndarray, dt_s: float, data: dict, spec, margin_frac: float = 0.0) -> int:
    """Largest g for which the LP on steps of g·dt_s has the fine LP's optimum (1 = none).

    Parameters
    ----------
    load : numpy.ndarray (T,) or (K, T)
        Load seen by the optimizer [MW], or every per-step input stacked (all must be
        constant on the groups).
    dt_s : float
        Fine step. [s]
    data : dict of name -> StorageData
    spec : SpecConfig
    margin_frac : float
        ``optimize.limit_margin_frac``. [frac]
    """
    x = np.atleast_2d(np.asarray(load, dtype=float))
    if x.shape[1] < 2 or any(s.sigma_per_h > 0 or s.max_ramp_mw_per_s is not None for s in data.values()):
        return 1
    fine = _lag_signature(spec, dt_s, margin_frac)
    changes = np.flatnonzero(np.any(x[:, 1:] != x[:, :-1], axis=0)) + 1
    g = int(np.gcd.reduce(np.concatenate([[x.shape[1]], [k for _, _, k, _ in fine], changes]).astype(np.int64)))
    # the coarse grid must give exactly k / g for every bound (window_steps rounds down)
    for d in sorted((d for d in range(2, g + 1) if g % d == 0), reverse=True):
        coarse = _lag_signature(spec, dt_s * d, margin_frac)
        if coarse == [(n, dr, k // d, b) for n, dr, k, b in fine]:
            return d
    return 1


def expand_steps(values: np.ndarray, g: int, boundaries: bool = False) -> np.ndarray:
    """Fine-grid array of a coarse one: step values held g times; boundary values (T_c + 1
    stored energies) interpolated linearly, which is exact without self-discharge."""
    v = np.asarray(values, dtype=float)
    if not boundaries:
        return np.repeat(v, g)
    frac = np.arange(g) / g
    inner = (v[:-1, None] * (1.0 - frac) + v[1:, None] * frac).ravel()
    return np.concatenate([inner, v[-1:]])


def coarsen(pb):
    """The problem on the coarsest exact grid, or None when no coarsening applies.

    Returns
    -------
    (Problem, int) or None : the coarse problem and the factor g.
    """
    if pb.p_pcc_history_mw is not None or pb.optimize.allow_slack or not pb.optimize.coarsen:
        return None
    if pb.has_spectral or (pb.levers is not None and pb.levers.lagged):
        return None  # the relaxation step of the proof fails (module docstring)
    g = coarsening_factor(pb.step_data(), pb.dt_s, pb.storages, pb.spec, pb.margin_frac)
    if g == 1:
        return None
    return pb.on_steps(slice(None, None, g), pb.dt_s * g), g


def expand_result(pb, coarse, g: int):
    """The fine-grid result of a coarse one, verified step by step; None when it fails.

    Parameters
    ----------
    pb : Problem
        The fine problem.
    coarse : SizingResult
        Solution of the coarse problem of :func:`coarsen`.
    g : int
        Coarsening factor.
    """
    plan = {}
    for n in coarse.p_rated_mw_opt:
        p_r, e_r = coarse.p_rated_mw_opt[n], coarse.e_rated_mwh_opt[n]
        plan[n] = (p_r, e_r, expand_steps(coarse.p_charge_mw[n], g),
                   expand_steps(coarse.p_discharge_mw[n], g),
                   expand_steps(coarse.soc_frac[n] * e_r, g, boundaries=True))
    lever_plan = {j: {"floor": d["floor_frac"], "cap": d["cap_frac"],
                      "burn": None if d["burn_mw"] is None else expand_steps(d["burn_mw"], g)}
                  for j, d in coarse.levers.items()}
    bad = verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.margin_frac,
                      levers=pb.levers, lever_plan=lever_plan)
    if bad is not None:
        warnings.warn(f"the plan of the {g}x coarser grid breaks {bad} on the fine grid; the "
                      f"fine LP is solved instead", stacklevel=4)
        return None
    return pack_result(pb.load_mw, pb.storages, plan, replace(coarse.info, step_factor=g),
                       levers=pb.levers, lever_plan=lever_plan, dt_s=pb.dt_s)
