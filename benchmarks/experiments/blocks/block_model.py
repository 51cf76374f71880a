"""One block of the time decomposition prototype (``blocks.py`` here): its LP, its state.

A block covers steps [a, z) of the horizon. Its LP is the full formulation of
:func:`facility.optimize.formulation.build_model` on those steps, plus the rows that link it
to its neighbours through the boundary state (see :class:`State`):

===================  ======  ================================================================
column               unit    rows
===================  ======  ================================================================
δ_in, δ_out          MWh     e_0 - s_0 Ê - δ_in = 0,  e_L - s_0 Ê - δ_out = 0
z_in[j]              MW      σ P_{a+i} - z_in[j] ≤ B   for the steps i of suffix j (i + j ≤ k)
z_out[j]             MW      z_out[j] ≤ σ P_t  for t in [z - j, z) ∩ block;
                             z_out[j] ≤ z_in[j'] for the largest j' ≤ j - L (suffix reaching
                             back over the whole block)
M_in, m_in           MW      P_t - m_in ≤ D,  M_in - P_t ≤ D   (dynamic range D)
M_out, m_out         MW      M_out ≥ P_t, M_in;  m_out ≤ P_t, m_in;  M_out - m_out ≤ D
p_in, p_out          MW      |p_0 - p_in| ≤ r Δt,  p_out = p_{L-1}   (converter ramp r)
θ                    k$      θ ≥ v + π (x_out - x̄)  (cuts of the next block's value function)
===================  ======  ================================================================

The same LP serves both passes: in the *forward* pass the rows that hold the PCC history of
the window limits get the planned PCC power before a as constants (exact rows) and the
ratings are columns bounded below; in the *backward* pass those rows are switched off (bound
+∞: the summary rows stand for them, a relaxation), the state columns are fixed at the trial
state and the ratings cost nothing (the master charges them). Only bounds, costs and added
cut rows change between solves, so HiGHS restarts from the last optimal basis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from facility.optimize.formulation import build_model
from facility.optimize.lp import HighsModel
from facility.optimize.windows import lag_bounds

__all__ = ["Summary", "Layout", "State", "make_layout", "BlockModel", "suffix_lengths",
           "DEFAULT_BLOCK_STEPS"]

#: Steps per block when ``optimize.block_steps`` is not set: blocks of a few hundred steps
#: solve in a fraction of a second (HiGHS' time grows about quadratically with the length).
DEFAULT_BLOCK_STEPS = 400
#: Suffix lengths kept per lag bound: k, k/2, k/4.
N_SUFFIXES = 3
#: Penalty of one MWh missing from the terminal SoC in a block LP. [k$/MWh]
TERMINAL_PENALTY_KUSD = 1.0e4
#: Penalty of one MW (MWh) of power (energy) beyond the ratings in a relaxed block LP. [k$]
ELASTIC_PENALTY_KUSD = 1.0e4
#: Penalty of one MWh of an exact block's end state below the relaxed pass's. [k$/MWh]
FLOOR_PENALTY_KUSD = 1.0e3


def suffix_lengths(k: int, n: int = N_SUFFIXES) -> list[int]:
    """Suffix lengths j = k, ⌊k/2⌋, ⌊k/4⌋, … (n of them, each ≥ 1). [steps]"""
    out, j = [], int(k)
    while j >= 1 and len(out) < n:
        if j not in out:
            out.append(j)
        j //= 2
    return out


@dataclass(frozen=True)
class Summary:
    """One summary state of the PCC power before a boundary: z = min of σ P over the last j
    steps, standing for lag bound ``bound`` on the steps i ∈ [i0, i1) after the boundary.

    Attributes
    ----------
    bound : int
        Index of the lag bound in :attr:`Layout.bounds`.
    sign : float
        σ = +1 (rises) or -1 (falls).
    j : int
        Suffix length. [steps]
    i0, i1 : int
        Steps after the boundary whose row uses this suffix (i + j ≤ k, the largest j). [steps]
    bound_mw : float
        B. [MW]
    """

    bound: int
    sign: float
    j: int
    i0: int
    i1: int
    bound_mw: float


@dataclass
class Layout:
    """Block boundaries and the boundary state of one problem."""

    starts: np.ndarray
    bounds: list
    summaries: list
    max_k: int
    dynamic_range_mw: float | None
    ramp_names: list
    #: steps the exact models look ahead into the next block
    lookahead: int = 0

    @property
    def n_blocks(self) -> int:
        """Number of blocks."""
        return int(self.starts.size - 1)

    def summary_values(self, a: int, pcc: np.ndarray) -> np.ndarray:
        """z_j = min over [max(a - j, 0), a) of σ P for every summary (the steps before t = 0
        do not exist, so a shorter suffix is exact there). [MW]"""
        out = np.empty(len(self.summaries))
        for i, s in enumerate(self.summaries):
            seg = pcc[max(a - s.j, 0):a]
            out[i] = float(np.min(s.sign * seg)) if seg.size else np.inf
        return out

    def state_at(self, a: int, pcc, delta, ch, dis, ratings) -> "State":
        """The boundary state at step a of a plan planned up to a."""
        st = State(delta={n: float(d[a]) for n, d in delta.items()}, ratings=dict(ratings))
        if a > 0:
            st.z = self.summary_values(a, pcc)
            if self.dynamic_range_mw is not None:
                st.dr = (float(np.max(pcc[:a])), float(np.min(pcc[:a])))
            st.p_last = {n: float(ch[n][a - 1] - dis[n][a - 1]) for n in self.ramp_names}
        return st


@dataclass
class State:
    """The state of the decomposition at a block boundary.

    Attributes
    ----------
    delta : dict of name -> float
        e - s_0 Ê per storage. [MWh]
    ratings : dict of name -> (p_rated_mw, e_rated_mwh)
    z : numpy.ndarray
        Summary values, one per :class:`Summary` of the layout. [MW]
    dr : (float, float) or None
        Largest and smallest PCC power before the boundary (dynamic range). [MW]
    p_last : dict of name -> float
        Storage power of the step before the boundary (converter ramp). [MW]
    """

    delta: dict
    ratings: dict
    z: np.ndarray = field(default_factory=lambda: np.zeros(0))
    dr: tuple | None = None
    p_last: dict = field(default_factory=dict)


def make_layout(pb, block_steps: int | None = None, lookahead_steps: int | None = None) -> Layout:
    """Blocks of about ``block_steps`` steps (``optimize.block_steps``, else
    :data:`DEFAULT_BLOCK_STEPS`; a short last block is merged into the one before) and the
    summary states of the problem's lag bounds."""
    T = pb.n_steps
    L = int(block_steps or DEFAULT_BLOCK_STEPS)
    L = max(L, 2)
    n = max(T // L, 1)
    starts = np.append(np.arange(n) * L, T)
    bounds = lag_bounds(pb.spec, pb.dt_s, pb.margin_frac)
    summaries = []
    for bi, lb in enumerate(bounds):
        sg = 1.0 if lb.direction == "up" else -1.0
        J = suffix_lengths(lb.k)
        for idx, j in enumerate(J):
            i0 = 0 if idx == 0 else lb.k - J[idx - 1] + 1
            i1 = lb.k - j + 1
            summaries.append(Summary(bi, sg, j, i0, i1, lb.bound_mw))
    dr = pb.spec.max_dynamic_range_mw
    max_k = max((b.k for b in bounds), default=0)
    return Layout(starts=starts, bounds=bounds, summaries=summaries, max_k=max_k,
                  lookahead=int(lookahead_steps or min(L, max(max_k, 1))),
                  dynamic_range_mw=None if dr is None else dr * (1.0 - pb.margin_frac),
                  ramp_names=[n for n, s in pb.storages.items() if s.max_ramp_mw_per_s is not None])


class BlockModel:
    """The persistent LP of block ``b`` (see the module docstring)."""

    def __init__(self, pb, layout: Layout, b: int, exact: bool):
        self.pb, self.layout, self.index, self.exact = pb, layout, b, exact
        self.a, self.z = int(layout.starts[b]), int(layout.starts[b + 1])
        self.first, self.last = b == 0, b == layout.n_blocks - 1
        T = self.L = self.z - self.a
        # the exact model looks ahead into the next block (planned, not kept), so that its end
        # state has an exactly feasible continuation; its operating cost is the next block's
        O = min(layout.lookahead, pb.n_steps - self.z) if exact and not self.last else 0
        Tm = T + O
        self.H = min(self.a, layout.max_k) if exact else 0
        names = list(pb.storages)
        m = build_model(pb.load_mw[self.a:self.a + Tm], pb.dt_s, pb.storages, pb.spec,
                        pb.price_usd_per_mwh, margin_frac=pb.margin_frac,
                        p_pcc_history_mw=np.zeros(self.H) if self.H else None,
                        op_weight=np.r_[np.ones(T), np.zeros(O)] if O else None,
                        initial_offset_mwh={} if self.first else {n: None for n in names},
                        terminal=self.a + Tm == pb.n_steps, dynamic_range=False)
        self.m, lp = m, m.lp
        self.hist_rows = lp.history_rows
        self.rating_cols = {n: (int(c["p_rated"][0]), int(c["e_rated"][0])) for n, c in m.cols.items()}
        self.rating_cost = {n: (pb.storages[n].c_p, pb.storages[n].c_e) for n in names}
        pcc = m.pcc_terms
        load = m.load_mw

        def pcc_rows(family, steps, extra, lo, hi, sign=1.0):
            """Rows lo <= sign * P_steps + extra <= hi (P's load moved to the bounds)."""
            terms = [(col[steps], sign * v) for col, v in pcc] + extra
            lp.add_rows(family, terms, lo - sign * load[steps], hi - sign * load[steps], soft=False)

        self.d_in, self.d_out, self.p_in, self.p_out = {}, {}, {}, {}
        self.elastic = []
        for n in names:
            c, s = m.cols[n], pb.storages[n]
            if not self.first:
                self.d_in[n] = int(lp.add_columns(f"{n}:delta_in", 1, -np.inf, np.inf)[0])
                lp.add_rows("state", [(c["e"][:1], 1.0), (c["e_rated"], -s.soc0),
                                      (np.array([self.d_in[n]]), -1.0)], 0.0, 0.0, soft=False)
            if not self.last:
                self.d_out[n] = int(lp.add_columns(f"{n}:delta_out", 1, -np.inf, np.inf)[0])
                lp.add_rows("state", [(c["e"][T:T + 1], 1.0), (c["e_rated"], -s.soc0),
                                      (np.array([self.d_out[n]]), -1.0)], 0.0, 0.0, soft=False)
            if s.max_ramp_mw_per_s is not None:
                r = s.max_ramp_mw_per_s * pb.dt_s
                if not self.first:
                    self.p_in[n] = int(lp.add_columns(f"{n}:p_in", 1, -np.inf, np.inf)[0])
                    lp.add_rows("state", [(c["ch"][:1], 1.0), (c["dis"][:1], -1.0),
                                          (np.array([self.p_in[n]]), -1.0)], -r, r, soft=False)
                if not self.last:
                    self.p_out[n] = int(lp.add_columns(f"{n}:p_out", 1, -np.inf, np.inf)[0])
                    lp.add_rows("state", [(c["ch"][T - 1:T], 1.0), (c["dis"][T - 1:T], -1.0),
                                          (np.array([self.p_out[n]]), -1.0)], 0.0, 0.0, soft=False)
        # summaries of the PCC power before a (in) and before z (out)
        S = layout.summaries
        self.z_in = np.full(len(S), -1, dtype=np.int64)
        self.z_out = np.full(len(S), -1, dtype=np.int64)
        if not self.first and not exact:
            for i, s in enumerate(S):
                steps = np.arange(s.i0, min(s.i1, T))
                if steps.size == 0:
                    continue
                self.z_in[i] = lp.add_columns("z_in", 1, -np.inf, np.inf)[0]
                # elastic (penalized) like the ratings: a trial state from another relaxed
                # block need not admit a continuation
                ez = lp.add_columns("elastic:summary", 1, 0.0, np.inf, ELASTIC_PENALTY_KUSD)[0]
                self.elastic.append(int(ez))
                pcc_rows("summary", steps, [(np.full(steps.size, self.z_in[i]), -1.0),
                                            (np.full(steps.size, ez), -1.0)], -np.inf,
                         s.bound_mw, sign=s.sign)
        if not self.last:
            for i, s in enumerate(S):
                self.z_out[i] = lp.add_columns("z_out", 1, -np.inf, np.inf)[0]
                steps = np.arange(max(T - s.j, 0), T)
                pcc_rows("summary", steps, [(np.full(steps.size, self.z_out[i]), -1.0)], 0.0,
                         np.inf, sign=s.sign)
                if s.j > T and not self.first:
                    # the suffix reaches over the whole block: the largest incoming suffix
                    # of the same bound that lies inside it
                    prev = [q for q, t in enumerate(S) if t.bound == s.bound and t.j <= s.j - T
                            and self.z_in[q] >= 0]
                    if prev:
                        q = max(prev, key=lambda q: S[q].j)
                        lp.add_rows("summary", [(np.array([self.z_out[i]]), 1.0),
                                                (np.array([self.z_in[q]]), -1.0)], -np.inf, 0.0,
                                    soft=False)
        # dynamic range
        self.dr_in = self.dr_out = None
        D = layout.dynamic_range_mw
        if D is not None:
            T = Tm  # the look-ahead too must stay in the range
            steps = np.arange(T)
            M_out, m_out = (int(v) for v in lp.add_columns("dr_out", 2, -np.inf, np.inf))
            one = lambda col: np.full(T, col)  # noqa: E731
            pcc_rows("dynamic_range", steps, [(one(M_out), -1.0)], -np.inf, 0.0)
            pcc_rows("dynamic_range", steps, [(one(m_out), -1.0)], 0.0, np.inf)
            lp.add_rows("dynamic_range", [(np.array([M_out]), 1.0), (np.array([m_out]), -1.0)],
                        -np.inf, D, soft=False)
            if not self.first:
                M_in, m_in = (int(v) for v in lp.add_columns("dr_in", 2, -np.inf, np.inf))
                pcc_rows("dynamic_range", steps, [(one(m_in), -1.0)], -np.inf, D)
                pcc_rows("dynamic_range", steps, [(one(M_in), -1.0)], -D, np.inf)
                lp.add_rows("dynamic_range", [(np.array([M_out]), 1.0), (np.array([M_in]), -1.0)],
                            0.0, np.inf, soft=False)
                lp.add_rows("dynamic_range", [(np.array([m_out]), 1.0), (np.array([m_in]), -1.0)],
                            -np.inf, 0.0, soft=False)
                self.dr_in = (M_in, m_in)
            self.dr_out = (M_out, m_out)
        # elastic ratings (relaxed model): the block may exceed the ratings by ε ≥ 0 at a
        # penalty far above any capex, so it has a plan at every state and its value function
        # rises steeply where the ratings fall short (exact penalty: the optimum is unchanged)
        if not exact:
            fam = {"power_limit": -1.0, "soc_max": -1.0, "soc_min": 1.0}
            for blk in [b_ for b_ in list(lp.blocks) if b_.family in fam]:
                rows = np.arange(blk.start, blk.stop)
                col = lp.add_columns(f"elastic:{blk.family}", 1, 0.0, np.inf, ELASTIC_PENALTY_KUSD)
                lp.row_i.append(rows), lp.row_j.append(np.full(rows.size, col[0]))
                lp.row_v.append(np.full(rows.size, fam[blk.family]))
                self.elastic.append(int(col[0]))
        # an elastic terminal SoC: a myopic early forward pass may leave too little time to
        # refill; the penalty (exact above the row's dual) lets the pass go on, and the cuts
        # of the backward pass steer the next one away from such states
        self.slack = []
        for blk in [b_ for b_ in lp.blocks if b_.family == "terminal_soc"]:
            rows = np.arange(blk.start, blk.stop)
            for sign in (1.0, -1.0):
                cols = lp.add_columns("terminal_slack", rows.size, 0.0, np.inf, TERMINAL_PENALTY_KUSD)
                lp.row_i.append(rows), lp.row_j.append(cols), lp.row_v.append(np.full(rows.size, sign))
                self.slack.append(cols)
        # exact model: a soft floor on the end state, at the relaxed pass's stored energy
        # (the relaxed plan reaches the terminal SoC; a myopic exact pass that drained the
        # storage early could not)
        self.floor_row = {}
        if exact and not self.last:
            for n in names:
                u = lp.add_columns(f"{n}:floor_short", 1, 0.0, np.inf, FLOOR_PENALTY_KUSD)
                self.floor_row[n] = lp.n_rows
                lp.add_rows("floor", [(np.array([self.d_out[n]]), 1.0), (u, 1.0)], -np.inf, np.inf,
                            soft=False, unit="MWh")
        self.theta = None if self.last else int(lp.add_columns("theta", 1, 0.0, np.inf, 1.0)[0])
        self.hm = HighsModel(lp, time_limit_s=pb.optimize.time_limit_s)
        self._rating_cost_off = False
        if not exact:
            # e >= 0 is implied by the (elastic) SoC-min rows; as a column bound it would make
            # a state with too little energy infeasible instead of penalized
            for c in m.cols.values():
                self.hm.set_col_bounds(c["e"], -np.inf, np.inf)

    # ------------------------------------------------------------------ helpers
    def _fix(self, col, v) -> None:
        self.hm.set_col_bounds([col], v, v)

    def _set_state_in(self, st: State) -> None:
        for n, col in self.d_in.items():
            self._fix(col, st.delta[n])
        for n, col in self.p_in.items():
            self._fix(col, st.p_last[n])
        use = self.z_in >= 0
        if use.any() and st.z.size:
            z = np.where(np.isfinite(st.z[use]), st.z[use], 1e9)
            self.hm.set_col_bounds(self.z_in[use], z, z)
        if self.dr_in is not None:
            self._fix(self.dr_in[0], st.dr[0])
            self._fix(self.dr_in[1], st.dr[1])

    def _history(self, pcc: np.ndarray) -> None:
        for rows, u, sg in self.hist_rows:
            self.hm.set_row_bounds(rows, -np.inf, sg * pcc[self.a - self.H + u])

    def _plan(self, x):
        out = {"ch": {}, "dis": {}, "delta": {}, "ratings": {}}
        for n, c in self.m.cols.items():
            s = self.pb.storages[n]
            E = float(x[c["e_rated"][0]])
            out["ch"][n] = np.maximum(x[c["ch"]][:self.L], 0.0)
            out["dis"][n] = np.maximum(x[c["dis"]][:self.L], 0.0)
            out["delta"][n] = x[c["e"]][:self.L + 1] - s.soc0 * E
            out["ratings"][n] = (float(x[c["p_rated"][0]]), E)
        return out

    # ------------------------------------------------------------------ passes
    def solve_exact(self, st: State, pcc: np.ndarray, floor: dict | None = None, tol_mw: float = 1e-6):
        """Exact model: the planned PCC power before a as history, ratings from
        ``st.ratings`` upwards at their capex. Returns the block's plan, or None if infeasible.

        Charge/discharge overlap is repaired in place: the direction of each step is fixed to
        the sign of its net power and the block solved again (then the bounds are restored).
        """
        assert self.exact
        self._set_state_in(st)
        self._history(pcc)
        for n, row in self.floor_row.items():
            lo = -np.inf if floor is None else floor[n]
            self.hm.set_row_bounds([row], lo, np.inf)
        for n, (cp, ce) in self.rating_cols.items():
            s = self.pb.storages[n]
            p0, e0 = st.ratings[n]
            self.hm.set_col_bounds([cp, ce], [max(p0, s.p_lo), max(e0, s.e_lo)], [s.p_hi, s.e_hi])
        ok, _, _, x, _ = self.hm.solve()
        if not ok:
            return None
        zero = []
        for c in self.m.cols.values():
            over = np.minimum(x[c["ch"]], x[c["dis"]]) > tol_mw
            if over.any():
                net = x[c["ch"]] - x[c["dis"]]
                zero += [c["dis"][over & (net >= 0)], c["ch"][over & (net < 0)]]
        n_rep = int(sum(z.size for z in zero))
        if n_rep:
            cols = np.concatenate(zero)
            self.hm.set_col_bounds(cols, 0.0, 0.0)
            ok2, _, _, x2, _ = self.hm.solve()
            self.hm.set_col_bounds(cols, 0.0, np.inf)
            if ok2:
                x = x2
            else:
                n_rep = 0
        out = self._plan(x)
        out["n_repaired"] = n_rep
        out["slack_mwh"] = float(sum(x[c].sum() for c in self.slack))
        return out

    def solve_relaxed(self, st: State):
        """Relaxed model at a state (ratings fixed, no capex): (v [k$], slopes π, plan).

        v is the block's operating cost + penalties + θ of the next block's cuts; π are the
        reduced costs of the fixed state columns, the slopes of a cut of V_b at ``st``.
        """
        assert not self.exact
        self._set_state_in(st)
        if not self._rating_cost_off:
            for n, (cp, ce) in self.rating_cols.items():
                self.hm.set_col_cost([cp, ce], (0.0, 0.0))
            self._rating_cost_off = True
        for n, (cp, ce) in self.rating_cols.items():
            p0, e0 = st.ratings[n]
            self.hm.set_col_bounds([cp, ce], [p0, e0], [p0, e0])
        ok, term, v, x, rc = self.hm.solve()
        if not ok:
            raise RuntimeError(f"block {self.index}: the relaxed block LP is {term}")
        pis = {"delta": {n: float(rc[c]) for n, c in self.d_in.items()},
               "ratings": {n: (float(rc[cp]), float(rc[ce])) for n, (cp, ce) in self.rating_cols.items()},
               "z": np.where(self.z_in >= 0, rc[np.maximum(self.z_in, 0)], 0.0),
               "p": {n: float(rc[c]) for n, c in self.p_in.items()},
               "dr": None if self.dr_in is None else (float(rc[self.dr_in[0]]), float(rc[self.dr_in[1]]))}
        plan = self._plan(x)
        plan["excess"] = float(sum(x[c] for c in self.elastic)) + float(sum(x[c].sum() for c in self.slack))
        return v, pis, plan

    def add_cut(self, v: float, pis: dict, st: State) -> None:
        """θ ≥ v + π · (x_out - x̄): a cut of the next block's value function at state ``st``."""
        cols, vals = [self.theta], [1.0]
        rhs = v
        for n, col in self.d_out.items():
            cols.append(col), vals.append(-pis["delta"][n])
            rhs -= pis["delta"][n] * st.delta[n]
        for n, (cp, ce) in self.rating_cols.items():
            pp, pe = pis["ratings"][n]
            rp, re = st.ratings[n]
            cols += [cp, ce]
            vals += [-pp, -pe]
            rhs -= pp * rp + pe * re
        for i, col in enumerate(self.z_out):
            pz = float(pis["z"][i]) if i < len(pis["z"]) else 0.0
            if col >= 0 and pz != 0.0 and np.isfinite(st.z[i]):
                cols.append(int(col)), vals.append(-pz)
                rhs -= pz * st.z[i]
        for n, col in self.p_out.items():
            cols.append(col), vals.append(-pis["p"][n])
            rhs -= pis["p"][n] * st.p_last[n]
        if self.dr_out is not None and pis["dr"] is not None:
            for col, pv, xv in zip(self.dr_out, pis["dr"], st.dr):
                cols.append(col), vals.append(-pv)
                rhs -= pv * xv
        self.hm.add_row(cols, vals, rhs, np.inf)
