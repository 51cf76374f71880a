"""Research prototype (not used by facility): nested Benders over time blocks, proven gap.

See README.md beside this file for what it achieved and why it is not a strategy of
:mod:`facility.optimize`.

For loads that do not repeat (stochastic jitter, measured traces, job start/stop,
checkpoints) neither exact coarsening nor the periodic reduction applies, and HiGHS' time on
the full LP grows about quadratically with the horizon. The horizon is cut into blocks
B_0 .. B_{n-1} of L steps; each block is a small LP (:mod:`facility.optimize.block_model`)
that is kept alive in HiGHS and re-solved warm many times. The blocks are linked only through
a small **state** at each boundary s:

* the stored energy relative to the initial one, δ = e_s - s_0 Ê, per storage [MWh];
* the ratings P̂, Ê per storage (the same for every block) [MW, MWh];
* a **summary of the PCC power before s** for the window limits: for every lag bound
  (k, B, σ) of :mod:`facility.optimize.windows` and a few suffix lengths j ∈ J(k)
  (k, ⌊k/2⌋, ⌊k/4⌋), z_j = min over t ∈ [s - j, s) of σ P_t [MW]; the rows
  σ P_{s+i} - z_j ≤ B for every i with i + j ≤ k (the tightest j for each i) stand for the
  window rows that straddle s;
* with a dynamic-range limit, the largest and smallest PCC power so far [MW]; with a converter
  ramp limit, each storage's last power [MW].

**Lower bound (relaxation R).** Replace every window row that straddles a boundary by the
summary rows above. Each summary row compares P_{s+i} with the smallest σ P over a set of
earlier steps that all lie within k of s + i, so any plan of the full LP meets it: R is a
relaxation of the full LP (z* ≥ z_R). R is a chain of block LPs linked by the state x_s, so
its optimum is

    z_R = min over ratings r of  capex(r) + V_0(r),
    V_b(x_b) = min over block b's plan of  op_b + V_{b+1}(x_{b+1})   (V_n = 0),

with V_b convex and piecewise linear in the state. *Dual dynamic programming* builds outer
approximations: at a trial state x̄_b the block LP (with the current cuts of V_{b+1}) gives
its optimum v̄ and the reduced costs π of the fixed state columns, and V_b ≥ v̄ + π (x - x̄_b)
holds everywhere (LP duality; the cuts of V_{b+1} are below it, so v̄ is too). The master
min capex(r) + θ_0, θ_0 ≥ the cuts of V_0, then gives a **proven lower bound** on z_R ≤ z*.

**Upper bound (restriction).** A forward pass solves the blocks in time order with the
*exact* rows: the PCC power of the blocks already planned is a constant history of every
window row that reaches back into them (so every window row of the full LP holds), the stored
energy continues from the block before, the ratings may only grow (lower bound: the master's
ratings; the capex of a rise is charged in the block's objective), and V_{b+1}'s cuts price the
end state. The plan is assembled over the horizon, its charge/discharge overlap repaired
(:func:`facility.optimize.solve.repair_complementarity`, per block), checked step by step by
:func:`facility.optimize.verify.verify_plan`, and its cost is an upper bound z_UB ≥ z*. Its
states are the next trial points.

The passes alternate until (z_UB - z_LB) / z_UB ≤ ``optimize.max_gap_frac`` or the time limit;
the best verified plan is returned with its proven gap (``SolveInfo.method = "blocks"``,
``lower_bound_usd``, ``gap_frac``, ``iterations``).
"""

from __future__ import annotations

import logging
import time
import warnings

import numpy as np

from facility.errors import InfeasibleError
from block_model import BlockModel, Layout, make_layout
from facility.optimize.formulation import plan_cost_kusd
from facility.optimize.lp import LinearProgram, solve_highs
from facility.optimize.problem import Problem
from facility.optimize.result import SizingResult, SolveInfo, gap_frac, pack_result
from facility.optimize.verify import verify_plan

__all__ = ["solve_blocks", "Decomposition"]

log = logging.getLogger(__name__)

#: Most outer iterations (forward + backward + master + exact pass). [-]
MAX_ITERATIONS = 200
#: The lower bound has settled when an iteration raises it by less than this share. [frac]
STALL_FRAC = 1e-3
#: Weight of the master's ratings in the next trial point (in-out stabilization). [frac]
IN_OUT = 0.5
#: Elastic excess below which a relaxed pass counts as carried by its ratings. [MW, MWh]
EXCESS_TOL = 1e-6


class Decomposition:
    """The blocks of one problem (a relaxed and an exact LP each), their cuts and the master.

    Parameters
    ----------
    pb : Problem
    layout : Layout
        Block boundaries and state summary (:func:`facility.optimize.block_model.make_layout`).
    """

    def __init__(self, pb: Problem, layout: Layout):
        self.pb, self.layout = pb, layout
        self.relaxed = [BlockModel(pb, layout, b, exact=False) for b in range(layout.n_blocks)]
        self.exact = [BlockModel(pb, layout, b, exact=True) for b in range(layout.n_blocks)]
        self.names = list(pb.storages)
        #: cuts of V_0 on the ratings: (v, {name: (pi_p, pi_e)}, {name: (p, e)})
        self.master_cuts: list = []
        self.n_cuts = 0

    @property
    def solve_s(self) -> float:
        """HiGHS time of every block solve so far. [s]"""
        return sum(b.hm.solve_s for b in self.relaxed + self.exact)

    # ------------------------------------------------------------------ master
    def solve_master(self):
        """Ratings minimizing capex + θ_0 over the cuts of V_0; returns (ratings, lower bound [k$]).

        .. math::  \\min_{r, \\theta} \\sum_s c_P \\hat P_s + c_E \\hat E_s + \\theta
                   \\quad \\text{s.t.}\\ \\theta \\ge v^k + \\pi^k (r - r^k),\\ \\theta \\ge 0,
                   \\ r \\in [r_{lo}, r_{hi}]
        """
        lp = LinearProgram()
        cols = {}
        for n in self.names:
            s = self.pb.storages[n]
            cols[n] = (lp.add_columns(f"{n}:p", 1, s.p_lo, s.p_hi, s.c_p)[0],
                       lp.add_columns(f"{n}:e", 1, s.e_lo, s.e_hi, s.c_e)[0])
        th = lp.add_columns("theta", 1, 0.0, np.inf, 1.0)[0]
        for v, pis, rbar in self.master_cuts:
            terms = [(np.array([th]), 1.0)]
            rhs = v
            for n in self.names:
                (pp, pe), (rp, re) = pis[n], rbar[n]
                terms += [(np.array([cols[n][0]]), -pp), (np.array([cols[n][1]]), -pe)]
                rhs -= pp * rp + pe * re
            lp.add_rows("cut", terms, rhs, np.inf, soft=False)
        sol = solve_highs(lp)
        if sol.status != "ok":
            raise InfeasibleError(f"the master problem of the block decomposition is "
                                  f"{sol.termination}", {"termination": sol.termination})
        r = {n: (float(sol.x[cols[n][0]]), float(sol.x[cols[n][1]])) for n in self.names}
        return r, float(sol.objective)

    # ------------------------------------------------------------------ passes
    def _empty_plan(self):
        T = self.pb.n_steps
        return (self.pb.load_mw.astype(float).copy(), {n: np.zeros(T) for n in self.names},
                {n: np.zeros(T) for n in self.names}, {n: np.zeros(T + 1) for n in self.names})

    def _commit(self, blk, out, pcc, ch, dis, delta) -> None:
        a, z = blk.a, blk.z
        for n in self.names:
            ch[n][a:z], dis[n][a:z] = out["ch"][n], out["dis"][n]
            delta[n][a + 1:z + 1] = out["delta"][n][1:]
            pcc[a:z] += out["ch"][n] - out["dis"][n]

    def forward_relaxed(self, ratings: dict):
        """Trial states: the relaxed blocks in time order at fixed ratings (DDP forward pass).

        Returns
        -------
        (states, excess) : the state entering each block, and the total elastic excess of the
            pass (0 when the ratings suffice for the relaxation along this path).
        """
        pcc, ch, dis, delta = self._empty_plan()
        states, excess = [], 0.0
        for blk in self.relaxed:
            st = self.layout.state_at(blk.a, pcc, delta, ch, dis, ratings)
            _, _, out = blk.solve_relaxed(st)
            excess += out["excess"]
            self._commit(blk, out, pcc, ch, dis, delta)
            states.append(st)
        return states, excess

    def backward(self, states: list) -> None:
        """Cuts of V_b at the trial states, b = n-1 .. 0, into block b - 1 (both of its models)
        or the master."""
        for b in range(len(self.relaxed) - 1, -1, -1):
            v, pis, _ = self.relaxed[b].solve_relaxed(states[b])
            if b > 0:
                self.relaxed[b - 1].add_cut(v, pis, states[b])
                self.exact[b - 1].add_cut(v, pis, states[b])
            else:
                self.master_cuts.append((v, pis["ratings"], dict(states[0].ratings)))
            self.n_cuts += 1

    def forward_exact(self, ratings_lo: dict, floors: list | None = None):
        """A verified-candidate plan: the exact blocks in time order, ratings growing from
        ``ratings_lo`` as needed (upper bound). Returns a dict with ``ok``, ``plan``,
        ``cost_kusd``, ``n_repaired``; or ``ok = False`` and the failing ``block``."""
        pb = self.pb
        pcc, ch, dis, delta = self._empty_plan()
        rat = {n: tuple(ratings_lo[n]) for n in self.names}
        n_rep, slack = 0, 0.0
        for blk in self.exact:
            st = self.layout.state_at(blk.a, pcc, delta, ch, dis, rat)
            fl = None if floors is None or blk.last else floors[blk.index + 1].delta
            out = blk.solve_exact(st, pcc, fl)
            if out is None:
                return {"ok": False, "block": blk.index}
            n_rep += out["n_repaired"]
            slack += out["slack_mwh"]
            self._commit(blk, out, pcc, ch, dis, delta)
            rat = {n: out["ratings"][n] for n in self.names}
        plan = {n: (rat[n][0], rat[n][1], ch[n], dis[n],
                    delta[n] + pb.storages[n].soc0 * rat[n][1]) for n in self.names}
        cost = plan_cost_kusd(pb.storages, plan, pb.dt_s, pb.price_usd_per_mwh)
        return {"ok": True, "plan": plan, "cost_kusd": cost, "n_repaired": n_rep,
                "slack_mwh": slack}


def solve_blocks(pb: Problem, block_steps: int | None = None,
                 lookahead_steps: int | None = None) -> SizingResult | None:
    """Solve by the block decomposition; None when it does not apply.

    Applies to any load without a PCC history and outside slack mode whose horizon holds at
    least two blocks. Raises
    :class:`facility.errors.InfeasibleError` when no verified plan is found.
    """
    opt = pb.optimize
    if pb.p_pcc_history_mw is not None or opt.allow_slack:
        return None
    layout = make_layout(pb, block_steps, lookahead_steps)
    if layout.n_blocks < 2:
        return None
    t_start = time.perf_counter()
    dec = Decomposition(pb, layout)
    build_s = time.perf_counter() - t_start
    deadline = t_start + opt.time_limit_s
    trial = {n: (pb.storages[n].p_lo, pb.storages[n].e_lo) for n in pb.storages}
    lower, best, it, n_exact = -np.inf, None, 0, 0
    termination = "time limit reached"
    failed_block = None
    while True:
        it += 1
        states, excess = dec.forward_relaxed(trial)
        dec.backward(states)
        r_master, lb = dec.solve_master()
        stalled = lb - lower <= STALL_FRAC * max(abs(lb), 1e-9)
        lower = max(lower, lb)
        near_end = time.perf_counter() - t_start > 0.8 * opt.time_limit_s
        # an upper bound (exact pass) when the trial ratings carried the relaxed pass without
        # excess, or the lower bound has settled, or time runs out
        start = trial if excess <= EXCESS_TOL else r_master
        if excess <= EXCESS_TOL or stalled or near_end or (
                best is not None and gap_frac(best[0], lower) <= opt.max_gap_frac):
            n_exact += 1
            fw = dec.forward_exact(start, states)
            if fw["ok"]:
                bad = verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, fw["plan"],
                                  pb.margin_frac)
                if bad is None and (best is None or fw["cost_kusd"] < best[0]):
                    best = (fw["cost_kusd"], fw["plan"], fw["n_repaired"])
            else:
                failed_block = fw["block"]
        log.debug("blocks it %d: lb %.6g k$, ub %s, trial %s, %.2f s (HiGHS %.2f s)", it, lower,
                  None if best is None else f"{best[0]:.6g}", trial, time.perf_counter() - t_start,
                  dec.solve_s)
        if best is not None and gap_frac(best[0], lower) <= opt.max_gap_frac:
            termination = "optimal within max_gap_frac"
            break
        if time.perf_counter() > deadline or it >= MAX_ITERATIONS:
            break
        # in-out stabilization: the next trial lies between the master's ratings and those of
        # the best plan found (Kelley's cutting planes alone zigzag across the rating space)
        if best is None:
            trial = r_master
        else:
            trial = {n: tuple(IN_OUT * np.asarray(r_master[n]) + (1 - IN_OUT) * np.asarray(best[1][n][:2]))
                     for n in dec.names}
    if best is None:
        where = ("" if failed_block is None else
                 f"; its exact pass found no plan from block {failed_block} (t = "
                 f"{layout.starts[failed_block] * pb.dt_s:g} s) on, even with the largest ratings")
        raise InfeasibleError("the block decomposition found no verified plan within "
                              f"optimize.time_limit_s = {opt.time_limit_s:g} s{where}",
                              {"termination": termination})
    cost, plan, n_rep = best
    obj, low = 1000.0 * cost, 1000.0 * min(lower, cost)
    gap = gap_frac(obj, low)
    status = "optimal" if gap <= opt.max_gap_frac else "gap"
    if status == "gap":
        warnings.warn(f"the block decomposition stopped at optimize.time_limit_s = "
                      f"{opt.time_limit_s:g} s with a plan proven within {gap:.3g} of the "
                      f"optimum (optimize.max_gap_frac = {opt.max_gap_frac:g})", stacklevel=2)
    info = SolveInfo(status=status, termination=termination, objective_usd=obj, build_s=build_s,
                     solve_s=dec.solve_s, n_variables=max(b.hm.n_cols for b in dec.relaxed),
                     n_constraints=max(b.hm.n_rows for b in dec.relaxed), n_repaired_steps=n_rep,
                     relaxed_objective_usd=obj, method="blocks", lower_bound_usd=low,
                     gap_frac=gap)
    info.iterations = it  # outer iterations (not a field of SolveInfo)
    return pack_result(pb.load_mw, pb.storages, plan, info)
