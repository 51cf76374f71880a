"""What the optimizer returns: :class:`SolveInfo`, :class:`SizingResult` and ``sizing.json``.

A *plan* is the optimizer's internal form of a solution: per storage the tuple
``(p_rated_mw, e_rated_mwh, p_charge_mw (T,), p_discharge_mw (T,), e_mwh (T+1,))``.
:func:`pack_result` turns a plan into a :class:`SizingResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from facility.optimize.model.lever_columns import lever_delta_mw, lever_site_mw

__all__ = ["SolveInfo", "SizingResult", "pack_result", "plan_from_columns", "plan_pcc_mw", "gap_frac",
           "sizing_to_json"]


@dataclass
class SolveInfo:
    """How a solve went.

    Attributes
    ----------
    status : str
        ``"optimal"`` (within the proven gap), ``"slack"`` (``allow_slack``: limits violated
        at a penalty) or ``"gap"`` (a verified plan whose proven gap is above
        ``optimize.max_gap_frac``: the time limit was reached first).
    termination : str
        The solver's own termination string.
    objective_usd : float
        Objective of the returned plan without penalties: capex (+ annuity share) + losses +
        degradation. [USD]
    build_s, solve_s : float
        Model build and solver time. [s]
    n_variables, n_constraints : int
        Size of the (largest) LP handed to the solver.
    slack : dict
        Largest violation per limit family in slack mode (empty otherwise). [MW or MWh]
    n_repaired_steps : int
        Steps whose simultaneous charge and discharge were repaired
        (:func:`facility.optimize.solvers.solve.repair_complementarity`).
    relaxed_objective_usd : float
        Optimum of the LP before that repair. [USD]
    repair_solve_s : float
        Solver time of the repair. [s]
    method : str
        ``"full"`` (one LP over the horizon), ``"idle"`` (the load meets every limit with
        the storages at their least ratings doing nothing, :mod:`facility.optimize.strategies.idle`),
        ``"periodic"``
        (:mod:`facility.optimize.strategies.periodic`), ``"interior"`` (an interior-point solve of a
        restriction of the LP, bracketed by a Lagrangian bound, :mod:`facility.optimize.strategies.interior`), ``"follower"``
        (the fallback plan of :mod:`facility.optimize.certificates.fallback` when the LP stopped at its
        time limit).
    lower_bound_usd : float
        Proven lower bound on the optimum of the full LP. [USD]
    gap_frac : float
        (objective - lower bound) / objective: how far the returned plan can be from the
        optimum at most. [frac]
    period_steps : int
        Period of the reduced stretch (``"periodic"``), else 0. [steps]
    step_factor : int
        The LP was solved on steps this many times longer, exactly
        (:mod:`facility.optimize.strategies.coarsen`); 1 = on the given grid.
    n_spectral_bins : int
        FFT bins that carry spectral rows at the end (lazy rows,
        :mod:`facility.optimize.model.spectral`).
    n_spectral_rounds : int
        Re-solves that added spectral rows.
    n_lever_pieces : int
        Floor / cap piece combinations and relaxed boxes solved (one LP each), 0 without GPU
        levers.
    n_lever_carried : int
        Boxes and pieces of the lever search bounded by another box's duals, without a solve
        (:mod:`facility.optimize.strategies.box_bounds`).
    gap_reason : str
        Why ``gap_frac`` is above ``optimize.max_gap_frac`` when ``status == "gap"``: ``"time"``
        (the time limit came first), ``"complementarity"`` (the LP relaxation's optimum charges
        and discharges at once; the realizable plan's extra cost is not provable by an LP
        bound), ``"long_lag"`` (a long window limit binds and its block rows bracket it by one
        block of lag, :func:`facility.optimize.model.windows.add_block_lag_rows`), ``"groups"`` (on a
        fine step the plan holds the PCC over groups and the bound averages over them),
        ``"spectral"`` (the same, with band limits: the averaged bound cannot carry their rows),
        ``"dispatch"`` (fixed ratings: the objective is the losses alone, against which the
        bound's dual-accuracy term is loose); empty otherwise
        (:data:`facility.optimize.driver.api.GAP_REASONS` has the sentence of each).
    n_forced_steps : int
        (storage, step) directions that the window limits force on every plan at most as
        costly as the returned one, fixed in the relaxation that gave ``lower_bound_usd``
        (:mod:`facility.optimize.certificates.directions`; 0 = none used).
    n_binary_steps : int
        Steps with a binary in the branch and bound of ``optimize.milp_bound_s``
        (:mod:`facility.optimize.certificates.certify`; 0 = not run).
    candidates : dict
        A hybrid section's candidate technologies (:mod:`facility.optimize.driver.prune`):
        ``first`` (solved alone first), ``first_alone_usd``, ``hybrid_lower_bound_usd``,
        ``pruned`` and ``kept`` (unit -> why), ``hybrid_solved``, ``first_alone_s``,
        ``hybrid_s``; empty without a hybrid section or where the pruning does not run.
    """

    status: str
    termination: str
    objective_usd: float
    build_s: float
    solve_s: float
    n_variables: int
    n_constraints: int
    slack: dict = field(default_factory=dict)
    n_repaired_steps: int = 0
    relaxed_objective_usd: float = float("nan")
    repair_solve_s: float = 0.0
    method: str = "full"
    lower_bound_usd: float = float("nan")
    gap_frac: float = float("nan")
    period_steps: int = 0
    step_factor: int = 1
    n_spectral_bins: int = 0
    n_spectral_rounds: int = 0
    n_lever_pieces: int = 0
    n_lever_carried: int = 0
    gap_reason: str = ""
    n_forced_steps: int = 0
    n_binary_steps: int = 0
    candidates: dict = field(default_factory=dict)


@dataclass
class SizingResult:
    """Ratings and dispatch from :func:`~facility.optimize.size_storage` /
    :func:`~facility.optimize.solve_dispatch`.

    Attributes
    ----------
    p_rated_mw_opt, e_rated_mwh_opt : dict of float
        Ratings per storage (the fixed ones for a dispatch). [MW], [MWh]
    p_storage_mw : dict of (T,) arrays
        Storage power, consumer frame (+ = charging) = p_charge_mw - p_discharge_mw. [MW]
    p_charge_mw, p_discharge_mw : dict of (T,) arrays
        Split non-negative charge and discharge power. [MW]
    soc_frac : dict of (T+1,) arrays
        SoC at the step *boundaries*: ``soc_frac[n][0]`` is the initial SoC, ``[t+1]`` the SoC
        after step t, ``[T]`` the end of the horizon. [frac]
    p_pcc_mw : (T,) array
        Lossless PCC power = load + sum of storage powers (+ the site response of the GPU
        levers). [MW]
    info : SolveInfo
    levers : dict
        Per job with GPU levers: ``floor_frac`` / ``cap_frac`` (None where not a decision),
        ``burn_mw`` (T,) planned burn on top of the floor, ``floor_burn_mw`` (T,) what the floor
        burns, ``curtail_mw`` (T,) what the cap removes (all GPU side) [MW] and ``extra_s``,
        the job's extra running time under the cap [s]. Empty with storage only.
    lever_piece : str
        Which floor / cap piece the plan lies on (:func:`facility.optimize.model.levers.lever_pieces`).
    """

    p_rated_mw_opt: dict
    e_rated_mwh_opt: dict
    p_storage_mw: dict
    p_charge_mw: dict
    p_discharge_mw: dict
    soc_frac: dict
    p_pcc_mw: np.ndarray
    info: SolveInfo
    levers: dict = field(default_factory=dict)
    lever_piece: str = ""


#: A cent: objectives below it are "nothing to buy" (an interior point's 1e-7 USD where no
#: limit binds), the gap is measured against it instead of against zero. [USD]
GAP_FLOOR_USD = 0.01


def gap_frac(obj: float, lower: float) -> float:
    """Relative gap of an objective to a lower bound [USD]:
    max(obj − lower, 0) / max(|obj|, :data:`GAP_FLOOR_USD`). [frac]"""
    return max(obj - lower, 0.0) / max(abs(obj), GAP_FLOOR_USD)


def plan_from_columns(m, x: np.ndarray) -> dict:
    """The plan of a built model (:class:`facility.optimize.model.formulation.Model`) at ``x``."""
    return {n: (x[c["p_rated"][0]], x[c["e_rated"][0]], x[c["ch"]], x[c["dis"]], x[c["e"]])
            for n, c in m.cols.items()}


def plan_pcc_mw(load_mw: np.ndarray, plan: dict, dt_s: float, levers=None,
                lever_plan: dict | None = None) -> np.ndarray:
    """PCC power of a plan ``{name: (p_rated, e_rated, ch, dis, e)}``: the load, every
    storage's charge less discharge, and with ``levers`` and ``lever_plan`` the levers' site
    power (burn, floor, cap). [MW]"""
    p = np.asarray(load_mw, dtype=float) + sum(ch - dis for _, _, ch, dis, _ in plan.values())
    if levers is not None and lever_plan:
        p = p + lever_site_mw(levers, lever_plan, dt_s)
    return p


def pack_result(load_mw: np.ndarray, storages: dict, plan: dict, info: SolveInfo, *,
                levers=None, lever_plan: dict | None = None, dt_s: float | None = None) -> SizingResult:
    """A :class:`SizingResult` of a plan ``{name: (p_rated, e_rated, ch, dis, e)}``.

    Ratings and powers are clipped at 0 (solver tolerance); the SoC of a storage with a zero
    energy rating is its initial SoC throughout. With ``levers`` (the problem's
    :class:`~facility.optimize.model.levers.LeverSet`) and ``lever_plan`` (its decisions) the
    levers' per-job arrays are filled in and their site response added to ``p_pcc_mw``.
    """
    load = np.asarray(load_mw, dtype=float)
    res = SizingResult({}, {}, {}, {}, {}, {}, load.copy(), info)
    for n, (p_r, e_r, ch, dis, e) in plan.items():
        p_r, e_r = max(float(p_r), 0.0), max(float(e_r), 0.0)
        ch, dis = np.maximum(ch, 0.0), np.maximum(dis, 0.0)
        res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n] = p_r, e_r
        res.p_charge_mw[n], res.p_discharge_mw[n] = ch, dis
        res.p_storage_mw[n] = ch - dis
        res.soc_frac[n] = (np.asarray(e) / e_r if e_r > 1e-12
                           else np.full(load.size + 1, storages[n].soc0))
        res.p_pcc_mw = res.p_pcc_mw + res.p_storage_mw[n]
    if levers is not None and lever_plan:
        res.p_pcc_mw = res.p_pcc_mw + lever_site_mw(levers, lever_plan, dt_s)
        for jl in levers.jobs:
            fb, b, cu = lever_delta_mw(levers, lever_plan)[jl.name]
            d = lever_plan.get(jl.name, {})
            C = d.get("cap")
            res.levers[jl.name] = {
                "floor_frac": d.get("floor"), "cap_frac": C,
                "burn_mw": b if jl.burn else None, "floor_burn_mw": fb, "curtail_mw": cu,
                "extra_s": jl.extra_s_at(C) if C is not None else 0.0}
        res.lever_piece = levers.piece
    return res


def sizing_to_json(result: SizingResult) -> dict:
    """The ``sizing.json`` layout (docs/formulation.md): per storage
    ``p_rated_mw_opt``/``e_rated_mwh_opt``, then ``objective_usd``, ``solver_status``,
    ``build_s``, ``solve_s``, ``n_variables``, ``n_constraints``; extended with ``method``,
    ``lower_bound_usd``, ``gap_frac``, ``period_steps``, ``step_factor``,
    ``n_repaired_steps``, ``n_spectral_bins``, ``n_spectral_rounds``, ``gap_reason``,
    ``n_forced_steps``, ``n_binary_steps``, with a hybrid section ``candidates`` (see
    :class:`SolveInfo`)
    and, with GPU levers, ``levers`` (per job ``floor_frac``, ``cap_frac``, ``extra_s``,
    ``planned_burn_mwh`` over the horizon, GPU side), ``lever_piece``, ``n_lever_pieces``,
    ``n_lever_carried``.
    ``facility size`` adds ``cost`` and ``mix`` (:func:`facility.sizing.mix.annual_cost`) and
    ``verification``."""
    out: dict = {n: {"p_rated_mw_opt": float(result.p_rated_mw_opt[n]),
                     "e_rated_mwh_opt": float(result.e_rated_mwh_opt[n])}
                 for n in result.p_rated_mw_opt}
    i = result.info
    out.update(objective_usd=float(i.objective_usd), solver_status=i.status, build_s=float(i.build_s),
               solve_s=float(i.solve_s), n_variables=int(i.n_variables),
               n_constraints=int(i.n_constraints), method=i.method,
               lower_bound_usd=float(i.lower_bound_usd), gap_frac=float(i.gap_frac),
               period_steps=int(i.period_steps), step_factor=int(i.step_factor),
               n_repaired_steps=int(i.n_repaired_steps),
               n_spectral_bins=int(i.n_spectral_bins), n_spectral_rounds=int(i.n_spectral_rounds),
               gap_reason=i.gap_reason, n_forced_steps=int(i.n_forced_steps),
               n_binary_steps=int(i.n_binary_steps))
    if i.candidates:
        out["candidates"] = dict(i.candidates)
    if result.levers:
        out["levers"] = {j: {"floor_frac": d["floor_frac"], "cap_frac": d["cap_frac"],
                             "extra_s": float(d["extra_s"]),
                             "planned_burn_mwh": None if d["burn_mw"] is None else float(np.sum(d["burn_mw"]))}
                         for j, d in result.levers.items()}
        out["lever_piece"] = result.lever_piece
        out["n_lever_pieces"] = int(i.n_lever_pieces)
        out["n_lever_carried"] = int(i.n_lever_carried)
    return out
