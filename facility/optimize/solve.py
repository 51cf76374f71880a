"""The shared LP layer under every strategy: solve a built model, diagnose, repair.

* :func:`solve_lp` hands a :class:`~facility.optimize.lp.LinearProgram` to HiGHS (straight
  through ``highspy``, or as a Pyomo model through APPSI).
* :func:`solve_model` solves a built :class:`~facility.optimize.formulation.Model`: anything
  but an optimal solve raises :class:`facility.errors.InfeasibleError` with a diagnosis from a
  second solve in which every spec limit (window, dynamic range) and the terminal SoC may be
  violated at a penalty (the message names the limits with the largest slacks, by how much
  [MW or MWh] and where [s]); then the complementarity repair.
"""

from __future__ import annotations

import warnings

import numpy as np

from facility.errors import InfeasibleError, ScenarioError
from facility.optimize.lp import LinearProgram, LpSolution, resolve_with_zero_upper, solve_highs
from facility.optimize.result import SolveInfo, gap_frac

__all__ = ["SLACK_PENALTY_KUSD", "solve_lp", "soften", "slack_report", "diagnose",
           "repair_complementarity", "solve_model", "is_time_limit"]

#: Penalty of one MW (MWh) of violation of one soft row in the diagnosis solve. [k$]
SLACK_PENALTY_KUSD = 1.0e4
_SLACK_TOL = 1e-6


def solve_lp(lp: LinearProgram, optimize, *, time_limit_s: float | None = None,
             options: dict | None = None) -> tuple[LpSolution, float]:
    """Solve with the solver ``optimize.solver`` names.

    Returns
    -------
    (LpSolution, pyomo_build_s) : the solution and the time spent building a Pyomo model
        (0 on the ``highs`` path). [s]
    """
    limit = optimize.time_limit_s if time_limit_s is None else time_limit_s
    solver = optimize.solver.lower()
    if solver == "highs":
        return solve_highs(lp, time_limit_s=limit, options=options), 0.0
    if solver == "appsi_highs":
        from facility.optimize.pyomo_model import solve_pyomo

        return solve_pyomo(lp, time_limit_s=limit)
    raise ScenarioError(f"optimize.solver = {optimize.solver!r}: use 'highs' (matrix passed to "
                        f"HiGHS) or 'appsi_highs' (Pyomo model, HiGHS through APPSI)")


def is_time_limit(termination: str) -> bool:
    """Whether a solver termination string says the time limit stopped it."""
    t = termination.lower()
    return "time limit" in t or "timelimit" in t


def soften(lp: LinearProgram) -> int:
    """Add one penalized slack column per soft row bound; return the first slack column."""
    first = lp.n_cols
    lo_all = np.concatenate(lp.row_lo)
    hi_all = np.concatenate(lp.row_hi)
    for b in list(lp.blocks):
        if not b.soft:
            continue
        rows = np.arange(b.start, b.stop)
        for sign, bound in ((1.0, lo_all), (-1.0, hi_all)):
            sel = rows[np.isfinite(bound[rows])]
            if sel.size == 0:
                continue
            cols = lp.add_columns(f"slack:{b.family}:{sign:+g}:{b.start}", sel.size, 0.0, np.inf,
                                  SLACK_PENALTY_KUSD)
            lp.row_i.append(sel)
            lp.row_j.append(cols)
            lp.row_v.append(np.full(sel.size, sign))
            lp.slack_map.append((b, sel, cols))
    return first


def slack_report(lp: LinearProgram, x: np.ndarray, dt_s: float) -> dict:
    """Largest slack per limit family of a softened LP at ``x``: ``{family: {max, unit, t_s,
    n_violated}}``."""
    out: dict = {}
    for b, sel, cols in lp.slack_map:
        v = x[cols]
        if v.size == 0 or v.max() <= _SLACK_TOL:
            continue
        i = int(np.argmax(v))
        t = int(b.t[sel[i] - b.start])
        prev = out.get(b.family)
        if prev is None or v[i] > prev["max"]:
            out[b.family] = {"max": float(v[i]), "unit": b.unit,
                             "t_s": float(t * dt_s) if t >= 0 else None,
                             "n_violated": int(np.sum(v > _SLACK_TOL)) + (prev or {}).get("n_violated", 0)}
        else:
            prev["n_violated"] += int(np.sum(v > _SLACK_TOL))
    return out


def diagnose(build, optimize, dt_s: float, first: LpSolution) -> InfeasibleError:
    """Why a model has no solution: re-solve ``build()`` with penalized slacks, name the limits."""
    m = build()
    soften(m.lp)
    sol, _ = solve_lp(m.lp, optimize)
    if sol.status != "ok":
        return InfeasibleError(
            f"the optimizer found no solution ({first.termination}) and none either with every "
            f"spec limit and the terminal SoC relaxed ({sol.termination}): the storage data "
            f"themselves are inconsistent (initial SoC outside the SoC bounds, ratings bounds)",
            {"termination": first.termination})
    rep = slack_report(m.lp, sol.x, dt_s)
    worst = sorted(rep.items(), key=lambda kv: -kv[1]["max"])
    parts = [f"{fam} by {d['max']:.4g} {d['unit']}"
             + (f" (worst at t = {d['t_s']:.4g} s, {d['n_violated']} rows)" if d["t_s"] is not None else "")
             for fam, d in worst[:4]]
    msg = (f"the limits cannot be met with the allowed storage ({first.termination}); "
           f"the penalized re-solve violates: " + ("; ".join(parts) if parts else "nothing measurable "
                                                   "(numerical trouble: tighten the scaling)"))
    return InfeasibleError(msg, {"termination": first.termination, "slack": rep})


def repair_complementarity(m, first: LpSolution, optimize, tol_mw: float = 1e-6):
    """Make charge and discharge complementary (p_ch · p_dis = 0) where the LP was not.

    With losses the LP may charge and discharge one storage at once to burn energy (it pays
    only the loss price), which no converter can do and the simulator would not reproduce.
    Where that happens, the direction of each step is fixed to the sign of the LP's net power
    (p_dis <= 0 where p_ch - p_dis >= 0, else p_ch <= 0) and the LP solved again: a
    restriction, so its optimum is feasible for the physics and at least the first one.

    Returns
    -------
    (x, n_steps_repaired, extra_solve_s)
    """
    x = first.x
    bad = {n: np.minimum(x[c["ch"]], x[c["dis"]]) > tol_mw for n, c in m.cols.items()}
    n_bad = int(sum(b.sum() for b in bad.values()))
    if n_bad == 0:
        return x, 0, 0.0
    zero = []
    for n, c in m.cols.items():
        net = x[c["ch"]] - x[c["dis"]]
        zero += [c["dis"][net >= 0], c["ch"][net < 0]]
    if first.handle is not None:  # highspy: change bounds, warm-started dual simplex
        sol = resolve_with_zero_upper(first, np.concatenate(zero))
    else:
        m.lp.ub_zero.extend(zero)
        sol, _ = solve_lp(m.lp, optimize)
    if sol.status != "ok":
        warnings.warn(f"{n_bad} steps charge and discharge a storage at once and fixing the "
                      f"direction made the LP {sol.termination}; the plan keeps them", stacklevel=4)
        return x, 0, sol.solve_s
    return sol.x, n_bad, sol.solve_s


def solve_model(m, build, optimize, dt_s: float, build_s: float, *,
                time_limit_s: float | None = None):
    """Solve a built model: raise with a diagnosis when it fails, repair complementarity.

    Parameters
    ----------
    m : facility.optimize.formulation.Model
    build : callable
        Builds the same model afresh (for the diagnosis re-solve).
    optimize : OptimizeConfig
    dt_s : float
        Step of the model, for the diagnosis times. [s]
    build_s : float
        Time spent building ``m``. [s]
    time_limit_s : float, optional
        Solver time limit (default ``optimize.time_limit_s``). [s]

    Returns
    -------
    (x, info) : the primal values and a :class:`SolveInfo` (objective of the LP's own columns).
    """
    n_orig = m.lp.n_cols
    if optimize.allow_slack:
        soften(m.lp)
    sol, pyomo_build_s = solve_lp(m.lp, optimize, time_limit_s=time_limit_s)
    build_s += pyomo_build_s
    if sol.status != "ok":
        if is_time_limit(sol.termination):
            raise InfeasibleError(
                f"the solver stopped at optimize.time_limit_s = {optimize.time_limit_s:g} s before "
                f"proving optimality ({m.lp.n_cols} variables, {m.lp.n_rows} constraints); raise "
                f"the limit or shorten the horizon / coarsen dt_s", {"termination": sol.termination})
        raise diagnose(build, optimize, dt_s, sol)
    x = sol.x
    cost = np.concatenate(m.lp.cost)
    relaxed = 1000.0 * float(cost[:n_orig] @ x[:n_orig])
    solve_s = sol.solve_s
    x, n_rep, rep_s = repair_complementarity(m, sol, optimize)
    solve_s += rep_s
    slack = slack_report(m.lp, x, dt_s) if optimize.allow_slack else {}
    obj = 1000.0 * float(cost[:n_orig] @ x[:n_orig])
    info = SolveInfo(status="slack" if slack else "optimal", termination=sol.termination,
                     objective_usd=obj, build_s=build_s, solve_s=solve_s, n_variables=m.lp.n_cols,
                     n_constraints=m.lp.n_rows, slack=slack, n_repaired_steps=n_rep,
                     relaxed_objective_usd=relaxed, repair_solve_s=rep_s,
                     lower_bound_usd=relaxed, gap_frac=gap_frac(obj, relaxed))
    return x, info
