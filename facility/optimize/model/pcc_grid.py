r"""LPs with the PCC power as columns of their own, on a grid of groups of g steps.

The strategy :mod:`facility.optimize.strategies.interior` brackets the full LP between two LPs that an
interior-point method solves in about linear time:

* **the restriction** (:func:`build_grid_model` with ``mode="restrict"``): the storages on the
  problem's own steps, the PCC power one column Q_j per group of g steps, constant over the
  group, tied to them by

  .. math::  \sum_s (p^{ch}_{s,t} - p^{dis}_{s,t}) - Q_{\lfloor t/g \rfloor} = -P^{load}_t ;

  a window limit of k steps becomes a lag bound of ⌈k/g⌉ groups on Q. For a PCC power that is
  constant over groups this is exact: steps t₁ < t₂ at most k apart lie in groups at most
  ⌈k/g⌉ apart, and any two groups that close hold such a pair. Every plan of this LP is a
  plan of the full LP, so its optimum is an upper bound (g = 1: the full LP itself). Without
  band rows, the groups where the load moves get a PCC range [D_j, Q_j] instead of one Q_j
  (:func:`ranged_groups`), so the PCC power may follow the load there;
* **the relaxation** (``mode="relax"``): every per-step column averaged over the groups (the
  load too), the lag bound of k steps kept as ⌊k/g⌋ groups with the same bound, the
  network rows and, where T is not a multiple of g, the last partial group and the terminal row
  left out (self-discharge, σ > 0, as a bounded loss column per group,
  :func:`~facility.optimize.model.formulation.add_leak_rows`). Any plan of the full LP,
  averaged, is a plan of it at the same cost
  (the proof of :func:`facility.optimize.certificates.fallback.averaged_lower_bound_usd`), so its optimum is
  a lower bound (g = 1: the full LP). Rating rows give back what the group means average
  away: the steps where the load moves within a group, and each group's extreme-load step
  against its neighbours (:mod:`facility.optimize.model.group_rows`).

**Band limits** (``max_band_peak_mw``, ``[[bands]]``): the restriction carries the polygon
rows of :mod:`facility.optimize.model.spectral` for the bins and directions it is given, in its Q
columns: bin k of a PCC power held over groups is exactly Σ_j Q_j Σ_{t in group j}
e^{−2πjkt/N} (:func:`~facility.optimize.model.spectral.grouped_phasor`), so every plan still meets
them as ``facility.metrics`` measures them. The relaxation carries them at g = 1 only (then
they are rows of the full LP); averaged over groups a bin mixes with its aliases, which no
row in the group means can bound, so on groups it leaves them out (fewer rows: still a
relaxation).

Lag bounds longer than :data:`K_EXACT` PCC steps (the per-minute limit) are written as block
rows (:func:`facility.optimize.model.windows.add_block_lag_rows`), ``"restrict"`` in the
restriction and ``"relax"`` in the relaxation, so both stay what they claim to be.

:func:`column_boxes` gives every column a finite box that contains an optimal solution, for
the rigorous bound of :func:`facility.optimize.solvers.ipm.lagrangian_bound`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from facility.optimize.model.formulation import (Model, add_dynamic_range, add_network_limits,
                                           add_duration_limits, add_power_limits, add_soc_bounds,
                                           add_soc_dynamics,
                                           add_storage_ramp, add_storage_variables,
                                           add_terminal_soc, pcc_expression)
from facility.optimize.model.group_rows import (add_group_power_rows, add_neighbour_power_rows,
                                          within_group_range_mw)
from facility.optimize.model.lever_columns import add_lever_columns
from facility.optimize.model.linear_program import LinearProgram
from facility.optimize.model.problem import Problem
from facility.optimize.model.spectral import SpectralRows, bin_limits, grouped_phasor
from facility.optimize.model.windows import (LagBound, add_block_lag_rows, add_lag_bound_rows, block_edges,
                                      lag_bounds)

__all__ = ["K_EXACT", "MIN_REFINED_GROUP", "overreach_steps", "finer_group", "BLOCKS_PER_WINDOW", "FINE_BLOCKS_PER_WINDOW", "GridModel", "short_lag_steps", "transient_steps", "grid_lag_bounds", "build_grid_model",
           "add_band_rows", "column_boxes", "box_template", "group_for", "has_job_transients",
           "ranged_groups"]

#: Longest lag (in PCC steps) written with the exact rows of
#: :func:`~facility.optimize.model.windows.add_lag_bound_rows`: their factorization costs about
#: N·k², so longer ones (the per-minute limit) go to block rows. Measured on 6,000 start/stop
#: steps at 0.1 s: exact per-minute rows (k = 600) 42 s, blocks of 50 steps 2.3 s.
K_EXACT = 150
#: Windows at least this long (the per-minute limit) never set the group size: their rows go
#: to blocks. [s]
LONG_WINDOW_S = 30.0
#: Blocks per window of a long lag bound (b = ⌈k / this⌉): restriction and relaxation differ
#: by one block of lag. Where the load's level moves by a share of the bound within the window
#: (:func:`transient_steps`: job starts, stops, checkpoints), blocks are
#: ``FINE_BLOCKS_PER_WINDOW`` per window.
BLOCKS_PER_WINDOW = 12
FINE_BLOCKS_PER_WINDOW = 60
#: A step is in a transient when the level of the load (its mean over a quarter of the window)
#: spans more than this share of the bound within one window either side.
TRANSIENT_SHARE = 0.5


@dataclass
class GridModel:
    """A bracketing LP (module text) and where its parts live.

    Attributes
    ----------
    m : Model
        The storage part (its axis: the problem's steps for ``"restrict"``, the groups for
        ``"relax"``).
    pcc : numpy.ndarray of int
        PCC power columns, one per group (``"restrict"``) or per step of ``m`` (``"relax"``).
    group : int
        g: steps per group. [steps]
    mode : str
        ``"restrict"`` or ``"relax"``.
    block_rows : list of (start, stop)
        Rows of the block rows of long lag bounds (left out by a bound that must hold for the
        exact lag bound, see :mod:`facility.optimize.strategies.interior`).
    spectral : SpectralRows or None
        The band-limit rows the model carries (None: none).
    """

    m: Model
    pcc: np.ndarray
    group: int
    mode: str
    block_rows: list = field(default_factory=list)
    spectral: object = None


def group_for(pb: Problem) -> int:
    """The smallest group g with every short lag bound at most :data:`K_EXACT` groups long.

    Short: windows under :data:`LONG_WINDOW_S` (per-second ramps, swing windows); the
    per-minute limit is long and goes to block rows whatever the step. g = 1 (the full LP)
    unless the grid is fine (10 ms: the 5-s swing window is 500 steps, g = 4).
    """
    short = short_lag_steps(pb)
    return max(1, -(-max(short) // K_EXACT)) if short else 1


def short_lag_steps(pb: Problem) -> list[int]:
    """Steps k of the lag bounds whose windows are under :data:`LONG_WINDOW_S` (per-second
    ramps, swing windows): the ones written as exact rows, which set the group size. [steps]"""
    return [b.k for b in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac) if b.k * pb.dt_s < LONG_WINDOW_S]


#: Groups are refined (g − 1) down to this size at the finest: below it the short windows'
#: exact rows grow too long (k/g steps) to factor quickly.
MIN_REFINED_GROUP = 2


def overreach_steps(pb: Problem, g: int) -> int:
    """How many steps past its window the restriction on groups of g constrains a short lag
    bound of k steps, at most: held over groups, a lag of ⌈k/g⌉ groups spans pairs up to
    (⌈k/g⌉ + 1) g − 1 steps apart. g − 1 where g divides k. [steps]"""
    ks = short_lag_steps(pb)
    return max(((-(-k // g)) + 1) * g - 1 - k for k in ks) if ks else 0


def finer_group(pb: Problem, g: int) -> int:
    """The group the interior strategy's refinement takes after g: the largest g' < g (at least
    :data:`MIN_REFINED_GROUP`) whose restriction reaches less far past the short windows than
    g's. At 10 ms (windows of 100 and 500 steps) 4 goes to 2, not 3: on groups of 3 the ramp
    window runs 4 steps long against 3 on groups of 4, and on 300 s of the measured-format
    trace that bracket's plan cost more than the one on groups of 4 (7,084.5 against 7,082.3
    kUSD), a bracket's time spent for nothing."""
    here = overreach_steps(pb, g)
    for h in range(g - 1, MIN_REFINED_GROUP - 1, -1):
        if overreach_steps(pb, h) < here:
            return h
    return max(g - 1, MIN_REFINED_GROUP)


def _group_means(x: np.ndarray, g: int) -> np.ndarray:
    """Means over consecutive groups of g samples (the last one partial)."""
    if g == 1:
        return np.asarray(x, dtype=float)
    n = -(-x.size // g)
    pad = np.concatenate([x, np.full(n * g - x.size, np.nan)])
    return np.nanmean(pad.reshape(n, g), axis=1)


def transient_steps(load: np.ndarray, k: int, bound_mw: float) -> np.ndarray:
    """Steps where a long window limit may bind: the load's level (its centred mean over k/4
    steps) spans more than :data:`TRANSIENT_SHARE` × the bound within k steps either side.

    A steady job's level moves by the jitter of its iterations only (a few MW in a minute);
    a job start, stop or checkpoint moves it by tens of MW. bool (n,)
    """
    from scipy.ndimage import maximum_filter1d, minimum_filter1d, uniform_filter1d

    x = np.asarray(load, dtype=float)
    level = uniform_filter1d(x, size=max(1, k // 4), mode="reflect")
    span = maximum_filter1d(level, size=2 * k + 1, mode="nearest") - \
        minimum_filter1d(level, size=2 * k + 1, mode="nearest")
    return span > TRANSIENT_SHARE * bound_mw


def grid_lag_bounds(spec, dt_s: float, margin_frac: float, g: int, mode: str):
    """The spec's lag bounds on the group axis: (exact ones, long ones), k in groups.

    ``"restrict"``: ⌈k/g⌉; ``"relax"``: ⌊k/g⌋ (a bound of fewer than one group is dropped).
    Windows shorter than :data:`LONG_WINDOW_S` are always exact (:func:`group_for` keeps them
    near :data:`K_EXACT` groups); longer ones go to block rows beyond :data:`K_EXACT` groups.
    """
    exact, long = [], []
    for b in lag_bounds(spec, dt_s, margin_frac):
        kk = -(-b.k // g) if mode == "restrict" else b.k // g
        if kk < 1:
            continue
        lb = LagBound(b.limit, b.direction, kk, b.bound_mw)
        (exact if kk <= K_EXACT or b.k * dt_s < LONG_WINDOW_S else long).append(lb)
    return exact, long


def build_grid_model(pb: Problem, g: int, mode: str, spectral_dirs: dict | None = None, *,
                     fine_blocks: int | None = None) -> GridModel:
    """The restriction or the relaxation of the module text on groups of ``g`` steps.

    ``spectral_dirs`` maps bins k to the polygon directions m whose rows the model carries
    (the restriction always, the relaxation at g = 1 only; module text). ``fine_blocks``:
    long-lag blocks per window at transients (default :data:`FINE_BLOCKS_PER_WINDOW`; the
    interior strategy doubles it where those blocks keep its bracket open).

    ``pb`` is a sizing problem without PCC history or a PCC variation price, with GPU levers
    only at g = 1 (:func:`facility.optimize.strategies.interior.applies`). With self-discharge
    (σ > 0) the relaxation with g > 1 carries each group's loss as a bounded column
    (:func:`facility.optimize.model.formulation.add_leak_rows`); the restriction and g = 1 keep
    the exact recursion.
    """
    T, dt = pb.n_steps, pb.dt_s
    storages = pb.storages
    if mode == "restrict":
        load, axis_dt, G = pb.load_mw, dt, -(-T // g)
    elif mode == "relax":
        G = T // g
        load = pb.load_mw[:G * g].reshape(G, g).mean(axis=1)
        axis_dt = dt * g
    else:
        raise ValueError(f"mode must be 'restrict' or 'relax', not {mode!r}")
    m = Model(LinearProgram(), load.size, float(axis_dt), np.asarray(load, dtype=float),
              dict(storages), price_kusd_per_mwh=pb.price_usd_per_mwh / 1000.0,
              leak_relaxed=mode == "relax" and g > 1)
    for s in storages.values():
        add_storage_variables(m, s)
    pcc_expression(m)
    if pb.levers is not None:
        # the GPU levers on the problem's own steps (their rows are the full LP's): g = 1 only
        if g != 1:
            raise ValueError("GPU levers in the bracketing LPs need groups of one step")
        m.levers = pb.levers
        add_lever_columns(m, pb.levers)
    for s in storages.values():
        add_duration_limits(m, s)   # rows on the ratings alone: valid in the relaxation too
        add_power_limits(m, s)
        add_soc_dynamics(m, s)
        add_soc_bounds(m, s)
        if mode == "restrict" or G * g == T:
            add_terminal_soc(m, s)
        add_storage_ramp(m, s)
    if mode == "restrict" or g == 1:
        add_network_limits(m)
    lp = m.lp
    n_axis = m.n_steps
    Q = lp.add_columns("pcc", G if mode == "restrict" else n_axis, -np.inf, np.inf)
    # each group's smallest PCC power: Q itself where it is held, a column of its own on the
    # restriction's ranged groups (ranged_groups: no band rows, no job transients)
    low = Q.copy()
    ranged = np.zeros(0, dtype=np.int64)
    if mode == "restrict" and g > 1 and not spectral_dirs and not has_job_transients(pb):
        ranged = ranged_groups(pb, g)
    if ranged.size:
        low[ranged] = lp.add_columns("pcc_low", ranged.size, -np.inf, np.inf)
    t = np.arange(n_axis)
    grp = t // g if mode == "restrict" else t
    held = ~np.isin(grp, ranged)
    for steps, cols, lo, hi in ((t[held], Q, -load, -load), (t[~held], Q, -np.inf, -load),
                                (t[~held], low, -load, np.inf)):
        if steps.size:  # Q_j ≥ P_t ≥ low_j (equal where held)
            lp.add_rows("pcc_balance", [(c[steps], np.broadcast_to(v, (n_axis,))[steps])
                                        for c, v in m.pcc_terms] + [(cols[grp[steps]], -1.0)],
                        lo[steps] if np.ndim(lo) else lo, hi[steps] if np.ndim(hi) else hi,
                        t=steps, soft=False)
    gm = GridModel(m, Q, g, mode)
    bounds = lag_bounds(pb.spec, dt, pb.margin_frac)
    if bounds and ranged.size:
        lp.add_rows("window_group", [(Q[ranged], 1.0), (low[ranged], -1.0)], -np.inf,
                    min(b.bound_mw for b in bounds), t=ranged * g, soft=True)
    if mode == "relax" and g > 1:
        groups = pb.load_mw[:G * g].reshape(G, g)
        add_group_power_rows(m, Q, groups, within_group_range_mw(pb.spec, dt, pb.margin_frac, g))
        if not has_job_transients(pb):
            add_neighbour_power_rows(m, Q, groups, pb.spec, dt, pb.margin_frac,
                                     max_window_s=LONG_WINDOW_S)
    exact, long = grid_lag_bounds(pb.spec, dt, pb.margin_frac, g, mode)
    zeros = np.zeros(Q.size)
    for lb in exact:  # rises: the later group's largest against the earlier's smallest
        early, late = ([(low, 1.0)], [(Q, 1.0)]) if lb.direction == "up" else ([(Q, 1.0)], [(low, 1.0)])
        add_lag_bound_rows(lp, lb, early, zeros, 0, later_terms=late)
    if long:
        k = min(b.k for b in long)
        fine = transient_steps(load if mode == "relax" else _group_means(load, g), k,
                               min(b.bound_mw for b in long))
        edges = block_edges(Q.size, max(1, -(-k // BLOCKS_PER_WINDOW)),
                            max(1, -(-k // (fine_blocks or FINE_BLOCKS_PER_WINDOW))), fine)
        out = add_block_lag_rows(lp, long, Q, edges, mode, pcc_low_col=low)
        gm.block_rows = out["rows"]
    add_dynamic_range(m, pb.spec, pb.margin_frac, pcc_terms=[(Q, 1.0)], pcc_const=zeros,
                      pcc_low_terms=[(low, 1.0)])
    if spectral_dirs and (mode == "restrict" or g == 1):
        gm.spectral = add_band_rows(lp, pb, Q, g, spectral_dirs)
    return gm


#: Groups of the restriction whose load spans more than this share of the PCC power's range
#: within a group (:func:`within_group_range_mw`) get a PCC power range of their own. [-]
RANGED_EDGE_FRAC = 0.1


def has_job_transients(pb: Problem) -> bool:
    """Whether a job starts, stops or checkpoints within the horizon under a long window limit:
    the load's level (:func:`transient_steps`) moves by more than the limit's own bound within
    one window, which a running job's jitter does not (the benchmark's jittered and
    measured-format hours at 10 ms: no step; its start/stop hour: 28 % of its steps).

    With such transients the bracketing LPs on groups keep the PCC power held and carry no
    neighbour rating rows: their bracket's width there is the complementarity's and the long
    lag's, which those rows do not change, and with them PIQP ran past its iteration cap
    (5 min of the benchmark's start/stop load at 10 ms: restriction 104 → 150 iterations,
    41 → 72 s; relaxation 148 → 150, 57 → 66 s; its hour found no bracket within 600 s and
    the follower plan came back).
    """
    long = [b for b in lag_bounds(pb.spec, pb.dt_s, pb.margin_frac) if b.k * pb.dt_s >= LONG_WINDOW_S]
    if not long:
        return False
    bound = min(b.bound_mw for b in long)
    return bool(transient_steps(pb.load_mw, min(b.k for b in long), bound / TRANSIENT_SHARE).any())


def ranged_groups(pb: Problem, g: int) -> np.ndarray:
    r"""The groups of g steps whose PCC power the restriction lets range: the load spans more
    than :data:`RANGED_EDGE_FRAC` × R within them (:func:`within_group_range_mw`; the edges of
    the load). int (n,)

    :func:`build_grid_model` uses them without band rows and without a job's start, stop or
    checkpoint in the horizon (:func:`has_job_transients`). Each group j carries its largest
    PCC power Q_j and, on these groups, its smallest D_j (elsewhere D_j = Q_j: held):
    Q_j ≥ P_t ≥ D_j for t in j, with P_t the load plus the storages' power at step t. The
    window limits are rows on them:

    .. math::  Q_j - D_j \le \min_b B_b,\qquad
               Q_{j_2} - D_{j_1} \le B_{up},\quad Q_{j_1} - D_{j_2} \le B_{down}
               \quad (0 < j_2 - j_1 \le \lceil k/g \rceil),

    the pairs written through the envelopes of
    :func:`~facility.optimize.model.windows.add_lag_bound_rows` (D's lower envelope against Q for
    rises, Q's upper one against D for falls), the long ones as block rows on [D, Q], the
    dynamic range on max Q − min D. Two steps t₁ < t₂ at most k apart lie in groups at most
    ⌈k/g⌉ apart, and P_{t₂} − P_{t₁} ≤ Q_{j₂} − D_{j₁}, P_{t₁} − P_{t₂} ≤ Q_{j₁} − D_{j₂}
    (within one group: Q_j − D_j): every plan of this LP is a plan of the full LP, and the
    held PCC power (D = Q everywhere) is one plan of it, so its optimum is at most the held
    restriction's.

    Measured on the first 300 s of the measured-format trace hour at 10 ms (groups of 4; the
    load spans up to 18 MW in a group at its edges; ``benchmarks/bench_sizing.py``'s storage
    and spec): held 7,054,455 USD; ranged where the load spans more than 0.1 R (872 of 7,500
    groups) 7,052,825 USD in the same solve time (8.4 s against 8.0 s, 37 PIQP iterations);
    ranged everywhere 7,052,391 USD in 34 s (each iteration's factor four times dearer).
    """
    load = np.asarray(pb.load_mw, dtype=float)
    G = -(-load.size // g)
    x = np.concatenate([load, np.full(G * g - load.size, np.nan)]).reshape(G, g)
    span = np.nanmax(x, axis=1) - np.nanmin(x, axis=1)
    return np.flatnonzero(span > RANGED_EDGE_FRAC * within_group_range_mw(pb.spec, pb.dt_s, pb.margin_frac, g))


def add_band_rows(lp, pb: Problem, Q: np.ndarray, g: int, directions: dict):
    """The polygon rows of ``directions`` (bin k -> directions m) on PCC columns Q held over
    groups of g steps (module text); returns the :class:`~facility.optimize.model.spectral.SpectralRows`.

    Q is the whole PCC power (the load enters through the balance rows), so the constant
    part of every bin is 0 and the rows take Q as their PCC columns.
    """
    T = pb.n_steps
    rows = SpectralRows(bin_limits(pb.spec, T, pb.dt_s, pb.margin_frac),
                        np.zeros(T // 2 + 1, dtype=complex), grouped_phasor(T, g), [(Q, 1.0)])
    rows.pcc_col = Q
    rows.add(lp, directions)
    return rows


def box_template(gm: GridModel) -> dict:
    """What :func:`column_boxes` needs of a built model (small and picklable)."""
    lp = gm.m.lp
    return {"lo": np.concatenate(lp.col_lb).astype(float), "hi": np.concatenate(lp.col_ub).astype(float),
            "col_names": dict(lp.col_names), "cols": gm.m.cols, "pcc": gm.pcc,
            "lever_cols": {k: v for k, v in gm.m.lever_cols.items() if not k.startswith("_")},
            "cost": np.concatenate(lp.cost).astype(float) if gm.m.lever_cols else None,
            "offset_kusd": float(gm.m.objective_offset_kusd), "axis_h": gm.m.dt_s / 3600.0}


def _lever_boxes(template: dict, levers, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """Finite boxes of the GPU levers' columns (in place) and what they imply: (the least
    value of the levers' part of the objective [k$], the largest site power they add [MW]).

    Floor, cap and cap segments have finite bounds of their own, and so has a burn column:
    its headroom row's room at the loosest floor and cap
    (:func:`facility.optimize.model.lever_columns.add_lever_columns`); every plan of the LP meets
    them, so the levers add at most e_max = max_t of that bound per step.
    """
    extra = 0.0
    for jl in levers.jobs:
        c = template["lever_cols"].get(jl.name, {})
        f_abs = max(abs(jl.floor[0]), abs(jl.floor[1])) if jl.floor is not None else 0.0
        c_abs = max(abs(jl.cap[0]), abs(jl.cap[1])) if jl.cap is not None else 0.0
        e_max = float(np.max(hi[c["burn"]], initial=0.0)) if "burn" in c else 0.0
        extra += (f_abs * float(np.max(np.abs(jl.floor_coef_mw), initial=0.0)) + e_max
                  + c_abs * float(np.max(np.abs(jl.cap_coef_mw), initial=0.0)))
        for room in (jl.floor_room_mw, jl.clip_room_mw):  # a relaxed box's (lever_search)
            if room is not None:
                extra += float(np.max(room, initial=0.0))
    cols = np.concatenate([np.asarray(v, dtype=np.int64).ravel() for c in template["lever_cols"].values()
                           for v in c.values()] or [np.zeros(0, np.int64)])
    cost = template["cost"][cols]
    least = template["offset_kusd"] + float(np.sum(np.minimum(cost * lo[cols], cost * hi[cols])))
    return least, levers.site_per_gpu * extra


def column_boxes(template: dict, storages: dict, load_mw: np.ndarray,
                 upper_usd: float, levers=None) -> tuple[np.ndarray, np.ndarray]:
    """Finite boxes of every column that contain an optimal solution of a bracketing LP.

    ``template`` comes from :func:`box_template`; ``upper_usd`` is the cost of a plan feasible
    for that LP or for any LP it relaxes (inf: the rating bounds alone). Every cost term is
    ≥ 0, so an optimal solution has c_P,s P̂_s ≤ upper and c_E,s Ê_s ≤ upper; its powers lie
    in [0, P̂], its stored energy in [0, s_max Ê], its PCC power within S = max|load| + Σ P̂max,
    and the envelope, block and range columns may be taken at the true extremes of the PCC
    power they bound (their rows hold with them), so within [-S, S]; a band row's bin parts
    (w_k/N) Re X_k and Im X_k within [-2S, 2S]. With GPU levers (``levers``, g = 1) their
    columns get the boxes of :func:`_lever_boxes`, S grows by the site power they can add, and
    the storages' capex is bounded by the plan's cost less the least the levers' part can be
    (their slowdown chords have negative slopes, so a column may cost < 0).

    Returns
    -------
    (lo, hi) : numpy.ndarray (n,)
        inf where no finite bound is known (a zero capex cost and no rating bound).
    """
    lo, hi = template["lo"].copy(), template["hi"].copy()
    u = upper_usd / 1000.0  # k$
    lever_mw = 0.0
    if levers is not None and template.get("lever_cols"):
        # the storages' cost is at most the plan's less the least the levers can cost
        least, lever_mw = _lever_boxes(template, levers, lo, hi)
        u -= min(least, 0.0) if np.isfinite(least) else np.inf
    p_max = 0.0
    for name, c in template["cols"].items():
        s = storages[name]
        pm = min(s.p_hi, u / s.c_p if s.c_p > 0 else np.inf)
        em = min(s.e_hi, u / s.c_e if s.c_e > 0 else np.inf)
        hi[c["p_rated"]] = np.minimum(hi[c["p_rated"]], pm)
        hi[c["e_rated"]] = np.minimum(hi[c["e_rated"]], em)
        pm = min(pm, s.max_own_p_mw)
        hi[c["ch"]] = np.minimum(hi[c["ch"]], pm)
        hi[c["dis"]] = np.minimum(hi[c["dis"]], pm)
        lo[c["e"]] = 0.0
        hi[c["e"]] = s.soc_max * em
        if "leak" in c:  # L_j <= σ H s_max Ê (formulation.add_leak_rows)
            lo[c["leak"]] = 0.0
            hi[c["leak"]] = s.sigma_per_h * template.get("axis_h", np.inf) * s.soc_max * em
        p_max += pm
    span = float(np.max(np.abs(load_mw))) + p_max + lever_mw
    lo[template["pcc"]], hi[template["pcc"]] = -span, span
    for name, idx in template["col_names"].items():
        if name.endswith(":g") or name.endswith(":h") or name in (
                "block_max", "block_min", "pcc_max", "pcc_min", "pcc_low"):
            lo[idx], hi[idx] = -span, span
        elif name.startswith("spectral:"):
            # a bin's scaled real or imaginary part: |(w_k/N) X_k| <= 2 max_t |P_t| <= 2 S
            lo[idx], hi[idx] = -2.0 * span, 2.0 * span
    return lo, hi
