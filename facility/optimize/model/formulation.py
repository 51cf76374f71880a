"""One LP for storage sizing and dispatch, built from small named steps in a fixed order.

``build_model`` runs: sets and parameters (:func:`~facility.optimize.model.storage_data.resolve_storage`,
in :mod:`facility.optimize.model.storage_data` with the plan's cost) -> variables
(:func:`add_storage_variables`) -> PCC power (:func:`pcc_expression`) -> one ``add_*`` per
constraint family -> objective terms (in the column costs). A storage's ratings are fixed
parameters or, with ``extendable = true``, decision variables bounded by ``[min_*, max_*]``
(one code path: a fixed rating is a column with equal bounds). Units: MW, MWh, h, k$.
Every docstring states its equation; ``docs/formulation.md`` collects them.

Sign convention: consumer frame; storage power p = p_ch - p_dis (+ = charging); the PCC power
is lossless here, P = P_load + sum over storages of p (the simulator adds network losses).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

from facility.optimize.model.lever_columns import add_lever_columns
from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.model.storage_data import (S_PER_H, StorageData, capex_factor,
                                            op_cost_coefficients, plan_cost_kusd,
                                            resolve_storage)
from facility.optimize.model.windows import add_lag_bound_rows, lag_bounds

__all__ = ["StorageData", "Model", "resolve_storage", "capex_factor", "build_model",
           "op_cost_coefficients", "plan_cost_kusd"]

#: Relative tie-break on each storage's per-step operating costs in a dispatch LP with a PCC
#: variation price (the MPC's re-plans): c_t (1 + TIE_BREAK_FRAC u_t), u_t in [0, 1) drawn
#: from a generator seeded by the storage's name and the column kind. Without it the LP has
#: many equal optima — storages of the same efficiency split a flow in any ratio, and the L1
#: variation price leaves the PCC's path between two levels free — and which one a solver
#: returns moves with its build, options and CPU (issue 40: pcc.band_energy_frac of the
#: combined_multi_job golden case 0.535 / 0.518 / 0.487 under three HiGHS option sets).
#: A generic perturbation of the costs makes the optimum a unique vertex. 1e-3 is far above
#: HiGHS' dual feasibility tolerance on the scaled objective (1e-7 of ~2^-5) and changes the
#: plan's cost by at most 0.1 % of its operating part. [frac]
TIE_BREAK_FRAC = 1e-2


def _tie_break(name: str, kind: str, n: int) -> np.ndarray:
    """``u_t`` of :data:`TIE_BREAK_FRAC` for one storage and column kind (reproducible)."""
    return np.random.default_rng(zlib.crc32(f"{name}:{kind}".encode())).random(n)


@dataclass
class Model:
    """The assembled LP and where each quantity lives in it."""

    lp: LinearProgram
    n_steps: int
    dt_s: float
    load_mw: np.ndarray
    storages: dict[str, StorageData]
    cols: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    pcc_terms: list = field(default_factory=list)
    price_kusd_per_mwh: float = 0.0
    #: weight of each step's operating cost (1 = the step itself; a reduced model weights the
    #: steps that stand for several repetitions of a period, see facility.optimize.strategies.periodic)
    op_weight: np.ndarray | None = None
    #: contiguous step ranges [start, stop) inside which the window limits apply
    window_segments: list = field(default_factory=list)
    #: steps b at which the stored energy is not carried over from step b - 1 (relaxations)
    soc_breaks: tuple = ()
    #: initial condition per storage: e_0 - s_0 Ê = offset [MWh] (0: the horizon's start),
    #: None = no row (the stored energy at the first step is linked by the caller)
    initial_offset_mwh: dict = field(default_factory=dict)
    #: rating columns shared with another model in the same LP: name -> (p_col, e_col)
    rating_cols: dict = field(default_factory=dict)
    #: constant part of the objective that no column carries (GPU lever pieces) [k$]
    objective_offset_kusd: float = 0.0
    #: the GPU levers of the model (:class:`facility.optimize.model.levers.LeverSet`) or None
    levers: object = None
    #: columns of the GPU levers per job (:mod:`facility.optimize.model.levers`)
    lever_cols: dict = field(default_factory=dict)
    #: the levers' own PCC terms (site power they add), also in ``pcc_terms``
    lever_pcc_terms: list = field(default_factory=list)
    #: relative tie-break on the storages' operating costs (:data:`TIE_BREAK_FRAC`; 0 = none)
    tie_break_frac: float = 0.0
    #: self-discharge as a bounded loss column per step (:func:`add_leak_rows`): a relaxation
    #: on group means, where the exact recursion over the fine steps has no linear form
    leak_relaxed: bool = False

    def pcc_of(self, x: np.ndarray) -> np.ndarray:
        """PCC power on the model's axis at the column values ``x``. [MW]"""
        p = self.load_mw.astype(float).copy()
        for col, coef in self.pcc_terms:
            p += coef * x[col]
        return p


def add_storage_variables(m: Model, s: StorageData) -> dict[str, np.ndarray]:
    """Variables of one storage, with the objective terms that sit on them.

    .. math::
        \\hat P \\in [P_{lo}, P_{hi}],\\ \\hat E \\in [E_{lo}, E_{hi}],\\
        0 \\le p^{ch}_t, p^{dis}_t \\le P^{own},\\ e_t \\ge 0\\ (t = 0..T)

    with :math:`P^{own}` = ``max_own_p_mw`` (what the storage's own connection carries, the
    BESS transformer; a column bound).

    Objective terms [k$]: :math:`c_P \\hat P + c_E \\hat E + \\sum_t \\Delta t_h\\,
    [\\pi ((1-\\eta_c) p^{ch}_t + (1/\\eta_d - 1) p^{dis}_t) + c_{deg} p^{dis}_t]`, the capex,
    the conversion losses at the energy price π [k$/MWh] and the degradation cost of the
    discharge throughput.
    """
    T = m.n_steps
    w = np.ones(T) if m.op_weight is None else np.asarray(m.op_weight, dtype=float)
    c_ch, c_dis = op_cost_coefficients(s, m.dt_s, m.price_kusd_per_mwh)
    if m.tie_break_frac > 0:
        c_ch = c_ch * (1.0 + m.tie_break_frac * _tie_break(s.name, "ch", T))
        c_dis = c_dis * (1.0 + m.tie_break_frac * _tie_break(s.name, "dis", T))
    lp = m.lp
    shared = m.rating_cols.get(s.name)
    c = {
        "p_rated": (np.array([shared[0]]) if shared is not None
                    else lp.add_columns(f"{s.name}:p_rated", 1, s.p_lo, s.p_hi, s.c_p)),
        "e_rated": (np.array([shared[1]]) if shared is not None
                    else lp.add_columns(f"{s.name}:e_rated", 1, s.e_lo, s.e_hi, s.c_e)),
        "ch": lp.add_columns(f"{s.name}:ch", T, 0.0, s.max_own_p_mw, w * c_ch),
        "dis": lp.add_columns(f"{s.name}:dis", T, 0.0, s.max_own_p_mw, w * c_dis),
        "e": lp.add_columns(f"{s.name}:e", T + 1, 0.0, np.inf),
    }
    m.cols[s.name] = c
    return c


def pcc_expression(m: Model) -> None:
    """PCC power balance (lossless): :math:`P_t = P^{load}_t + \\sum_s (p^{ch}_{s,t} - p^{dis}_{s,t})`.

    Kept as an affine expression (column terms + the load), substituted into every limit on
    P instead of a separate variable and equality row: ``m.pcc_terms`` is a list of
    ``(col (T,), coef (T,))``; the GPU levers (:mod:`facility.optimize.model.levers`) add theirs.
    """
    m.pcc_terms = []
    one = np.ones(m.n_steps)
    for c in m.cols.values():
        m.pcc_terms += [(c["ch"], one), (c["dis"], -one)]


def add_duration_limits(m: Model, s: StorageData) -> None:
    r"""Duration bounds of an extendable storage (``min_duration_h``, ``max_duration_h``):

    .. math::  \hat E \ge d_{min} \hat P,\qquad \hat E \le d_{max} \hat P   \quad [MWh]

    d [h]. Rows only where the storage owns its rating columns (a model sharing another's
    ratings, ``Model.rating_cols``, has them there already) and a rating is a decision; fixed
    ratings are checked by :func:`facility.config.checks.check_duration`.
    """
    if s.name in m.rating_cols or (s.p_lo == s.p_hi and s.e_lo == s.e_hi):
        return
    c = m.cols[s.name]
    if s.d_min_h is not None:
        m.lp.add_rows("min_duration", [(c["e_rated"], 1.0), (c["p_rated"], -s.d_min_h)], 0.0, np.inf,
                      t=-1, soft=False, unit="MWh")
    if s.d_max_h is not None:
        m.lp.add_rows("max_duration", [(c["e_rated"], 1.0), (c["p_rated"], -s.d_max_h)], -np.inf, 0.0,
                      t=-1, soft=False, unit="MWh")


def add_power_limits(m: Model, s: StorageData) -> None:
    """Charge plus discharge power within the rating: :math:`p^{ch}_t + p^{dis}_t \\le \\hat P`. [MW]

    A converter either charges or discharges (:math:`p^{ch}_t p^{dis}_t = 0`), so each step
    lies on one of the two segments :math:`\\{0 \\le p^{ch} \\le \\hat P, p^{dis} = 0\\}`,
    :math:`\\{p^{ch} = 0, 0 \\le p^{dis} \\le \\hat P\\}`; their convex hull is the triangle
    :math:`p^{ch} + p^{dis} \\le \\hat P`. That one row is therefore valid for every realizable
    plan (the LP stays a relaxation of the problem with complementarity) and tighter than the
    two rows :math:`p^{ch}_t \\le \\hat P,\\ p^{dis}_t \\le \\hat P` (which allow charging and
    discharging at full rating at once): it halves the power the LP can pass through the
    storage's losses while the stored energy stays put (the "resistor" of the complementarity
    repair, docs/formulation.md). Where the LP does not overlap, both forms have the same optimum.
    """
    c, T = m.cols[s.name], m.n_steps
    t = np.arange(T)
    pr = np.full(T, c["p_rated"][0])
    m.lp.add_rows("power_limit", [(c["ch"], 1.0), (c["dis"], 1.0), (pr, -1.0)], -np.inf, 0.0, t=t,
                  soft=False)


def add_network_limits(m: Model) -> None:
    """What the network carries, per step, for the sum of the storage powers (consumer frame).

    .. math::
        \\min(-C_F - L_t, 0) \\le \\sum_{s \\in U} (p^{ch}_{s,t} - p^{dis}_{s,t}) \\le \\max(C_F - L_t, 0),
        \\qquad
        \\min(-C_S - L_t, 0) \\le \\sum_{s} (p^{ch}_{s,t} - p^{dis}_{s,t}) \\le \\max(C_S - L_t, 0)

    ==========  =====  ==============================================================
    U           -      storages behind the UPSs (rack_storage, ups): the feeders carry
                       their power with the site load
    C_F         MW     feeders' capacity (``max_feeder_p_mw``; the network's headroom,
                       :func:`facility.electrical.limits.network_limits`)
    C_S         MW     site capacity (``max_site_p_mw``; substation or interconnection)
    L_t         MW     site load
    ==========  =====  ==============================================================

    The bounds never force a storage to act (a load that alone exceeds a capacity leaves the
    storage at zero headroom). Rows only where they can bind: steps with
    :math:`L_t + \\sum P_{hi} > C` (upper) or :math:`L_t - \\sum P_{hi} < -C` (lower). They are
    functions of the load alone, so the exact coarsening and the periodic reduction keep them.
    """
    data = list(m.storages.values())
    if not data:
        return
    groups = (("feeder_limit", [s for s in data if s.behind_ups], min(s.max_feeder_p_mw for s in data)),
              ("site_limit", data, min(s.max_site_p_mw for s in data)))
    load = m.load_mw
    for family, members, cap in groups:
        if not members or not np.isfinite(cap):
            continue
        reach = float(sum(min(s.p_hi, s.max_own_p_mw) for s in members))
        lever = getattr(m, "lever_pcc_terms", [])
        if lever:  # burned power and caps move the site load the network carries
            reach = np.inf
        for upper in (True, False):
            t = np.flatnonzero(load + reach > cap) if upper else np.flatnonzero(load - reach < -cap)
            if t.size == 0:
                continue
            terms = []
            for s in members:
                c = m.cols[s.name]
                terms += [(c["ch"][t], 1.0), (c["dis"][t], -1.0)]
            terms += [(col[t], np.broadcast_to(v, col.shape)[t]) for col, v in lever]
            if upper:
                m.lp.add_rows(family, terms, -np.inf, np.maximum(cap - load[t], 0.0), t=t, soft=False)
            else:
                m.lp.add_rows(family, terms, np.minimum(-cap - load[t], 0.0), np.inf, t=t, soft=False)


def add_soc_dynamics(m: Model, s: StorageData) -> None:
    """Stored energy with efficiencies and self-discharge (as :mod:`facility.storage.soc`).

    .. math::
        e_{t+1} = (1 - \\sigma \\Delta t_h)\\, e_t + \\Delta t_h (\\eta_c p^{ch}_t - p^{dis}_t / \\eta_d),
        \\qquad e_0 = s_0 \\hat E + \\delta

    (δ = ``Model.initial_offset_mwh``, 0 at the start of the horizon; a model of a later
    stretch starts from the energy the plan before it left.)

    ==========  =====  ===========================
    e_t         MWh    stored energy at the start of step t (e_T: end of horizon)
    Δt_h        h      step length
    σ           1/h    self-discharge rate
    s_0         frac   initial SoC
    ==========  =====  ===========================
    """
    c, T, h = m.cols[s.name], m.n_steps, m.dt_s / S_PER_H
    leak = m.leak_relaxed and s.sigma_per_h > 0
    a = 1.0 if leak else 1.0 - s.sigma_per_h * h
    t = np.arange(T)
    nxt = c["e"][1:].copy()
    if m.soc_breaks:
        # a break at b: step b-1 ends in its own energy column, e_b starts afresh (relaxation)
        b = np.asarray(m.soc_breaks, dtype=np.int64)
        z = m.lp.add_columns(f"{s.name}:e_break", b.size, 0.0, np.inf)
        nxt[b - 1] = z
        c["e_break"] = z
    terms = [(nxt, 1.0), (c["e"][:-1], -a), (c["ch"], -s.eta_c * h), (c["dis"], h / s.eta_d)]
    if leak:
        # the self-discharge of a group of steps as a column L_t of its own (add_leak_rows)
        c["leak"] = m.lp.add_columns(f"{s.name}:leak", T, 0.0, np.inf)
        terms.append((c["leak"], 1.0))
        add_leak_rows(m, s)
    m.lp.add_rows("soc_dynamics", terms, 0.0, 0.0, t=t, soft=False, unit="MWh")
    off = m.initial_offset_mwh.get(s.name, 0.0)
    if off is not None:
        m.lp.add_rows("initial_soc", [(c["e"][:1], 1.0), (c["e_rated"], -s.soc0)], off, off, t=0,
                      soft=False, unit="MWh")


def add_leak_rows(m: Model, s: StorageData) -> None:
    r"""Self-discharge in a relaxation on group means (``Model.leak_relaxed``): the energy a
    group of g fine steps loses, :math:`L_j = \sigma \Delta t_h \sum_{t \in j} e_t` with
    :math:`\Delta t_h` the fine step, is a column of its own in
    :math:`e_{j+1} = e_j + H (\eta_c \bar p^{ch}_j - \bar p^{dis}_j / \eta_d) - L_j`
    (H = g Δt_h, the group's length), bounded by what the SoC band allows every fine step:

    .. math::  \sigma H s_{min} \hat E \le L_j \le \sigma H s_{max} \hat E   \quad [MWh]

    Every plan of the full LP, averaged over the groups, meets them with its own L_j (its
    e_t lie in the band), so the model stays a relaxation (docs/formulation.md,
    *Self-discharge in the fast strategies*)."""
    c, T, H = m.cols[s.name], m.n_steps, m.dt_s / S_PER_H
    er = np.full(T, c["e_rated"][0])
    k = s.sigma_per_h * H
    m.lp.add_rows("leak_max", [(c["leak"], 1.0), (er, -k * s.soc_max)], -np.inf, 0.0,
                  t=np.arange(T), soft=False, unit="MWh")
    m.lp.add_rows("leak_min", [(c["leak"], 1.0), (er, -k * s.soc_min)], 0.0, np.inf,
                  t=np.arange(T), soft=False, unit="MWh")


def add_soc_bounds(m: Model, s: StorageData) -> None:
    """SoC window: :math:`s_{min} \\hat E \\le e_t \\le s_{max} \\hat E` for t = 0..T. [MWh]"""
    c, T = m.cols[s.name], m.n_steps
    e = np.concatenate([c["e"], c.get("e_break", np.zeros(0, np.int64))])
    er = np.full(e.size, c["e_rated"][0])
    t = np.concatenate([np.arange(T + 1), np.asarray(m.soc_breaks, dtype=np.int64)])
    m.lp.add_rows("soc_max", [(e, 1.0), (er, -s.soc_max)], -np.inf, 0.0, t=t, soft=False,
                  unit="MWh")
    m.lp.add_rows("soc_min", [(e, 1.0), (er, -s.soc_min)], 0.0, np.inf, t=t, soft=False,
                  unit="MWh")


def add_terminal_soc(m: Model, s: StorageData) -> None:
    """End-of-horizon policy: :math:`e_T \\ge s_0 \\hat E` (at_least_initial),
    :math:`e_T = s_0 \\hat E` (equal_initial), nothing (free). [MWh]

    :math:`s_0 \\hat E` is the stored energy at the start of the horizon (= e_0 when the model
    starts there), so a model of the horizon's last stretch states the same condition. With a
    band (receding horizon) also :math:`s^{end}_{lo} \\hat E \\le e_T \\le s^{end}_{hi} \\hat E`."""
    c = m.cols[s.name]
    if s.soc_end_lo is not None:
        m.lp.add_rows("terminal_soc_band", [(c["e"][-1:], 1.0), (c["e_rated"], -s.soc_end_lo)],
                      0.0, np.inf, t=m.n_steps, soft=True, unit="MWh")
        m.lp.add_rows("terminal_soc_band", [(c["e"][-1:], 1.0), (c["e_rated"], -s.soc_end_hi)],
                      -np.inf, 0.0, t=m.n_steps, soft=True, unit="MWh")
    if s.terminal == "free":
        return
    hi = np.inf if s.terminal == "at_least_initial" else 0.0
    m.lp.add_rows("terminal_soc", [(c["e"][-1:], 1.0), (c["e_rated"], -s.soc0)], 0.0, hi,
                  t=m.n_steps, soft=True, unit="MWh")


def add_storage_ramp(m: Model, s: StorageData) -> None:
    """Converter ramp limit: :math:`|p_t - p_{t-1}| \\le r \\Delta t` with p = p^ch - p^dis,
    r = ``max_ramp_mw_per_s`` [MW/s], Δt [s]."""
    if s.max_ramp_mw_per_s is None or m.n_steps < 2:
        return
    c = m.cols[s.name]
    r = s.max_ramp_mw_per_s * m.dt_s
    t = np.setdiff1d(np.arange(1, m.n_steps), np.asarray(m.soc_breaks, dtype=np.int64))
    m.lp.add_rows("storage_ramp", [(c["ch"][t], 1.0), (c["dis"][t], -1.0), (c["ch"][t - 1], -1.0),
                                   (c["dis"][t - 1], 1.0)], -r, r, t=t, soft=False)


def add_window_limits(m: Model, spec, p_hist_mw: np.ndarray | None, margin_frac: float = 0.0,
                      bounds: list | None = None) -> None:
    """Ramp (per second, per minute) and rolling-window swing limits on the PCC power.

    Each is a lag bound :math:`\\sigma (P_{t_2} - P_{t_1}) \\le B` for :math:`0 < t_2 - t_1 \\le k`
    (see :mod:`facility.optimize.model.windows`), linearized exactly in O(N) through sliding-window
    minima. With a PCC history (receding horizon), its samples precede t = 0 as constants.
    ``bounds`` replaces the spec's own lag bounds on this grid (a relaxation on group
    averages uses k // g).
    """
    hist = np.zeros(0) if p_hist_mw is None else np.asarray(p_hist_mw, dtype=float).ravel()
    segments = m.window_segments or [(0, m.n_steps)]
    lbs = lag_bounds(spec, m.dt_s, margin_frac) if bounds is None else bounds
    for a, b in segments:
        H = hist.size if a == 0 else 0
        const = np.concatenate([hist[:H], m.load_mw[a:b]])
        terms = [(np.concatenate([np.full(H, -1), col[a:b]]),
                  np.concatenate([np.zeros(H), np.broadcast_to(v, col.shape)[a:b]]))
                 for col, v in m.pcc_terms]
        for lb in lbs:
            add_lag_bound_rows(m.lp, lb, terms, const, H)


def add_pcc_variation(m: Model, cost_usd_per_mw: float, p_hist_mw: np.ndarray | None,
                      lag_steps: int = 1) -> None:
    """Price on the PCC power's variation (total variation; smooth receding-horizon plans).

    .. math::  P_t - P_{t-L} = d^+_t - d^-_t,\\quad d^\\pm_t \\ge 0,\\qquad
               \\text{cost } \\frac{c_V}{L} \\sum_t (d^+_t + d^-_t)

    for t = L..T-1, and for t < L against the history's samples where it reaches back that
    far (L = ``lag_steps``). c_V = ``cost_usd_per_mw`` / 1000 [k$/MW]. With L = 1 this is the
    total variation: among plans of equal loss, the PCC power as flat as the limits and the
    SoC bounds allow (of the rising paths that move the same energy, the one that rises once
    and holds has the least variation). With L > 1 it is the total variation of the mean
    over L steps (``sum |P_t - P_{t-L}| / L``): a level change of A MW costs ``c_V A`` as
    before, a waveform that repeats every L steps costs nothing (a plan may let an
    iteration ripple of that period through, as far as the limits and the loss price make
    it worth it).
    """
    if cost_usd_per_mw <= 0 or m.n_steps < 1:
        return
    T = m.n_steps
    L = max(1, int(lag_steps))
    hist = np.zeros(0) if p_hist_mw is None else np.asarray(p_hist_mw, dtype=float).ravel()
    t = np.arange(max(0, L - hist.size), T)
    if t.size == 0:
        return
    lp, c = m.lp, cost_usd_per_mw / 1000.0 / L
    dp = lp.add_columns("pcc_var_up", t.size, 0.0, np.inf, c)
    dn = lp.add_columns("pcc_var_down", t.size, 0.0, np.inf, c)
    terms = [(dp, -1.0), (dn, 1.0)]
    prev = t - L
    ip = np.maximum(prev, 0)
    for col, v in m.pcc_terms:
        v = np.broadcast_to(np.asarray(v, dtype=float), (T,))
        terms.append((col[t], v[t]))
        # steps compared with the history: its PCC is a constant (column index -1: skipped)
        terms.append((np.where(prev >= 0, col[ip], -1), -v[ip]))
    h_prev = hist[np.clip(hist.size + prev, 0, hist.size - 1)] if hist.size else np.zeros(t.size)
    load_prev = np.where(prev >= 0, m.load_mw[ip], h_prev)
    rhs = load_prev - m.load_mw[t]
    lp.add_rows("pcc_variation", terms, rhs, rhs, t=t, soft=False)


def add_dynamic_range(m: Model, spec, margin_frac: float = 0.0, *, pcc_terms=None,
                      pcc_const: np.ndarray | None = None, pcc_low_terms=None) -> None:
    """Dynamic range over the horizon: :math:`\\bar P - \\underline P \\le D` with
    :math:`\\underline P \\le P_t \\le \\bar P` (D = ``max_dynamic_range_mw`` [MW]).

    The PCC power is ``pcc_terms`` (column, coefficient) pairs plus ``pcc_const`` [MW], by
    default the model's own (``m.pcc_terms`` and the load); a model with PCC columns of its
    own (:mod:`facility.optimize.model.pcc_grid`) passes those with a zero constant, and where each
    step holds a range of PCC powers, its largest in ``pcc_terms`` and its smallest in
    ``pcc_low_terms``."""
    if spec.max_dynamic_range_mw is None:
        return
    terms = m.pcc_terms if pcc_terms is None else pcc_terms
    const = m.load_mw if pcc_const is None else np.asarray(pcc_const, dtype=float)
    n = const.size
    lp = m.lp
    top = lp.add_columns("pcc_max", 1, -np.inf, np.inf)
    bot = lp.add_columns("pcc_min", 1, -np.inf, np.inf)
    t = np.arange(n)
    lp.add_rows("window_envelope", terms + [(np.full(n, top[0]), -1.0)], -np.inf, -const,
                t=t, soft=False)
    low = terms if pcc_low_terms is None else pcc_low_terms
    lp.add_rows("window_envelope", low + [(np.full(n, bot[0]), -1.0)], -const, np.inf,
                t=t, soft=False)
    lp.add_rows("max_dynamic_range_mw", [(top, 1.0), (bot, -1.0)], -np.inf,
                spec.max_dynamic_range_mw * (1.0 - margin_frac), t=-1, soft=True)


def build_model(p_load_mw: np.ndarray, dt_s: float, storages: dict[str, StorageData], spec,
                price_usd_per_mwh: float, *, p_pcc_history_mw: np.ndarray | None = None,
                margin_frac: float = 0.0, op_weight: np.ndarray | None = None,
                window_segments: list | None = None, soc_breaks=(), lp: LinearProgram | None = None,
                rating_cols: dict | None = None, bounds: list | None = None,
                initial_offset_mwh: dict | None = None, terminal: bool = True,
                dynamic_range: bool = True, levers=None,
                pcc_variation_cost_usd_per_mw: float = 0.0,
                pcc_variation_lag_steps: int = 1) -> Model:
    """Assemble the LP in the fixed order of the named steps.

    Minimize capex + loss cost + degradation cost (see :func:`add_storage_variables`)
    subject to duration bounds, SoC dynamics, power limits, SoC bounds, terminal SoC, converter ramps, the
    network's headroom (:func:`add_network_limits`), the window limits and the dynamic range
    on the PCC power.

    ``op_weight``, ``window_segments`` and ``soc_breaks`` serve the reduced models of
    :mod:`facility.optimize.strategies.periodic` (weighted steps, windows only inside segments, stored
    energy not carried across a break). ``lp`` and ``rating_cols`` add the model into an
    existing LP sharing its rating columns, ``bounds`` replaces the spec's lag bounds,
    ``initial_offset_mwh`` shifts (float) or drops (None) the initial-SoC row per storage, and
    ``terminal`` / ``dynamic_range`` switch those rows.
    ``pcc_variation_cost_usd_per_mw`` prices the PCC variation (:func:`add_pcc_variation`,
    receding horizon) over ``pcc_variation_lag_steps``, and switches on the tie-break of the
    operating costs (:data:`TIE_BREAK_FRAC`). Left at their defaults the model is the full LP.
    ``levers`` (a :class:`facility.optimize.model.levers.LeverSet` on this axis) adds the GPU levers'
    columns and their PCC terms (:func:`facility.optimize.model.lever_columns.add_lever_columns`) before
    the limits. The spectral rows are added lazily by the solve
    (:mod:`facility.optimize.model.spectral`).
    """
    load = np.asarray(p_load_mw, dtype=float).ravel()
    m = Model(LinearProgram() if lp is None else lp, load.size, float(dt_s), load, dict(storages),
              price_kusd_per_mwh=price_usd_per_mwh / 1000.0, op_weight=op_weight,
              window_segments=list(window_segments or []), soc_breaks=tuple(int(b) for b in soc_breaks),
              initial_offset_mwh=dict(initial_offset_mwh or {}), rating_cols=dict(rating_cols or {}),
              tie_break_frac=TIE_BREAK_FRAC if pcc_variation_cost_usd_per_mw > 0 else 0.0)
    for s in storages.values():
        add_storage_variables(m, s)
    pcc_expression(m)
    if levers is not None:
        m.levers = levers
        add_lever_columns(m, levers)
    for s in storages.values():
        add_duration_limits(m, s)
        add_power_limits(m, s)
        add_soc_dynamics(m, s)
        add_soc_bounds(m, s)
        if terminal:
            add_terminal_soc(m, s)
        add_storage_ramp(m, s)
    add_network_limits(m)
    add_window_limits(m, spec, p_pcc_history_mw, margin_frac, bounds)
    if dynamic_range:
        add_dynamic_range(m, spec, margin_frac)
    add_pcc_variation(m, pcc_variation_cost_usd_per_mw, p_pcc_history_mw, pcc_variation_lag_steps)
    return m
