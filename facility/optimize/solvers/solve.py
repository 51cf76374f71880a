"""The shared LP layer under every strategy: solve a built model, diagnose, repair.

* :func:`solve_lp` hands a :class:`~facility.optimize.model.linear_program.LinearProgram` to HiGHS (straight
  through ``highspy``, or as a Pyomo model through APPSI).
* :func:`solve_model` solves a built :class:`~facility.optimize.model.formulation.Model`: anything
  but an optimal solve raises :class:`facility.errors.InfeasibleError` with a diagnosis from a
  second solve in which every spec limit (window, dynamic range) and the terminal SoC may be
  violated at a penalty (the message names the limits with the largest slacks, by how much
  [MW or MWh] and where [s]); then the complementarity repair.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

import numpy as np

from facility.errors import InfeasibleError, ScenarioError, SolverTimeLimit
from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.solvers.lp import LpSolution, extend_highs, resolve_with_zero_upper, restore_upper, solve_highs
from facility.optimize.solvers.pyomo_model import solve_pyomo
from facility.optimize.model.result import SolveInfo, gap_frac
from facility.optimize.model.spectral import BINS_PER_ROUND, SEED_BINS

__all__ = ["SLACK_PENALTY_KUSD", "without_diagnosis", "solve_lp", "soften", "soften_new", "slack_report", "diagnose",
           "burn_overlap", "overlap_steps", "repair_complementarity", "undo_repair", "solve_model", "is_time_limit"]

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
        return solve_pyomo(lp, time_limit_s=limit)
    raise ScenarioError(f"optimize.solver = {optimize.solver!r}: use 'highs' (matrix passed to "
                        f"HiGHS) or 'appsi_highs' (Pyomo model, HiGHS through APPSI)")


def is_time_limit(termination: str) -> bool:
    """Whether a solver termination string says the time limit stopped it."""
    t = termination.lower()
    return "time limit" in t or "timelimit" in t


def soften(lp: LinearProgram, first_block: int = 0) -> int:
    """Add one penalized slack column per soft row bound; return the first slack column.

    ``first_block``: soften only the row blocks from this index on (rows added later)."""
    first = lp.n_cols
    lo_all = np.concatenate(lp.row_lo)
    hi_all = np.concatenate(lp.row_hi)
    for b in list(lp.blocks[first_block:]):
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


def soften_new(lp: LinearProgram, mark: tuple[int, int, int]) -> None:
    """Soften the blocks whose rows start at or after ``mark`` (see :meth:`LinearProgram.mark`)."""
    first = next((i for i, b in enumerate(lp.blocks) if b.start >= mark[1]), len(lp.blocks))
    soften(lp, first)


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


_DIAGNOSE = contextvars.ContextVar("facility_diagnose_infeasible", default=True)


@contextlib.contextmanager
def without_diagnosis():
    """Within it, a solve with no solution raises :class:`~facility.errors.InfeasibleError` at
    once, without :func:`diagnose`'s penalized re-solve (as costly as the solve itself) that
    names the limits: for a caller that only goes on to its next formulation (the MPC's
    attempts, :func:`facility.control.plan.plan_once`)."""
    token = _DIAGNOSE.set(False)
    try:
        yield
    finally:
        _DIAGNOSE.reset(token)


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


def burn_overlap(m, x: np.ndarray, tol_mw: float = 1e-6) -> tuple[np.ndarray, int]:
    r"""Turn simultaneous charge and discharge into a complementary plan plus burned power.

    With the burn lever, a step that charges p^ch and discharges p^dis one storage at once is
    realized exactly by one direction and a burn b ≥ 0 on the site bus (η = η_c η_d):

    .. math::
        p^{ch} \eta \le p^{dis}:\ p^{dis\prime} = p^{dis} - \eta p^{ch},\ p^{ch\prime} = 0,\
        b = p^{ch} (1 - \eta);\qquad
        \text{else}:\ p^{ch\prime} = p^{ch} - p^{dis} / \eta,\ p^{dis\prime} = 0,\
        b = p^{dis} (1/\eta - 1).

    The PCC power (p' + b = p^ch − p^dis), the stored energy (η_c p^ch' − p^dis'/η_d equals
    η_c p^ch − p^dis/η_d) and the energy cost (the loss π((1−η_c)p^ch + (1/η_d − 1)p^dis)
    equals π((1−η_c)p^ch' + (1/η_d − 1)p^dis' + b)) are unchanged, the degradation does not grow
    and the ratings still hold, so the converted columns are an optimal solution of the same LP
    (zero gap). b is burned by the jobs with the burn lever, in proportion to the headroom they
    have left (b / κ of GPU power, κ = site MW per GPU MW); steps where it does not fit, storages
    with a converter ramp limit (the net power changes) and a lagging cooling plant (the site
    would not see b at once) are left to :func:`repair_complementarity`.

    Returns
    -------
    (x, n_steps) : the converted columns and the number of (storage, step) pairs converted.
    """
    lv = getattr(m, "levers", None)
    if lv is None or not lv.has_burn or lv.lagged:
        return x, 0
    x = x.copy()
    T = m.n_steps
    slack = {}
    for jl in lv.jobs:
        c = m.lever_cols.get(jl.name, {})
        if "burn" not in c:
            continue
        F = x[c["floor"][0]] if "floor" in c else None
        C = x[c["cap"][0]] if "cap" in c else None
        fb = np.maximum(F * jl.floor_coef_mw + jl.floor_const_mw, 0.0) if F is not None else 0.0
        head = jl.head_const_mw + (C * jl.head_coef_mw if C is not None else 0.0)
        slack[jl.name] = np.where(jl.running > 0, np.maximum(head - fb - x[c["burn"]], 0.0), 0.0)
    room_site = lv.site_per_gpu * sum(slack.values(), np.zeros(T))
    need = np.zeros(T)
    conv = {}
    for n, c in m.cols.items():
        s = m.storages[n]
        if s.max_ramp_mw_per_s is not None:
            continue
        ch, dis = x[c["ch"]], x[c["dis"]]
        eta = s.eta_c * s.eta_d
        over = np.minimum(ch, dis) > tol_mw
        b = np.where(ch * eta <= dis, ch * (1 - eta), dis * (1 / eta - 1))
        conv[n] = (over, b)
        need += np.where(over, b, 0.0)
    ok = need <= room_site * (1 - 1e-9)
    if not conv or not np.any(ok & (need > 0)):
        return x, 0
    n_done = 0
    for n, (over, b) in conv.items():
        c, s = m.cols[n], m.storages[n]
        sel = over & ok
        ch, dis = x[c["ch"]].copy(), x[c["dis"]].copy()
        eta = s.eta_c * s.eta_d
        d_case = sel & (ch * eta <= dis)
        c_case = sel & ~(ch * eta <= dis)
        dis[d_case] -= eta * ch[d_case]
        ch[d_case] = 0.0
        ch[c_case] -= dis[c_case] / eta
        dis[c_case] = 0.0
        x[c["ch"]], x[c["dis"]] = ch, dis
        n_done += int(sel.sum())
    total_room = sum(slack.values(), np.zeros(T))
    gpu_need = np.where(ok, need, 0.0) / lv.site_per_gpu
    share = np.divide(gpu_need, total_room, out=np.zeros(T), where=total_room > 0)
    for name, sl in slack.items():
        e = m.lever_cols[name]["burn"]
        x[e] = x[e] + share * sl
    return x, n_done


#: Rounds of the complementarity repair that fix only the overlapping steps; the round after
#: them fixes every step (:func:`repair_complementarity`).
MAX_REPAIR_ROUNDS = 4


def overlap_steps(m, x: np.ndarray, tol_mw: float = 1e-6) -> dict:
    """Per storage, the steps at which the columns ``x`` charge and discharge at once:
    ``{name: bool (T,)}`` with min(p_ch, p_dis) > ``tol_mw``."""
    return {n: np.minimum(x[c["ch"]], x[c["dis"]]) > tol_mw for n, c in m.cols.items()}


def _direction_columns(m, x: np.ndarray, steps: dict | None) -> np.ndarray:
    """Columns that fix each step's direction to the sign of its net power (p_dis where
    p_ch - p_dis >= 0, else p_ch), on ``steps`` (per storage bool (T,)) or on every step."""
    zero = []
    for n, c in m.cols.items():
        net = x[c["ch"]] - x[c["dis"]]
        sel = np.ones(net.size, bool) if steps is None else steps[n]
        zero += [c["dis"][sel & (net >= 0)], c["ch"][sel & (net < 0)]]
    return np.concatenate(zero)


def repair_complementarity(m, first: LpSolution, optimize, tol_mw: float = 1e-6):
    """Make charge and discharge complementary (p_ch · p_dis = 0) where the LP was not.

    With losses the LP may charge and discharge one storage at once to burn energy (it pays
    only the loss price), which no converter can do and the simulator would not reproduce.
    With the burn lever that overlap is first turned into burned power at zero gap
    (:func:`burn_overlap`). Where overlap remains, the direction of each *overlapping* step is
    fixed to the sign of its net power (p_dis <= 0 where p_ch - p_dis >= 0, else p_ch <= 0) and
    the LP solved again, warm-started (only bounds change): the ratings, the stored energy and
    every other step re-optimize. Steps that overlap in that solution are fixed the same way,
    up to :data:`MAX_REPAIR_ROUNDS` rounds; a last round fixes the direction of every step (the
    most restrictive form). Each round is a restriction of the LP, so its optimum is
    realizable (once no step overlaps) and at least the LP optimum, which stays the lower
    bound of the problem with complementarity (the LP relaxes it, see
    :func:`facility.optimize.model.formulation.add_power_limits`).

    Returns
    -------
    (x, n_steps_repaired, extra_solve_s, zeroed) : ``n_steps_repaired`` counts the (storage,
        step) pairs converted or fixed; ``zeroed`` = (columns whose upper bound was set to 0,
        their previous upper bounds, the first solution), to undo with :func:`undo_repair`;
        None when no bound changed. Where a round's LP fails (infeasible, time limit) the
        plan of the round before is returned with a warning: it still overlaps
        (:func:`overlap_steps` tells where).
    """
    x, n_burn = burn_overlap(m, first.x, tol_mw)
    bad = overlap_steps(m, x, tol_mw)
    if not any(b.any() for b in bad.values()):
        return x, n_burn, 0.0, None
    ub_all = np.concatenate(m.lp.col_ub)
    zeroed, solve_s, n_fixed = [], 0.0, 0
    for rnd in range(MAX_REPAIR_ROUNDS + 1):
        every = rnd == MAX_REPAIR_ROUNDS
        z = _direction_columns(m, x, None if every else bad)
        zeroed.append(z)
        n_fixed += int(sum(b.sum() for b in bad.values()))
        if first.handle is not None:  # highspy: change bounds, warm-started dual simplex
            sol = resolve_with_zero_upper(first, z)
        else:
            m.lp.ub_zero.append(z)
            sol, _ = solve_lp(m.lp, optimize)
        solve_s += sol.solve_s
        if sol.status != "ok":
            n_left = int(sum(b.sum() for b in bad.values()))
            warnings.warn(f"{n_left} steps charge and discharge a storage at once and fixing their "
                          f"direction made the LP {sol.termination}; the plan keeps them (it is not "
                          f"realizable as it stands)", stacklevel=4)
            break
        x = sol.x
        bad = overlap_steps(m, x, tol_mw)
        if not any(b.any() for b in bad.values()):
            break
    zero = np.unique(np.concatenate(zeroed))
    if first.handle is None:
        m.lp.ub_zero = [u for u in m.lp.ub_zero if not any(u is zz for zz in zeroed)] + [zero]
    return x, n_fixed + n_burn, solve_s, (zero, ub_all[zero], first)


def undo_repair(m, zeroed) -> None:
    """Give back the upper bounds :func:`repair_complementarity` set to 0."""
    if zeroed is None:
        return
    zero, ub_old, sol = zeroed
    if sol.handle is not None:
        restore_upper(sol, zero, ub_old)
    else:
        m.lp.ub_zero = [z for z in m.lp.ub_zero if z is not zero]


#: HiGHS options of the first solve of a large model with a hybrid section (several storage
#: units in one section, ``bess.supercap`` ...): interior point with crossover (a basis for the
#: repair and the lazy rows). Its units can each serve the same step, a dual-degenerate LP on
#: which the dual simplex spent 1.6 x the iterations of one unit alone (start/stop bench, 1,800
#: steps); the interior point is not slowed by that (docs/storage.md, "Measured").
HYBRID_HIGHS_OPTIONS = {"solver": "ipm", "run_crossover": "on"}
#: Columns from which a hybrid model goes to the interior point. Measured (CPU, hybrid
#: supercap + lfp_1h): 32,406 columns 17.3 s against 42.7 s by the dual simplex; about 21,600
#: columns 6.5 s against 11.1 s; the MPC's re-plans (1,100-1,800 columns) 0.50 s against 0.20 s
#: median, so small models keep the simplex. [-]
HYBRID_IPM_MIN_COLS = 10_000


def hybrid_options(m) -> dict | None:
    """:data:`HYBRID_HIGHS_OPTIONS` where a section of the model has several units
    (``<section>.<technology>``) and the LP has at least :data:`HYBRID_IPM_MIN_COLS` columns,
    else None (the tuned dual simplex of ``HIGHS_OPTIONS``)."""
    secs = [n.split(".", 1)[0] for n in getattr(m, "cols", {}) if "." in n]
    if len(secs) == len(set(secs)) or m.lp.n_cols < HYBRID_IPM_MIN_COLS:
        return None
    return HYBRID_HIGHS_OPTIONS


def solve_model(m, build, optimize, dt_s: float, build_s: float, *,
                time_limit_s: float | None = None, spectral=None, repair: bool = True):
    """Solve a built model: raise with a diagnosis when it fails, add the violated spectral
    rows and solve again until none is violated, repair complementarity.

    Parameters
    ----------
    m : facility.optimize.model.formulation.Model
    build : callable
        Builds the same model afresh (for the diagnosis re-solve).
    optimize : OptimizeConfig
    dt_s : float
        Step of the model, for the diagnosis times. [s]
    build_s : float
        Time spent building ``m``. [s]
    time_limit_s : float, optional
        Solver time limit (default ``optimize.time_limit_s``). [s]
    spectral : LazySpectral, optional
        The band limits of the full horizon (:class:`facility.optimize.model.spectral.LazySpectral`):
        after each solve the plan's full-horizon PCC power is checked bin by bin and the
        violated bins get their rows (:mod:`facility.optimize.model.spectral`).
    repair : bool
        Repair complementarity (default); False returns the LP's optimum as it is (a bound).

    Returns
    -------
    (x, info) : the primal values and a :class:`SolveInfo` (objective of the LP's own columns
        plus its constant offset).
    """
    n_orig = m.lp.n_cols
    if optimize.allow_slack:
        soften(m.lp)
    rows = spectral.attach(m) if spectral is not None else None
    if rows is not None:  # the bins the load alone puts above their limit, before the first solve
        k, amp, ang = spectral.violations(m, np.zeros(m.lp.n_cols))
        rows.add(m.lp, rows.directions_for(k, ang, amp, SEED_BINS))
    sol, pyomo_build_s = solve_lp(m.lp, optimize, time_limit_s=time_limit_s, options=hybrid_options(m))
    build_s += pyomo_build_s
    solve_s = rep_s = 0.0
    n_cut = 0
    first_sol = sol
    last_lower = None
    while True:
        if sol.status != "ok":
            if is_time_limit(sol.termination):
                # an optimum with fewer spectral rows (a relaxation) bounds the optimum below
                raise SolverTimeLimit(
                    f"the solver stopped at optimize.time_limit_s = {optimize.time_limit_s:g} s before "
                    f"proving optimality ({m.lp.n_cols} variables, {m.lp.n_rows} constraints); raise "
                    f"the limit or shorten the horizon / coarsen dt_s", {"termination": sol.termination},
                    lower_bound_usd=last_lower)
            if not _DIAGNOSE.get():
                raise InfeasibleError(f"the optimizer found no solution ({sol.termination}; not diagnosed)",
                                      {"termination": sol.termination})
            raise diagnose(lambda: spectral.replay(build()) if rows is not None else build(),
                           optimize, dt_s, sol)
        solve_s += sol.solve_s
        if not optimize.allow_slack:
            last_lower = 1000.0 * (float(np.concatenate(m.lp.cost)[:n_orig] @ sol.x[:n_orig])
                                   + m.objective_offset_kusd)
        if rows is not None:
            k, amp, ang = spectral.violations(m, sol.x)
            new = rows.directions_for(k, ang, amp, BINS_PER_ROUND)
            if new:
                sol = _add_and_resolve(m, rows, new, sol, optimize, time_limit_s)
                n_cut += 1
                continue
        relaxed_x = sol.x
        if rows is not None and sol.handle is not None:
            rows.take_multipliers(sol.handle.getSolution().row_dual)
        x, n_rep, r_s, zeroed = (repair_complementarity(m, sol, optimize) if repair
                                 else (sol.x, 0, 0.0, None))
        rep_s += r_s
        if rows is not None and zeroed is not None:
            k, amp, ang = spectral.violations(m, x)
            new = rows.directions_for(k, ang, amp, BINS_PER_ROUND)
            if new:
                undo_repair(m, zeroed)
                sol = _add_and_resolve(m, rows, new, zeroed[2], optimize, time_limit_s)
                n_cut += 1
                continue
        break
    solve_s += rep_s
    cost = np.concatenate(m.lp.cost)
    off = 1000.0 * m.objective_offset_kusd
    relaxed = 1000.0 * float(cost[:n_orig] @ relaxed_x[:n_orig]) + off
    slack = slack_report(m.lp, x, dt_s) if optimize.allow_slack else {}
    obj = 1000.0 * float(cost[:n_orig] @ x[:n_orig]) + off
    info = SolveInfo(status="slack" if slack else "optimal", termination=first_sol.termination,
                     objective_usd=obj, build_s=build_s, solve_s=solve_s, n_variables=m.lp.n_cols,
                     n_constraints=m.lp.n_rows, slack=slack, n_repaired_steps=n_rep,
                     relaxed_objective_usd=relaxed, repair_solve_s=rep_s,
                     lower_bound_usd=relaxed, gap_frac=gap_frac(obj, relaxed),
                     n_spectral_bins=len(rows.cuts) if rows is not None else 0,
                     n_spectral_rounds=n_cut)
    return x, info


def _add_and_resolve(m, rows, new, sol, optimize, time_limit_s):
    """Add spectral rows and solve again (warm on the highspy path)."""
    mark = m.lp.mark()
    rows.add(m.lp, new)
    if sol.handle is not None and not optimize.allow_slack:
        return extend_highs(sol, m.lp, mark)
    if optimize.allow_slack:
        soften_new(m.lp, mark)
    out, _ = solve_lp(m.lp, optimize, time_limit_s=time_limit_s)
    return out
