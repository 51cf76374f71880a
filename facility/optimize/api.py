"""Public entry points: ``size_storage``, ``solve_dispatch``, their result and ``sizing.json``.

Anything but an optimal solve raises :class:`facility.errors.InfeasibleError` with a
diagnosis from a second solve in which every spec limit (window, dynamic range) and the
terminal SoC may be violated at a penalty: the message names the limits with the largest
slacks, by how much [MW or MWh] and where [s].
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from facility.errors import InfeasibleError, ScenarioError
from facility.optimize.formulation import S_PER_H, Model, build_model, resolve_storage
from facility.optimize.lp import LinearProgram, LpSolution, resolve_with_zero_upper, solve_highs

__all__ = ["SolveInfo", "SizingResult", "size_storage", "solve_dispatch", "sizing_to_json",
           "SLACK_PENALTY_KUSD"]

#: Penalty of one MW (MWh) of violation of one soft row in the diagnosis solve. [k$]
SLACK_PENALTY_KUSD = 1.0e4
_SLACK_TOL = 1e-6


@dataclass
class SolveInfo:
    """How a solve went.

    Attributes
    ----------
    status : str
        ``"optimal"``, or ``"slack"`` (``allow_slack``: limits violated at a penalty).
    termination : str
        The solver's own termination string.
    objective_usd : float
        Objective without penalties: capex (+ annuity share) + losses + degradation. [USD]
    build_s, solve_s : float
        Model build and solver time. [s]
    n_variables, n_constraints : int
        Size of the LP handed to the solver.
    slack : dict
        Largest violation per limit family in slack mode (empty otherwise). [MW or MWh]
    n_repaired_steps : int
        Steps whose simultaneous charge and discharge were repaired (see
        ``_repair_complementarity``).
    relaxed_objective_usd : float
        Optimum of the LP before that repair. [USD]
    method : str
        ``"full"`` (one LP over the horizon) or ``"periodic"`` (the reduction of
        :mod:`facility.optimize.periodic`).
    lower_bound_usd : float
        Proven lower bound on the optimum of the full LP (its own optimum for ``"full"``). [USD]
    gap_frac : float
        (objective - lower bound) / objective: how far the returned plan can be from the
        optimum at most. [frac]
    period_steps : int
        Period of the reduced stretch (``"periodic"``), else 0. [steps]
    step_factor : int
        The LP was solved on steps this many times longer, exactly
        (:mod:`facility.optimize.coarsen`); 1 = on the given grid.
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


@dataclass
class SizingResult:
    """Ratings and dispatch from :func:`size_storage` / :func:`solve_dispatch`.

    Attributes
    ----------
    p_rated_mw_opt, e_rated_mwh_opt : dict of float
        Ratings per storage (the fixed ones for a dispatch). [MW], [MWh]
    p_storage_mw : dict of (T,) arrays
        Storage power, consumer frame (+ = charging) = p_charge_mw - p_discharge_mw. [MW]
    p_charge_mw, p_discharge_mw : dict of (T,) arrays
        Split non-negative charge and discharge power. [MW]
    soc_frac : dict of (T+1,) arrays
        SoC at the step *boundaries*: soc_frac[n][0] is the initial SoC, [t+1] the SoC after
        step t, [T] the end of the horizon. [frac]
    p_pcc_mw : (T,) array
        Lossless PCC power = load + sum of storage powers. [MW]
    info : SolveInfo
    """

    p_rated_mw_opt: dict
    e_rated_mwh_opt: dict
    p_storage_mw: dict
    p_charge_mw: dict
    p_discharge_mw: dict
    soc_frac: dict
    p_pcc_mw: np.ndarray
    info: SolveInfo


def _check_inputs(p_load_mw, dt_s, storages) -> np.ndarray:
    load = np.asarray(p_load_mw, dtype=float).ravel()
    if load.size < 1 or not np.all(np.isfinite(load)):
        raise ScenarioError("p_load_mw must be a non-empty array of finite numbers [MW]")
    if not (np.isfinite(dt_s) and dt_s > 0):
        raise ScenarioError(f"dt_s = {dt_s!r} s must be > 0")
    if not storages:
        raise ScenarioError("the optimizer needs at least one enabled storage "
                            "([rack_storage], [ups] or [bess] with enabled = true)")
    return load


def _warn_unsupported(spec) -> None:
    keys = [k for k in ("max_band_energy_frac", "max_band_peak_mw") if getattr(spec, k) is not None]
    if spec.bands:
        keys.append("bands")
    if keys:
        warnings.warn(f"spec limits {', '.join(keys)} are not constraints of the LP (spectral "
                      f"limits are not linear); the verification run checks them", stacklevel=3)


def _soften(lp: LinearProgram) -> int:
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


def _slack_report(lp: LinearProgram, x: np.ndarray, dt_s: float) -> dict:
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


def _solve(lp: LinearProgram, optimize) -> tuple[LpSolution, float]:
    solver = optimize.solver.lower()
    if solver == "highs":
        return solve_highs(lp, time_limit_s=optimize.time_limit_s), 0.0
    if solver == "appsi_highs":
        from facility.optimize.pyomo_model import solve_pyomo

        return solve_pyomo(lp, time_limit_s=optimize.time_limit_s)
    raise ScenarioError(f"optimize.solver = {optimize.solver!r}: use 'highs' (matrix passed to "
                        f"HiGHS) or 'appsi_highs' (Pyomo model, HiGHS through APPSI)")


def _diagnose(build, optimize, dt_s: float, first: LpSolution) -> InfeasibleError:
    m = build()
    _soften(m.lp)
    sol, _ = _solve(m.lp, optimize)
    if sol.status != "ok":
        return InfeasibleError(
            f"the optimizer found no solution ({first.termination}) and none either with every "
            f"spec limit and the terminal SoC relaxed ({sol.termination}): the storage data "
            f"themselves are inconsistent (initial SoC outside the SoC bounds, ratings bounds)",
            {"termination": first.termination})
    rep = _slack_report(m.lp, sol.x, dt_s)
    worst = sorted(rep.items(), key=lambda kv: -kv[1]["max"])
    parts = [f"{fam} by {d['max']:.4g} {d['unit']}"
             + (f" (worst at t = {d['t_s']:.4g} s, {d['n_violated']} rows)" if d["t_s"] is not None else "")
             for fam, d in worst[:4]]
    msg = (f"the limits cannot be met with the allowed storage ({first.termination}); "
           f"the penalized re-solve violates: " + ("; ".join(parts) if parts else "nothing measurable "
                                                   "(numerical trouble: tighten the scaling)"))
    return InfeasibleError(msg, {"termination": first.termination, "slack": rep})


def _repair_complementarity(m: Model, first: LpSolution, optimize, tol_mw: float = 1e-6):
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
        sol, _ = _solve(m.lp, optimize)
    if sol.status != "ok":
        warnings.warn(f"{n_bad} steps charge and discharge a storage at once and fixing the "
                      f"direction made the LP {sol.termination}; the plan keeps them", stacklevel=4)
        return x, 0, sol.solve_s
    return sol.x, n_bad, sol.solve_s


def _solve_built(m: Model, build, optimize, dt_s: float, build_s: float):
    """Solve a built model: raise with a diagnosis when it fails, repair complementarity.

    Returns
    -------
    (x, info) : the primal values and a :class:`SolveInfo` (objective of the LP's own columns).
    """
    n_orig = m.lp.n_cols
    if optimize.allow_slack:
        _soften(m.lp)
    sol, pyomo_build_s = _solve(m.lp, optimize)
    build_s += pyomo_build_s
    if sol.status != "ok":
        if "time limit" in sol.termination.lower() or "timelimit" in sol.termination.lower():
            raise InfeasibleError(
                f"the solver stopped at optimize.time_limit_s = {optimize.time_limit_s:g} s before "
                f"proving optimality ({m.lp.n_cols} variables, {m.lp.n_rows} constraints); raise "
                f"the limit or shorten the horizon / coarsen dt_s", {"termination": sol.termination})
        raise _diagnose(build, optimize, dt_s, sol)
    x = sol.x
    cost = np.concatenate(m.lp.cost)
    relaxed = 1000.0 * float(cost[:n_orig] @ x[:n_orig])
    solve_s = sol.solve_s
    x, n_rep, rep_s = _repair_complementarity(m, sol, optimize)
    solve_s += rep_s
    slack = _slack_report(m.lp, x, dt_s) if optimize.allow_slack else {}
    obj = 1000.0 * float(cost[:n_orig] @ x[:n_orig])
    info = SolveInfo(status="slack" if slack else "optimal", termination=sol.termination,
                     objective_usd=obj, build_s=build_s, solve_s=solve_s, n_variables=m.lp.n_cols,
                     n_constraints=m.lp.n_rows, slack=slack, n_repaired_steps=n_rep,
                     relaxed_objective_usd=relaxed, repair_solve_s=rep_s,
                     lower_bound_usd=relaxed, gap_frac=_gap(obj, relaxed))
    return x, info


def _gap(obj: float, lower: float) -> float:
    return max(obj - lower, 0.0) / max(abs(obj), 1e-9)


def _result(load, data, plan: dict, info: SolveInfo) -> SizingResult:
    """Pack per-storage arrays ``{name: (p_rated, e_rated, ch, dis, e)}`` into a result."""
    res = SizingResult({}, {}, {}, {}, {}, {}, load.copy(), info)
    for n, (p_r, e_r, ch, dis, e) in plan.items():
        p_r, e_r = max(float(p_r), 0.0), max(float(e_r), 0.0)
        ch, dis = np.maximum(ch, 0.0), np.maximum(dis, 0.0)
        res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n] = p_r, e_r
        res.p_charge_mw[n], res.p_discharge_mw[n] = ch, dis
        res.p_storage_mw[n] = ch - dis
        res.soc_frac[n] = (e / e_r if e_r > 1e-12 else np.full(load.size + 1, data[n].soc0))
        res.p_pcc_mw = res.p_pcc_mw + res.p_storage_mw[n]
    return res


def _plan(m: Model, x: np.ndarray) -> dict:
    return {n: (x[c["p_rated"][0]], x[c["e_rated"][0]], x[c["ch"]], x[c["dis"]], x[c["e"]])
            for n, c in m.cols.items()}


def _run_full(load, dt_s, data, spec, optimize, hist, variation_cost: float = 0.0) -> SizingResult:
    def build() -> Model:
        return build_model(load, dt_s, data, spec, optimize.energy_price_usd_per_mwh,
                           p_pcc_history_mw=hist, margin_frac=optimize.limit_margin_frac,
                           pcc_variation_cost_usd_per_mw=variation_cost)

    t0 = time.perf_counter()
    m = build()
    x, info = _solve_built(m, build, optimize, dt_s, time.perf_counter() - t0)
    return _result(load, data, _plan(m, x), info)


def _run(load, dt_s, data, spec, optimize, hist) -> SizingResult:
    """Solve on the coarsest exact grid (:mod:`facility.optimize.coarsen`), there through the
    periodic reduction where it applies, else the full LP."""
    _warn_unsupported(spec)
    if hist is None and optimize.coarsen and not optimize.allow_slack:
        from facility.optimize.coarsen import run_coarsened

        res = run_coarsened(load, dt_s, data, spec, optimize)
        if res is not None:
            return res
    return _run_grid(load, dt_s, data, spec, optimize, hist)


def _run_grid(load, dt_s, data, spec, optimize, hist) -> SizingResult:
    """Solve on the given grid: the periodic reduction where it applies, else the full LP."""
    if hist is None and optimize.periodic is not False and not optimize.allow_slack:
        from facility.optimize.periodic import run_periodic

        res = run_periodic(load, dt_s, data, spec, optimize)
        if res is not None:
            return res
    return _run_full(load, dt_s, data, spec, optimize, hist)


def size_storage(p_load_mw: np.ndarray, dt_s: float, storages: Mapping, spec, optimize, *,
                 t_s: np.ndarray | None = None) -> SizingResult:
    """Optimal ratings and dispatch of the storages under the spec's limits on the PCC power.

    Parameters
    ----------
    p_load_mw : numpy.ndarray (T,)
        Site power after the GPU-side controls. [MW]
    dt_s : float
        Uniform time step. [s]
    storages : mapping of name -> StorageConfig
        ``rack_storage``, ``ups``, ``bess``; each extendable (ratings chosen in
        ``[min_*, max_*]``) or fixed.
    spec : SpecConfig
        Limits on the PCC power; every window limit that is set is a hard constraint.
    optimize : OptimizeConfig
        Economics and solver options.
    t_s : numpy.ndarray (T,), optional
        Time stamps; only checked for a uniform step equal to ``dt_s``. [s]

    Returns
    -------
    SizingResult

    Raises
    ------
    InfeasibleError
        No rating within the bounds meets the limits; the message says which limit by how much.
    """
    load = _check_inputs(p_load_mw, dt_s, storages)
    if t_s is not None:
        t = np.asarray(t_s, dtype=float)
        if t.size != load.size or (t.size > 1 and not np.allclose(np.diff(t), dt_s, rtol=1e-6, atol=1e-9)):
            raise ScenarioError(f"t_s must have {load.size} samples spaced dt_s = {dt_s:g} s apart")
    horizon_h = load.size * dt_s / S_PER_H
    data = {n: resolve_storage(n, c, optimize, horizon_h) for n, c in storages.items()}
    return _run(load, dt_s, data, spec, optimize, None)


def solve_dispatch(p_load_mw: np.ndarray, dt_s: float, storages: Mapping, spec, optimize, *,
                   initial_soc_frac: Mapping[str, float] | None = None, terminal: str | None = None,
                   p_pcc_history_mw: np.ndarray | None = None,
                   terminal_soc_frac: Mapping[str, tuple[float, float]] | None = None,
                   pcc_variation_cost_usd_per_mw: float = 0.0) -> SizingResult:
    """Optimal dispatch of storages with fixed ratings (optimal controller, MPC windows).

    Parameters
    ----------
    p_load_mw, dt_s, storages, spec, optimize
        As :func:`size_storage`; every storage is treated as fixed (``p_rated_mw``,
        ``e_rated_mwh`` required), whatever its ``extendable``.
    initial_soc_frac : mapping of name -> float, optional
        SoC at t = 0 overriding each section's ``initial_soc_frac`` (receding horizon). [frac]
    terminal : str, optional
        Terminal SoC policy overriding every section's (``at_least_initial``,
        ``equal_initial``, ``free``).
    p_pcc_history_mw : numpy.ndarray, optional
        PCC power of the steps just before t = 0 (same ``dt_s``); the window limits then also
        compare the plan with it. [MW]
    terminal_soc_frac : mapping of name -> (lo, hi), optional
        SoC band the horizon must end in, besides the terminal policy (receding horizon: keep
        each storage away from its bounds for the next window). [frac]
    pcc_variation_cost_usd_per_mw : float
        Price on the PCC power's total variation, sum over t of abs(P[t] - P[t-1]) (the first
        step against the history's last sample): among plans of equal loss the flattest one.
        [USD/MW]

    With either of the last two set, the LP is solved as it stands (no coarsening, no periodic
    reduction: they are proven for the plain objective and terminal policy only).
    """
    load = _check_inputs(p_load_mw, dt_s, storages)
    if terminal is not None and terminal not in ("at_least_initial", "equal_initial", "free"):
        raise ScenarioError(f"terminal = {terminal!r}: use at_least_initial, equal_initial or free")
    if not (np.isfinite(pcc_variation_cost_usd_per_mw) and pcc_variation_cost_usd_per_mw >= 0):
        raise ScenarioError(f"pcc_variation_cost_usd_per_mw = {pcc_variation_cost_usd_per_mw!r} "
                            f"USD/MW must be >= 0")
    horizon_h = load.size * dt_s / S_PER_H
    soc0 = dict(initial_soc_frac or {})
    band = dict(terminal_soc_frac or {})
    data = {}
    for n, c in storages.items():
        fixed = c.model_copy(update={"extendable": False}) if c.extendable else c
        data[n] = resolve_storage(n, fixed, optimize, horizon_h, soc0=soc0.get(n), terminal=terminal,
                                  soc_end=band.get(n))
    if band or pcc_variation_cost_usd_per_mw > 0:
        _warn_unsupported(spec)
        return _run_full(load, dt_s, data, spec, optimize, p_pcc_history_mw,
                         pcc_variation_cost_usd_per_mw)
    return _run(load, dt_s, data, spec, optimize, p_pcc_history_mw)


def sizing_to_json(result: SizingResult) -> dict:
    """The ``sizing.json`` layout of ``shared/design.md``: per storage
    ``p_rated_mw_opt``/``e_rated_mwh_opt``, then ``objective_usd``, ``solver_status``,
    ``build_s``, ``solve_s``, ``n_variables``, ``n_constraints``; extended with ``method``,
    ``lower_bound_usd``, ``gap_frac``, ``period_steps`` and ``step_factor`` (see :class:`SolveInfo`)."""
    out: dict = {n: {"p_rated_mw_opt": float(result.p_rated_mw_opt[n]),
                     "e_rated_mwh_opt": float(result.e_rated_mwh_opt[n])}
                 for n in result.p_rated_mw_opt}
    i = result.info
    out.update(objective_usd=float(i.objective_usd), solver_status=i.status, build_s=float(i.build_s),
               solve_s=float(i.solve_s), n_variables=int(i.n_variables),
               n_constraints=int(i.n_constraints), method=i.method,
               lower_bound_usd=float(i.lower_bound_usd), gap_frac=float(i.gap_frac),
               period_steps=int(i.period_steps), step_factor=int(i.step_factor))
    return out
