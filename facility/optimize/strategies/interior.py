r"""Strategy ``interior``: long horizons whose load does not repeat, by an interior-point method
bracketed by a rigorous lower bound (docs/formulation.md, *Long horizons whose load does not
repeat*).

*Why not the simplex.* The stored energy is a chain over the whole horizon, so the rows of
the basis inverse are dense and every simplex iteration costs O(T); the iterations grow with T
too (12,000 jittered steps at 0.1 s: 140 s; 36,000: no answer in 600 s). An interior-point
method factors the KKT system of the LP instead; its window rows couple steps at most k apart
and the chain is banded, so a fill-reducing ordering keeps the factor about N·k² large and
each iteration about linear in T (PIQP on the same LP: 3,000 steps 1.3 s, 12,000 5 s, 36,000
21 s).

*The two LPs* (:mod:`facility.optimize.model.pcc_grid`): the restriction, every plan of which is a
plan of the full LP (PCC power as columns, constant over groups of g steps; g = 1 at 0.1 s,
4 at 10 ms), and the relaxation, whose optimum is at most the full LP's (group means; at g = 1
the LP whose long-lag block rows cover only pairs within the window).

*The plan* (:func:`realize`): the restriction's interior point charges and discharges at once
by a little everywhere (it costs only losses, below the solver's tolerance). Per storage the
net power less a constant δ (which moves no window limit) is split into charge or discharge;
netting only adds stored energy, and where the SoC leaves its band the energy rating grows by
ΔÊ (the trajectory moves by a^t s₀ΔÊ, a = 1 − σΔt_h, the band by s_min ΔÊ and s_max ΔÊ). Where the LP's
optimum burns energy on purpose (a "resistor" across a job start) the overlapping steps'
directions are fixed to the sign of their net power and the restriction is solved again
(:data:`REPAIR_ROUNDS`). The cheapest plan that passes
:func:`facility.optimize.certificates.verify.verify_plan` is the upper bound.

*The lower bound* is :func:`facility.optimize.solvers.ipm.lagrangian_bound` with the duals of the
restriction (g = 1, its block rows left out) or of the relaxation, and column boxes that
contain an optimal solution (:func:`~facility.optimize.model.pcc_grid.column_boxes`): weak duality,
valid whatever the solver's accuracy, and a bound of the realizable optimum too.
Where the LP's optimum burns energy in that resistor, the relaxation is solved again with the
directions the window limits force on every plan at most as costly as the best one
(:mod:`facility.optimize.certificates.directions`): a bound of the realizable optimum, above the LP's.

*Processes.* PIQP holds the GIL and has no time limit: from :data:`PROCESS_MIN_STEPS` on, the
solves run in fresh interpreters (:func:`~facility.optimize.certificates.bracket_jobs.run_solves`, both
LPs at once at g > 1) that are
stopped at ``optimize.time_limit_s``; inside a worker process (a sweep's process pool or Dask
workers, which fill the cores already) or on one core they run in the calling process.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from facility.optimize.certificates.bracket_jobs import (BOUND_IPM_OPTIONS, bound_at, rating_bound_at, run_solves,
                                            solve_job)
from facility.optimize.certificates.directions import (applies as directions_apply, cost_rating_bound_mw,
                                          forced_directions, merge_directions, n_forced,
                                          on_groups)
from facility.errors import SolverTimeLimit
from facility.optimize.certificates.fallback import stopped_strategy
from facility.optimize.strategies.interior_bands import BandCuts
from facility.optimize.model.pcc_grid import (FINE_BLOCKS_PER_WINDOW, MIN_REFINED_GROUP, finer_group,
                                        group_for)
from facility.optimize.model.problem import Problem
from facility.optimize.certificates.realize import cost_usd, overlap_fix, realize
from facility.optimize.model.result import SizingResult, SolveInfo, gap_frac, pack_result
from facility.optimize.model.windows import lag_bounds

__all__ = ["bound_at", "rating_bound_at", "direction_lower_bound_usd", "MIN_STEPS", "REPAIR_ROUNDS", "applies", "realize", "run_solves", "solve_interior",
           "InteriorStats"]

#: Shorter horizons go to the full LP (HiGHS' simplex: a vertex, fast there).
MIN_STEPS = 2000
#: The same for a dispatch (no extendable rating): its objective is the conversion losses
#: alone, a few USD, against which the bound from an interior point's duals is loose; the
#: simplex proves it exactly and is quick enough up to here.
DISPATCH_MIN_STEPS = 6000
#: Horizons from this length solve in a child process (stoppable at the time limit).
PROCESS_MIN_STEPS = 20000
#: Direction-fixing re-solves of the restriction for simultaneous charge and discharge.
REPAIR_ROUNDS = 2
#: With the forced directions in the bound (:mod:`facility.optimize.certificates.directions`), its
#: relaxation counts as free of the resistor while it overlaps by more than
#: :data:`~facility.optimize.certificates.bracket_jobs.RESISTOR_MW` on at most this share of its steps (the
#: benchmark's 5-min start/stop load: 30 of 3,000; its 20-min one: 3,646 of 12,000, 607 of
#: them by more than 1 MW in the first two minutes, where the job start's pre-ramp meets a
#: storage at 90 % SoC); refining the blocks or groups may then still narrow the bracket. [-]
RESISTOR_STEPS_FRAC = 0.02
#: A repair round runs while realizing the latest plan cost at least this share of
#: ``optimize.max_gap_frac`` × the plan's cost above its LP optimum (and more than the bound's
#: side of the bracket, when that can still be narrowed).
REPAIR_GAP_SHARE = 0.5


def applies(pb: Problem) -> bool:
    """Whether the strategy's bracket is proven for this problem (module text): sizing or
    dispatch without PCC history or a variation price, and an initial SoC inside the
    band (self-discharge σ > 0 too: the restriction keeps the exact recursion, the relaxation
    on groups a bounded loss column, :func:`facility.optimize.model.formulation.add_leak_rows`,
    and the realized plan's growth follows the decay, :func:`~facility.optimize.certificates.realize.decay`) (band limits are rows of the restriction, :mod:`~facility.optimize.model.pcc_grid`). GPU
    levers only on groups of one step (the LP is then the full one with its PCC as columns;
    their data are not averaged) and without the cooling lag."""
    return (pb.p_pcc_history_mw is None
            and (pb.levers is None or (not pb.levers.lagged and group_for(pb) == 1))
            and pb.pcc_variation_cost_usd_per_mw <= 0 and bool(pb.storages)
            and all(s.soc_min <= s.soc0 <= s.soc_max for s in pb.storages.values()))


@dataclass
class InteriorStats:
    """What the strategy did (for ``SolveInfo`` and the benchmark)."""

    group: int = 1
    solves: list = field(default_factory=list)
    n_repair_rounds: int = 0
    n_repaired_steps: int = 0
    grown_e_mwh: dict = field(default_factory=dict)
    lower_from: str = ""
    n_spectral_bins: int = 0
    n_spectral_rounds: int = 0
    fine_blocks: int = FINE_BLOCKS_PER_WINDOW  # long-lag blocks per window at transients (the run uses it)
    n_forced: int = 0  # directions the window limits force (the bound's fixes, :mod:`.directions`)
    rating_upper_mw: float = float("nan")  # the P̂^max they come from [MW]


def _longest_lag_steps(pb: Problem) -> int:
    """Steps of the longest lag bound (the per-minute limit's window). [steps]"""
    return max((b.k for b in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac)), default=0)


#: A bracket with long-lag blocks half as long at transients costs about this many times the
#: last one (measured on a 5-min start/stop load with GPU levers: 60 -> 120 blocks per window,
#: 6.2 s -> 11.8 s per piece). [-]
BLOCK_REFINE_COST = 2.0
#: Blocks per window at transients after refinement, at most: one halving. A second one (240)
#: on a 12,000-step start/stop piece with levers took minutes per solve for 1.6 M rows.
MAX_FINE_BLOCKS = 2 * FINE_BLOCKS_PER_WINDOW


# ----------------------------------------------------------------------------- solves
def direction_lower_bound_usd(pb: Problem, upper_usd: float) -> tuple[float, dict | None]:
    """A lower bound of the problem with complementarity from the directions the window
    limits force (:mod:`facility.optimize.certificates.directions`), given a realizable plan of cost
    ``upper_usd``: the relaxation on steps of one (its long-lag block rows within the window)
    bounds P̂ within that cost, and again with the directions that P̂^max forces; both solved
    in this process to :data:`BOUND_IPM_OPTIONS`, priced by weak duality. For the full LP's
    plan (:func:`facility.optimize.driver.api.solve_on_grid`), whose own bound, the LP optimum, has
    the resistor in it. -inf where the
    directions do not apply or a solve did not give duals. Returns (bound [USD], the
    directions: ``{storage: {"ch"|"dis": bool (T,)}}`` or None)."""
    if not (applies(pb) and directions_apply(pb)) or not np.isfinite(upper_usd):
        return -np.inf, None
    run = _Search(pb, InteriorStats(), True)
    run.cost = float(upper_usd)  # the plan's cost is all the bound needs
    found = run.direction_bound(1)
    return (max(run.lows) if found else -np.inf), run.forced


# ----------------------------------------------------------------------------- strategy
class _Search:
    """State of one strategy run: the best verified plan, every lower bound found, the clock."""

    def __init__(self, pb: Problem, st: InteriorStats, local: bool):
        self.pb, self.st, self.local = pb, st, local
        self.t0 = time.perf_counter()
        self.limit = float(pb.optimize.time_limit_s)
        self.target = float(pb.optimize.max_gap_frac)
        self.plan, self.cost, self.why = None, np.inf, "the upper LP did not solve"
        self.lever_plan = None
        # every plan pays the least ratings' capex (the levers' part may be priced below 0 by
        # the slowdown chords' slopes: then no bound before the first solve's)
        self.lows = [1000.0 * sum(s.c_p * s.p_lo + s.c_e * s.e_lo for s in pb.storages.values())
                     if pb.levers is None else -np.inf]
        self.n_rep = 0
        # directions every plan at most as costly as the best one has (:meth:`direction_bound`)
        # and the share of its steps where their relaxation still overlaps (None: not solved)
        self.forced, self.dir_tried, self.dir_overlap_frac = None, False, None
        # band limits: the bins and directions the restrictions carry (:mod:`.interior_bands`)
        self.bands = BandCuts(pb, st) if pb.has_spectral else None

    def more_band_rows(self, res) -> bool:
        """After a restriction's solve: whether its plan needs more band rows (added)."""
        return self.bands is not None and self.bands.more_rows(res)

    def bands_bind(self) -> bool:
        """Whether a band limit binds the best plan."""
        return self.bands is not None and self.plan is not None and self.bands.bind(self.plan, self.lever_plan)

    def band_dirs(self) -> dict | None:
        """The band rows' directions for a solve job (picklable; None without any)."""
        return None if self.bands is None else self.bands.directions()

    def restrict(self, g: int, zero: dict | None, drop_blocks: bool,
                 also: list = ()) -> tuple[list, list]:
        """Solve the restriction (with ``also``'s jobs beside its first solve), again with
        more band rows while its plan needs them (time permitting). Returns the results, the
        restriction's last first, and every bound piece found."""
        jobs = [self.job("restrict", g, zero, drop_blocks)]
        results = self.solve(jobs + list(also))
        pieces = [r["bound"] for r in results if r is not None and "bound" in r]
        while self.left() > 0 and self.more_band_rows(results[0]):
            r = self.solve([self.job("restrict", g, zero, drop_blocks)])[0]
            results[0] = r
            if r is not None and "bound" in r:
                pieces.append(r["bound"])
        return results, pieces

    def job(self, mode: str, g: int, zero: dict | None = None, drop_blocks: bool = False, *,
            max_rating: tuple | None = None, forced: dict | None = None) -> tuple:
        """A solve job of :func:`run_solves` for a bracketing LP of this run: its band rows,
        long-lag blocks and the directions the limits force (:meth:`direction_bound`), once
        known. With those directions both LPs are solved to PIQP's tolerances for a bound,
        :data:`BOUND_IPM_OPTIONS`: at 1e-8 the 5-min start/stop load's relaxation stopped at
        the iteration cap, at 1e-6 it converges in 75 iterations to a bound 30 USD higher;
        its restriction took 137 iterations (17.3 s) at 1e-8, 73 (10.4 s) at 1e-6, and its
        plan is realized and checked on the fine grid either way. In a relaxation they narrow
        the column boxes too; in a restriction they are direction fixes like a repair's
        (every plan of it is still a plan of the problem). They speed the restrictions that
        follow the bound (5-min start/stop: the repair round 6.9 → 2.4 s, the refined one
        12.3 → 9.5 s, the same plan)."""
        dirs = self.band_dirs() if mode == "restrict" or g == 1 else None
        fixed, options = None, None
        if mode == "relax":  # a bound alone: weak duality holds at any accuracy
            fixed = on_groups(self.forced if forced is None else forced, g)
            options = BOUND_IPM_OPTIONS if fixed else None
        elif self.forced is not None:  # storage columns on the fine steps: the masks as they are
            zero = merge_directions(zero, self.forced)
            options = BOUND_IPM_OPTIONS
        return (solve_job, (self.pb, mode, g, zero, drop_blocks, dirs, options, self.st.fine_blocks,
                             fixed, max_rating))

    def direction_bound(self, g: int) -> bool:
        """Raise the bound with the directions the window limits force
        (:mod:`facility.optimize.certificates.directions`): :meth:`direction_fixes`, then the relaxation
        with them (:meth:`take_direction_bound`). Later relaxations and restrictions carry the
        directions too (every plan at most as costly as the best has them, :meth:`job`).
        Returns whether a bound was added."""
        return self.direction_fixes(g) and self.take_direction_bound(self.solve([self.job("relax", g)])[0], g)

    def direction_fixes(self, g: int) -> bool:
        """The directions the window limits force on every plan at most as costly as the best
        one: P̂^max first from the plan's cost alone, then the relaxation's largest P̂ within
        that cost (with the first directions fixed); the directions that P̂^max forces join
        ``self.forced``. Returns whether any is forced and time is left for their bound."""
        pb, st = self.pb, self.st
        (name, s), = pb.storages.items()
        p_max = cost_rating_bound_mw(s, self.cost)
        fixed = forced_directions(pb, p_max)
        if n_forced(fixed) == 0:
            return False
        res = self.solve([self.job("relax", g, max_rating=(name, self.cost), forced=fixed)])[0]
        if res is not None and "rating" in res:
            p_max = min(p_max, rating_bound_at(res["rating"], pb))
            fixed = forced_directions(pb, p_max)
        st.rating_upper_mw, st.n_forced = float(p_max), n_forced(fixed)
        self.forced = merge_directions(self.forced, fixed)
        return self.left() > 0

    def take_direction_bound(self, res, g: int) -> bool:
        """The Lagrangian bound of a solved relaxation with the forced directions joins the
        lows (``res`` None or without duals: nothing). Returns whether it did."""
        if res is None or "bound" not in res:
            return False
        pb, st = self.pb, self.st
        self.lows.append(bound_at(res["bound"], pb, self.cost))
        self.dir_overlap_frac = sum(res.get("overlap_steps", {}).values()) / max(pb.n_steps // g, 1)
        st.lower_from = (f"relaxation on groups of {g}" if g > 1 else "relaxation") + (
            f", {st.n_forced} directions forced by the limits (P̂ ≤ {st.rating_upper_mw:.4g} MW)")
        return True

    def left(self) -> float:
        return self.limit - (time.perf_counter() - self.t0)

    def gap(self) -> float:
        return gap_frac(self.cost, max(self.lows))

    def solve(self, jobs: list) -> list:
        res = run_solves(jobs, self.left(), in_process=self.local)
        self.st.solves += [r for r in res if r is not None]
        return res

    def absorb(self, res):
        """Realize a solved restriction's plan, keep the cheaper one; return its raw plan and
        what realizing it cost above its own LP optimum [USD]."""
        if res is None:
            return None, np.inf
        if "plan" not in res:
            self.why = f"the upper LP: {res['termination']}"
            return None, np.inf
        lever_plan = res.get("lever_plan")
        cand, grown, bad = realize(self.pb, res["plan"], lever_plan)
        if cand is None:
            self.why = bad
            return res["plan"], np.inf
        c = cost_usd(self.pb, cand, lever_plan)
        if c < self.cost:
            self.plan, self.cost, self.st.grown_e_mwh = cand, c, grown
            self.lever_plan = lever_plan
        return res["plan"], c - 1000.0 * res["objective_kusd"]

    def bracket(self, g: int) -> float:
        """Restriction and relaxation on groups of g, repaired and bounded while the gap is
        above the target and time is left (module text); the directions the limits force
        (:meth:`direction_bound`) once the LP's resistor showed. Returns the restriction's LP
        optimum [USD] (inf when it did not solve): the first one's, or with those directions
        in the bound, the latest (repaired or directed) one's."""
        pb, st = self.pb, self.st
        also = [self.job("relax", g)] if g > 1 else []
        results, pieces = self.restrict(g, None, g == 1, also)
        raw, loss = self.absorb(results[0])
        first_loss = loss
        lp_upper = 1000.0 * results[0]["objective_kusd"] if raw is not None else np.inf
        lp_latest = lp_upper

        def reference() -> float:
            # with the forced directions in the bound, the resistor is (mostly) out of it: what
            # is left lies between the latest (repaired) restriction and the bound
            return lp_latest if self.dir_overlap_frac is not None else lp_upper

        if self.dir_overlap_frac is None:
            st.lower_from = ("restriction duals, long-lag block rows left out" if g == 1
                             else f"relaxation on groups of {g}")
        can_relax = g == 1 and results[0] is not None and results[0].get("has_blocks", False)
        zero = None

        def repair(fix: dict, n_fixed: int, also: list = ()) -> list:
            # one repair round: the restriction with the overlapping steps' directions fixed
            # (``also``'s jobs beside it); the results, the restriction's first
            nonlocal zero
            zero, self.n_rep, st.n_repair_rounds = fix, n_fixed, st.n_repair_rounds + 1
            return self.restrict(g, fix, False, also)[0]

        def take(r) -> None:
            # a repaired restriction's plan realized, its LP optimum the latest
            nonlocal raw, loss, lp_latest
            raw, loss = self.absorb(r)
            if raw is not None:
                lp_latest = 1000.0 * r["objective_kusd"]

        while self.plan is not None:
            self.lows += [bound_at(piece, pb, self.cost) for piece in pieces]
            pieces = []
            cost, low = self.cost, max(self.lows)
            half_target_usd = REPAIR_GAP_SHARE * self.target * cost
            if self.gap() <= self.target or self.left() <= 0:
                break
            can_repair = raw is not None and st.n_repair_rounds < REPAIR_ROUNDS
            # the wider side of the bracket first: the plan's realization (netting, resistor)
            # while the latest plan spent half the target or more on it, else the bound
            # (no relaxation raises the bound above the restriction's LP optimum: its solve
            # pays only while the bound lies half the target or more below that)
            # (with the forced directions in the bound it may pass the first restriction's
            # optimum: then the latest, repaired one's is what a relaxation can reach)
            ref = reference()
            relax_pays = can_relax and ref - low >= half_target_usd
            repair_pays = loss >= half_target_usd and (loss >= ref - low or not relax_pays)
            # the resistor keeps the bracket open where the realized plan costs more than the
            # LP's optimum by more than the bound lies below it: the forced directions next
            # (after the repair rounds that pay: each lowers the plan's cost, and P̂^max with it)
            directions_pay = (not self.dir_tried and directions_apply(pb)
                              and first_loss >= half_target_usd)
            if directions_pay and not (can_repair and repair_pays):
                self.dir_tried = True
                if not self.direction_fixes(g):
                    continue
                # after the bound no relaxation pays (the one it solves carries its block
                # rows), so a repair round follows where the plan's realization costs half the
                # target or more: with the solves in processes it runs beside the bound's
                # relaxation (the same two jobs as one after the other, at once)
                fix, n_fixed = (overlap_fix(raw, zero) if not self.local and can_repair
                                and loss >= half_target_usd else (None, 0))
                if n_fixed:
                    repaired, bound = repair(fix, n_fixed, [self.job("relax", g)])
                else:
                    repaired, bound = None, self.solve([self.job("relax", g)])[0]
                if self.take_direction_bound(bound, g):
                    can_relax = False
                if repaired is not None:
                    take(repaired)
                continue
            if can_repair and repair_pays:
                fix, n_fixed = overlap_fix(raw, zero)
                if n_fixed == 0:
                    raw = None
                    continue
                take(repair(fix, n_fixed)[0])
            elif relax_pays:
                can_relax = False
                res = self.solve([self.job("relax", 1)])[0]
                if res is not None and "bound" in res:
                    pieces = [res["bound"]]
                    st.lower_from = "relaxation (long-lag block rows within the window)"
            else:
                break
        return reference()

    def resistor_open(self, lp_upper: float) -> bool:
        """Whether the LP's resistor, not the groups or blocks, keeps the bracket open: the
        plan's realization costs more than the bound lies below ``lp_upper`` (what
        :meth:`bracket` returns) or, with the forced directions in the bound, their
        relaxation still charges and discharges at once on more than
        :data:`RESISTOR_STEPS_FRAC` of its steps."""
        low = max(self.lows)
        if self.dir_overlap_frac is not None and self.dir_overlap_frac > RESISTOR_STEPS_FRAC:
            return True
        return self.cost - lp_upper >= lp_upper - low


def solve_interior(pb: Problem, *, min_steps: int | None = None, in_process: bool | None = None,
                   stats: InteriorStats | None = None) -> SizingResult | None:
    """Strategy ``interior`` (module text).

    On groups (a fine step) whose bracket stays wider than ``optimize.max_gap_frac``, the
    groups shrink (:func:`~facility.optimize.model.pcc_grid.finer_group`) while the time left
    covers the next bracket (its cost grows about as g⁻³); every plan and bound found counts. On steps of one, where the
    per-minute limit's blocks alone keep it open, those blocks are halved once at transients.

    Returns
    -------
    SizingResult or None
        None when it does not apply (or is shorter than ``min_steps``, default
        :data:`MIN_STEPS`) or found no verified plan with time left; else
        ``info.method = "interior"`` with ``lower_bound_usd`` and ``gap_frac``, ``status``
        ``"optimal"`` within ``optimize.max_gap_frac``, else ``"gap"``. When
        ``optimize.time_limit_s`` ran out before any verified plan: the fallback plan of
        :func:`facility.optimize.certificates.fallback.best_effort` with its proven gap (``method =
        "follower"``), not the full LP, which is larger and would only stop again.

    Raises
    ------
    SolverTimeLimit
        At the time limit without a plan, with GPU levers (the lever search decides), or when
        the fallback plan breaks a limit too (exit 3).
    """
    sizing = any(s.p_hi > s.p_lo or s.e_hi > s.e_lo for s in pb.storages.values())
    floor = MIN_STEPS if sizing else DISPATCH_MIN_STEPS
    if pb.n_steps < (floor if min_steps is None else min_steps) or not applies(pb):
        return None
    st = stats if stats is not None else InteriorStats()
    run = _Search(pb, st, in_process if in_process is not None else pb.n_steps < PROCESS_MIN_STEPS)
    g = group_for(pb)
    while True:
        st.group = g
        t_g = time.perf_counter()
        lp_upper = run.bracket(g)
        if run.plan is None or run.gap() <= run.target:
            break
        if run.resistor_open(lp_upper):
            break  # the plan's realization, not the groups, keeps the bracket open
        if g <= MIN_REFINED_GROUP:
            # on steps of one a long window limit's blocks keep it open: halve the blocks at
            # transients (their pair rows double) while they are longer than a step, if every
            # solve so far converged (an unconverged one says nothing of where the gap lies,
            # and a finer LP is slower still: a 12,000-step start/stop piece with levers whose
            # relaxation stopped at PIQP's iteration cap took minutes per refined solve)
            if (g > 1 or not st.solves or not st.solves[0].get("has_blocks")
                    or any(r.get("status") != "ok" for r in st.solves)
                    or st.fine_blocks * 2 > min(MAX_FINE_BLOCKS, _longest_lag_steps(pb))
                    or run.left() < (time.perf_counter() - t_g) * BLOCK_REFINE_COST):
                break
            st.fine_blocks *= 2
            continue
        finer = finer_group(pb, g)
        if run.left() < (time.perf_counter() - t_g) * (g / finer) ** 3:
            break
        g = finer
    st.n_repaired_steps = run.n_rep
    plan, cost = run.plan, run.cost
    if plan is None:
        if run.left() <= 0:  # not the full LP: at an hour its build alone outlasts the limit
            low = max(run.lows)
            stop = SolverTimeLimit(f"optimize.time_limit_s = {run.limit:g} s was reached before "
                                   f"the interior strategy found a verified plan ({run.why}).",
                                   {"termination": "Time limit reached"},
                                   lower_bound_usd=low if np.isfinite(low) else None)
            return stopped_strategy(pb, stop, solve_s=time.perf_counter() - run.t0)
        warnings.warn(f"strategy interior found no verified plan ({run.why}); trying the next "
                      "strategy", stacklevel=3)
        return None
    low = min(max(run.lows), cost)
    gap = gap_frac(cost, low)
    reason = ""
    if gap > run.target:
        reason = ("time" if run.left() <= 0 else "dispatch" if not sizing else
                  "complementarity" if run.resistor_open(lp_upper) else
                  ("spectral" if run.bands_bind() else "groups") if g > 1 else "long_lag")
    first = st.solves[0]
    info = SolveInfo(status="optimal" if gap <= run.target else "gap",
                     termination=f"interior ({first['termination']})", objective_usd=cost,
                     build_s=sum(r.get("build_s", 0.0) for r in st.solves),
                     solve_s=time.perf_counter() - run.t0, n_variables=first.get("n_variables", 0),
                     n_constraints=first.get("n_constraints", 0), n_repaired_steps=run.n_rep,
                     relaxed_objective_usd=1000.0 * first.get("objective_kusd", np.nan),
                     method="interior", lower_bound_usd=low, gap_frac=gap, step_factor=1,
                     gap_reason=reason, n_forced_steps=st.n_forced if run.dir_overlap_frac is not None else 0,
                     n_spectral_bins=st.n_spectral_bins,
                     n_spectral_rounds=st.n_spectral_rounds)
    return pack_result(pb.load_mw, pb.storages, plan, info, levers=pb.levers,
                       lever_plan=run.lever_plan, dt_s=pb.dt_s)
