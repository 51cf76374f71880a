r"""Hybrid storage at single-technology speed: candidates that cannot win are pruned by a bound
before the hybrid's own solve (docs/formulation.md, *Pruning candidate technologies*).

A hybrid section (``bess.technologies = ["supercap", "lfp_1h"]``) carries one extendable unit
per candidate, ``bess.supercap``, ``bess.lfp_1h``, each bought from zero. The hybrid LP is the
LP of one candidate *a* alone plus the other units' columns and their own rows (power limit,
SoC recursion and band, duration, terminal); the rows they share with *a* are the PCC's
(balance, window limits, band rows, network capacity), where a unit's charge and discharge
enter exactly as *a*'s do.

*The bound.* Solve *a* alone (the interior strategy: a verified plan of cost U and the row
duals y of the LP whose Lagrangian gave its lower bound). Carry y to the same LP of the hybrid
(:func:`facility.optimize.strategies.box_bounds.carry_duals`: the same families and steps) and
give each other unit b's own rows the duals that make its columns cheapest to price:
:math:`\mu_t = \max(0, -\bar c^{ch}_{b,t}, -\bar c^{dis}_{b,t})` on its power-limit row
(:math:`\bar c` the reduced cost from the shared rows alone), :math:`c_{E,b}` on its
shortest-duration row, 0 elsewhere. By weak duality
(:func:`facility.optimize.solvers.ipm.lagrangian_bound`, any y, finite column boxes that hold
an optimal plan of the hybrid: those of a plan of cost U, which a's plan is) the hybrid's
optimum is at least

.. math::  L = L_a(y) + \sum_b \min\big(0,\ (c_{P,b} + d_{min,b}\,c_{E,b} - \textstyle\sum_t \mu_t)\,\hat P^{max}_b\big)

where :math:`L_a(y)` is a's part (its own bound, with the hybrid's wider PCC box). Where b's term
is 0 (a megawatt of b, at its shortest duration, costs at least what all the steps where a's
prices pay for power would earn it) b is *pruned*: no hybrid plan that uses it has a lower
bound below a's alone, and a's plan is returned with the bracket [L, U] for the hybrid. Sound
whatever the solver's accuracy: L is a weak-duality bound and U a verified plan of the hybrid
(the other units at zero). Where some b's term is negative, the hybrid is solved and the cheaper
of its plan and a's is returned, bounded by the larger of the two bounds.

*Which a.* The candidate with the least cost per MW of power at its shortest duration,
:math:`c_P + d_{min} c_E` (swing smoothing buys power first): a heuristic that only decides how
often the hybrid's own solve is skipped, never whether the result is right.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from facility.optimize.model.pcc_grid import box_template, build_grid_model, column_boxes
from facility.optimize.model.problem import Problem
from facility.optimize.model.result import SizingResult, gap_frac, pack_result
from facility.optimize.solvers.ipm import lagrangian_bound
from facility.optimize.strategies import interior
from facility.optimize.strategies.box_bounds import carry_duals

__all__ = ["hybrid_units", "applies", "first_candidate", "hybrid_bound", "solve_hybrid", "Pruning"]

#: A candidate's term of the bound counts as 0 down to this share of a's plan cost (rounding in
#: the reduced costs of columns whose exact value is 0). [-]
PRUNE_TOL_FRAC = 1e-9


@dataclass
class Pruning:
    """What the pruning did (``sizing.json`` ``candidates``)."""

    first: str = ""
    single_usd: float = float("nan")
    bound_usd: float = float("nan")
    pruned: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)
    hybrid_solved: bool = False
    single_s: float = 0.0
    hybrid_s: float = 0.0

    def as_json(self) -> dict:
        return {"first": self.first, "first_alone_usd": float(self.single_usd),
                "hybrid_lower_bound_usd": float(self.bound_usd), "pruned": dict(self.pruned),
                "kept": dict(self.kept), "hybrid_solved": bool(self.hybrid_solved),
                "first_alone_s": float(self.single_s), "hybrid_s": float(self.hybrid_s)}


def hybrid_units(pb: Problem) -> list[str]:
    """The candidate units of the problem's one hybrid section (``<section>.<technology>``,
    two or more), each extendable from zero; [] otherwise."""
    by: dict = {}
    for n, s in pb.storages.items():
        if "." in n:
            by.setdefault(s.section, []).append(n)
    sections = [u for u in by.values() if len(u) >= 2]
    if len(sections) != 1:
        return []
    units = sections[0]
    if not all(pb.storages[u].p_lo == 0 and pb.storages[u].e_lo == 0 and pb.storages[u].p_hi > 0
               for u in units):
        return []
    return units


def applies(pb: Problem) -> bool:
    """Whether the pruning runs: one hybrid section and a problem the interior strategy takes
    (long enough, no GPU levers, no PCC history), whose bound carries duals."""
    return (bool(hybrid_units(pb)) and pb.levers is None and pb.p_pcc_history_mw is None
            and pb.n_steps >= interior.MIN_STEPS and interior.applies(pb))


def power_floor_kusd_per_mw(s) -> float:
    """Least capex of one MW of a unit: c_P + d_min c_E (charged to the horizon). [k$/MW]"""
    return s.c_p + s.c_e * float(s.d_min_h or 0.0)


def first_candidate(pb: Problem, units: list[str]) -> str:
    """The candidate solved alone first (module text, *Which a*)."""
    return min(units, key=lambda u: (power_floor_kusd_per_mw(pb.storages[u]), units.index(u)))


def _block_rows(lp, family: str, n: int) -> np.ndarray | None:
    """Rows of the n-th block of a family in a LinearProgram (None: no such block)."""
    for (fam, k), start, t in lp.row_index():
        if fam == family and k == n:
            return start + np.arange(t.size)
    return None


def hybrid_bound(hyb: Problem, piece_result: dict, first: str, upper_usd: float,
                 fine_blocks: int | None = None) -> tuple[float, dict]:
    """The Lagrangian bound L of the hybrid (module text) from one bound piece of a's interior
    run (a :func:`~facility.optimize.certificates.bracket_jobs.solve_job` result with a
    ``"bound"``), with column boxes from a plan of cost ``upper_usd``. ``hyb`` lists ``first``
    before the other units. Returns (L [USD], each other unit's term of it [USD])."""
    piece = piece_result["bound"]
    gm = build_grid_model(hyb, piece_result["g"], piece_result["mode"], None, fine_blocks=fine_blocks)
    lp = gm.m.lp
    A, c, _, _, rlo, rhi = lp.assemble()
    keep = None
    if piece["keep"] is not None:   # the restriction with its long-lag block rows left out
        keep = np.ones(A.shape[0], dtype=bool)
        for a, b in gm.block_rows:
            keep[a:b] = False
    y = carry_duals(lp.row_index(), A.shape[0], piece["rows"], piece["y"])
    # as lagrangian_bound uses them: a sign without a finite bound on its side, and a row left
    # out, count 0
    if keep is not None:
        y[~keep] = 0.0
    y[(y > 0) & ~np.isfinite(rlo)] = 0.0
    y[(y < 0) & ~np.isfinite(rhi)] = 0.0
    names = list(hyb.storages)
    others = [n for n in names if n != first]
    for n in others:   # the others' own rows carried nothing (a's blocks come first): theirs now
        for fam in ("power_limit", "min_duration"):
            k = names.index(n) if fam == "power_limit" else _duration_block(hyb, gm.m, n)
            rows = _block_rows(lp, fam, k) if k is not None else None
            if rows is not None:
                y[rows] = 0.0
    z0 = c - A.T @ y
    for n in others:
        cc = gm.m.cols[n]
        mu = np.maximum(0.0, np.maximum(-z0[cc["ch"]], -z0[cc["dis"]]))
        rows = _block_rows(lp, "power_limit", names.index(n))
        y[rows] = -mu                      # row p_ch + p_dis - P <= 0: a dual <= 0
        k = _duration_block(hyb, gm.m, n)
        if k is not None:
            y[_block_rows(lp, "min_duration", k)] = c[cc["e_rated"][0]]   # E - d_min P >= 0
    lo, hi = column_boxes(box_template(gm), hyb.storages, hyb.load_mw, upper_usd, None)
    low = 1000.0 * (lagrangian_bound(A, c, y, rlo, rhi, lo, hi, keep) + gm.m.objective_offset_kusd)
    z = c - A.T @ y
    terms = {}
    for n in others:
        cols = np.concatenate([np.asarray(v, dtype=np.int64).ravel() for v in gm.m.cols[n].values()])
        with np.errstate(invalid="ignore"):
            part = np.minimum(z[cols] * lo[cols], z[cols] * hi[cols])
        terms[n] = 1000.0 * float(np.sum(np.where(z[cols] == 0.0, 0.0, part)))
    return low, terms


def _duration_block(pb: Problem, m, name: str) -> int | None:
    """Which ``min_duration`` block belongs to ``name`` (the storages with such a row, in
    order; :func:`facility.optimize.model.formulation.add_duration_limits`), None: none."""
    have = [n for n, s in pb.storages.items()
            if s.d_min_h is not None and n not in m.rating_cols and not (s.p_lo == s.p_hi and s.e_lo == s.e_hi)]
    return have.index(name) if name in have else None


def _as_hybrid(pb: Problem, res: SizingResult) -> SizingResult:
    """A single unit's result as a plan of the hybrid: the other units at zero."""
    T = pb.n_steps
    plan = {}
    for n in pb.storages:
        if n in res.p_rated_mw_opt:
            E = res.e_rated_mwh_opt[n]
            plan[n] = (res.p_rated_mw_opt[n], E, res.p_charge_mw[n], res.p_discharge_mw[n],
                       res.soc_frac[n] * E)
        else:
            plan[n] = (0.0, 0.0, np.zeros(T), np.zeros(T), np.zeros(T + 1))
    return pack_result(pb.load_mw, pb.storages, plan, replace(res.info), dt_s=pb.dt_s)


def solve_hybrid(pb: Problem) -> SizingResult | None:
    """The hybrid problem with pruning (module text): a's alone, the bound, and the hybrid's
    own solve only where some candidate's term of the bound is negative. ``info.candidates``
    says what was pruned and why. None where neither gave a verified plan (the caller's next
    strategy then solves the hybrid)."""
    t0 = time.perf_counter()
    limit = float(pb.optimize.time_limit_s)
    units = hybrid_units(pb)
    first = first_candidate(pb, units)
    others = [u for u in units if u != first]
    order = [first] + [n for n in pb.storages if n != first]
    hyb = replace(pb, storages={n: pb.storages[n] for n in order})
    single = replace(pb, storages={n: s for n, s in pb.storages.items() if n not in others})
    st = interior.InteriorStats()
    res_a = interior.solve_interior(single, stats=st)
    pr = Pruning(first=first, single_s=time.perf_counter() - t0)
    best, low, terms = None, -np.inf, {}
    if res_a is not None and res_a.info.method == "interior":
        pr.single_usd = upper = res_a.info.objective_usd
        for r in st.solves:
            if "bound" not in r or r.get("forced"):
                continue   # a bound with forced directions holds for one storage only
            lb, t = hybrid_bound(hyb, r, first, upper, st.fine_blocks)
            if lb > low:
                low, terms = lb, t
        best = _as_hybrid(pb, res_a)
    tol = PRUNE_TOL_FRAC * max(abs(pr.single_usd), 1.0) if np.isfinite(pr.single_usd) else 0.0
    floor_a = power_floor_kusd_per_mw(pb.storages[first])
    for n in others:
        term = terms.get(n)
        if term is not None and term >= -tol:
            pr.pruned[n] = (f"cannot lower the cost below {first} alone: at the prices of {first}'s "
                            f"bound a MW of {n} (capex {1000 * power_floor_kusd_per_mw(pb.storages[n]):.4g} "
                            f"USD/MW over the horizon at its shortest duration, against "
                            f"{1000 * floor_a:.4g} for {first}) earns less than it costs")
        else:
            pr.kept[n] = ("no bound from the first candidate's solve" if term is None else
                          f"may lower the cost: its term of the hybrid's bound is {term:,.4g} USD")
    pr.bound_usd = low
    if best is not None and not pr.kept:
        return _finish(best, low, pb, pr, t0)
    # some candidate may help: the hybrid's own solve, within what is left of the limit
    t1 = time.perf_counter()
    res_h = interior.solve_interior(pb.within(limit - (t1 - t0)))
    pr.hybrid_solved, pr.hybrid_s = True, time.perf_counter() - t1
    cands = [r for r in (res_h, best) if r is not None and r.info.method == "interior"]
    if not cands:
        return res_h
    out = min(cands, key=lambda r: r.info.objective_usd)
    lows = [r.info.lower_bound_usd for r in (res_h,) if r is not None and r.info.method == "interior"]
    lows.append(low)
    return _finish(out, max(lows), pb, pr, t0)


def _finish(res: SizingResult, bound_usd: float, pb: Problem, pr: Pruning, t0: float) -> SizingResult:
    """``res`` with its info completed: the lower bound ``bound_usd`` [USD] (capped at its
    objective), the gap and status it gives, the time since ``t0`` [s] and the candidates'
    verdicts ``pr``."""
    i = res.info
    i.lower_bound_usd = min(bound_usd, i.objective_usd)
    i.gap_frac = gap_frac(i.objective_usd, i.lower_bound_usd)
    i.status = "optimal" if i.gap_frac <= pb.optimize.max_gap_frac else "gap"
    i.gap_reason = "" if i.status == "optimal" else (i.gap_reason or "groups")
    i.solve_s = time.perf_counter() - t0
    i.candidates = pr.as_json()
    return res
