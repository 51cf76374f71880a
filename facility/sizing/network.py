"""Sizing through the network: the LP sees the losses between the load, the storage and the PCC.

The sizing LP (:func:`facility.optimize.size_storage`) holds the spec's limits on its PCC power
``load + Σ storage (+ the GPU levers' site power)``. Through the facility's network the PCC power
is a nonlinear function of the site load and of the plan (UPS conversion, feeder, substation and
BESS transformers: I²R and no-load terms, pandapower's AC power flow). This module solves the
sizing on that PCC power by **sequential linear programming** (:func:`size_through_network`):

.. math::

    P^{pcc}_t(s) \\approx a_t + g\\,\\Big(\\sum_n s_{n,t} + \\lambda_t\\Big),
    \\qquad a_t = P^{pcc}_t(s^{(k)}) - g\\,\\Big(\\sum_n s^{(k)}_{n,t} + \\lambda^{(k)}_t\\Big)

a linearization anchored at the previous round's plan :math:`s^{(k)}` (exact there), with one
slope g [MW/MW]: the incremental PCC power per MW of storage, 1 + the incremental losses
between the storage and the PCC, taken along the flat plan. A storage at another bus has its
own slope g_n = r_n g (storage behind the UPSs pays the UPS and feeder-transformer losses too):
its power enters the LP referred to the anchor's, s'_n = r_n s_n (:func:`referred_storages`,
back with :func:`at_the_storages`). Divided by g, that PCC power is
the LP's own form, ``load' + Σ s + λ`` with ``load' = a / g``, and every spec limit the LP holds
is positively homogeneous in P (ramps, window swings, dynamic range, DFT-bin amplitudes), so
the LP holds them at ``limit / g`` (through ``optimize.limit_margin_frac``; the band energy share
is a ratio and needs nothing). Every strategy (full, coarsened, periodic, interior, GPU levers)
therefore solves the loss-inclusive problem unchanged.

The first anchor is the flat plan :math:`s^{(0)} = \\bar L - L_t` at the largest storage (the
plan a storage flattening the load would run), so ``a`` is a function of the load alone and
keeps its structure (equal steps give equal values, :func:`facility.electrical.pcc.pcc_power_mw`).
Round k solves the LP, runs the power flow of its plan and stops when

.. math::  \\varepsilon = \\max_t |P^{pcc}_t(s) - g\\,P^{LP}_t| \\le \\varepsilon_{tol}
           = \\text{tol} \\cdot \\min_{\\text{limits}} B_{\\text{MW}}

(``optimize.loss_tol_frac``; B: each limit as MW over its own window, e.g. R·τ for a ramp
limit); else it re-anchors at the new plan. The LP holds every limit at ``(1 − 2 tol)`` of its
value, so a converged plan meets the limits through the network: a lag difference of P
changes by at most 2ε, a single-sided DFT amplitude by at most 2ε. The error of the chord is
:math:`(g_{n,t} - g)(s_{n,t} - s^{(k)}_{n,t})` plus second-order terms: each round shrinks the
residual by about :math:`\\max |g_{n,t}/g - 1|` (a few %), so one or two rounds are typical
(docs/formulation.md, *Losses inside the LP*).

Imports: :mod:`facility.electrical.pcc` (the network's PCC power and its gain) and
:mod:`facility.optimize` (the LP and its warm starts); no other sizing module, never
:mod:`facility.cosim` nor :mod:`facility.run`. The ``losses`` block of ``sizing.json`` is
:func:`facility.sizing.record.losses_block`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace

import numpy as np

from facility.electrical.pcc import flat_gain, pcc_gain, pcc_power_mw, perturbation_mw, scale_feeders
from facility.optimize import size_storage
from facility.optimize.solvers.warm import warm_starts

__all__ = ["NetworkSizing", "size_through_network", "limit_scale_mw", "referred_storages", "at_the_storages",
           "LOSS_STORAGE_ORDER"]

log = logging.getLogger(__name__)

#: Where the first anchor puts the flat plan: the first extendable storage of this order (the
#: BESS carries most sizing studies), else the first storage.
LOSS_STORAGE_ORDER = ("bess", "rack_storage", "ups")


@dataclass
class NetworkSizing:
    """The loss-aware sizing's answer and how it got there.

    Attributes
    ----------
    sol : SizingResult
        The last round's LP result; ratings and storage dispatch at the storages' own buses;
        ``p_pcc_mw`` replaced by the PCC power through the network. [MW]
    gain : float
        Slope g: incremental PCC power per MW of storage. [MW/MW]
    rounds : int
        LP solves.
    residuals_mw : list of float
        ε of each round: max |PCC through the network − g · LP PCC|. [MW]
    tol_mw : float
        ε_tol. [MW]
    converged : bool
        The last ε is within ε_tol.
    solve_s : float
        Wall time of all rounds' LP solves. [s]
    p_lp_mw : numpy.ndarray (T,)
        The last LP's PCC power mapped to the PCC (g times the LP's). [MW]
    warm_solves : int
        HiGHS simplex solves that started from an earlier round's basis
        (:mod:`facility.optimize.solvers.warm`; the interior-point paths start cold).
    simplex_iterations : list of int
        Simplex iterations of each HiGHS simplex solve of the rounds, in order.
    """

    sol: object
    gain: float
    rounds: int
    residuals_mw: list = field(default_factory=list)
    tol_mw: float = 0.0
    converged: bool = False
    solve_s: float = 0.0
    p_lp_mw: np.ndarray | None = None
    ratios: dict = field(default_factory=dict)
    warm_solves: int = 0
    simplex_iterations: list = field(default_factory=list)


def limit_scale_mw(spec, load_mw: np.ndarray) -> float:
    """The smallest spec limit as MW over its own window (R·τ for a ramp rate, the per-minute,
    window-swing, dynamic-range and band peak limits as they are); the load's range where no
    limit in MW is set. [MW]"""
    b = []
    tau = spec.ramp_window_s
    for key in ("max_ramp_up_mw_per_s", "max_ramp_down_mw_per_s"):
        v = getattr(spec, key)
        if v is not None:
            b.append(v * tau)
    for key in ("max_ramp_mw_per_min", "max_window_swing_mw", "max_dynamic_range_mw", "max_band_peak_mw"):
        v = getattr(spec, key)
        if v is not None:
            b.append(v)
    b += [band.max_peak_mw for band in getattr(spec, "bands", []) if band.max_peak_mw is not None]
    b = [float(x) for x in b if x is not None and x > 0]
    if b:
        return min(b)
    load = np.asarray(load_mw, dtype=float)
    return max(float(np.ptp(load)), 1e-3)


def _anchor_storage(storages: dict) -> str | None:
    ext = [n for n in LOSS_STORAGE_ORDER if n in storages and storages[n].extendable]
    if ext:
        return ext[0]
    return next((n for n in LOSS_STORAGE_ORDER if n in storages), None)


def size_through_network(scenario, net, p_feeder_mw: np.ndarray, p_load_mw: np.ndarray, storages: dict,
                         optimize, *, t_s: np.ndarray | None = None, levers=None,
                         net_for=None, spec=None, warm: bool = True) -> NetworkSizing:
    """Size the storages (and GPU levers) on the PCC power through the network (SLP, above).

    Parameters
    ----------
    scenario : Scenario
        ``spec`` and ``time.dt_s``.
    net : FacilityNetwork
        The network the verification run uses.
    p_feeder_mw : numpy.ndarray (T, F)
        Site power per feeder before storage (after the GPU controls that are not decisions). [MW]
    p_load_mw : numpy.ndarray (T,)
        Its sum. [MW]
    storages : dict of StorageConfig
    optimize : OptimizeConfig
        With the network's caps (:func:`facility.cosim.with_network_caps`) and the margin the
        controller needs in ``limit_margin_frac``; ``loss_tol_frac``, ``max_loss_rounds``.
    levers : LeverInputs, optional
    spec : SpecConfig, optional
        The limits the LP holds (default ``scenario.spec``; e.g. with the ``[grid_impact]``
        per-bin caps, :func:`facility.grid_impact.lp.lp_spec`).
    warm : bool
        Start each round's HiGHS simplex solves from the previous round's optimal basis.
    net_for : callable, optional
        ``net_for(p_bess_mw) -> FacilityNetwork``: the network a design is verified on where it
        depends on the design (a BESS transformer rated for the sized BESS); the first anchor
        is taken on it at the flat plan's peak power, each round's residual at the round's
        rating, and the next round anchored there. None = ``net``.

    Returns
    -------
    NetworkSizing
    """
    spec, dt = (scenario.spec if spec is None else spec), scenario.time.dt_s
    load = np.asarray(p_load_mw, dtype=float)
    feeders = np.asarray(p_feeder_mw, dtype=float)
    tol_frac = float(optimize.loss_tol_frac)
    tol_mw = tol_frac * limit_scale_mw(spec, load)
    at = _anchor_storage(storages)
    # first anchor: the flat plan at the largest storage (a function of the load alone)
    reach = _reach_mw(at, storages[at], optimize) if at else np.inf
    if net_for is not None:  # the design's network at the flat plan's peak power
        net = net_for(float(np.max(np.abs(np.clip(np.mean(load) - load, -reach, reach)), initial=0.0)))
    s0, gain = flat_gain(net, feeders, at, reach)
    ratio = _relative_gains(net, feeders, s0, at, gain, storages)
    lp_storages = referred_storages(storages, ratio)
    p0 = pcc_power_mw(net, feeders, s0)
    anchor = p0 - gain * (s0[at] if at is not None else 0.0)
    m_user = float(optimize.limit_margin_frac)
    if not net.enabled:  # PCC power = site power + storage: the LP is exact, no residual to hold
        tol_frac = 0.0
    # the LP frame is the PCC power / g: every limit / g, and (1 - 2 tol) for the residual
    margin = 1.0 - (1.0 - m_user) * (1.0 - 2.0 * tol_frac) / gain
    residuals: list[float] = []
    sol, solve_s = None, 0.0
    n_rounds = int(optimize.max_loss_rounds)
    with warm_starts(warm) as ws:     # each round starts from the last one's basis
        for k in range(1, n_rounds + 1):
            lp_load = anchor / gain
            shift = float(np.min(lp_load - load))
            opt = optimize.model_copy(update={"limit_margin_frac": margin, **_shifted_caps(optimize, shift)})
            t0 = time.perf_counter()
            sol = size_storage(lp_load, dt, lp_storages, spec, opt, t_s=t_s, levers=levers)
            solve_s += time.perf_counter() - t0
            s_sum = sum(sol.p_storage_mw.values(), np.zeros(load.size))      # Σ r_n s_n
            lever_mw = np.asarray(sol.p_pcc_mw, dtype=float) - lp_load - s_sum
            p_lp = gain * np.asarray(sol.p_pcc_mw, dtype=float)
            sol = at_the_storages(sol, ratio)
            site = load + lever_mw
            f_k = scale_feeders(feeders, site) if np.any(lever_mw) else feeders
            if net_for is not None:
                net = net_for(sum(float(v) for u, v in sol.p_rated_mw_opt.items() if _section(u) == "bess"))
            p_true = pcc_power_mw(net, f_k, _by_section(sol.p_storage_mw))
            eps = float(np.max(np.abs(p_true - p_lp)))
            residuals.append(eps)
            log.info("loss-aware sizing round %d: residual %.3g MW (tol %.3g MW, g = %.5f)", k, eps, tol_mw, gain)
            if eps <= tol_mw:
                break
            anchor = p_true - gain * (s_sum + lever_mw)
    sol.p_pcc_mw = p_true
    return NetworkSizing(sol=sol, gain=gain, rounds=len(residuals), residuals_mw=residuals, tol_mw=tol_mw,
                         converged=residuals[-1] <= tol_mw, solve_s=solve_s, p_lp_mw=p_lp,
                         ratios=ratio, warm_solves=ws.warm, simplex_iterations=list(ws.iterations))


def _section(unit: str) -> str:
    """The storage section of a unit (``bess.lfp_1h`` -> ``bess``)."""
    return unit.split(".")[0]


def _by_section(p_mw: dict) -> dict:
    """Unit powers summed per storage section (where the network connects them). [MW]"""
    out: dict = {}
    for u, p in p_mw.items():
        out[_section(u)] = out.get(_section(u), 0.0) + np.asarray(p, dtype=float)
    return out


def _relative_gains(net, feeders, s0: dict, at, gain: float, storages: dict) -> dict:
    """r_n = g_n / g of every storage section: its own slope at the first anchor over the anchor
    storage's (rack storage and the UPS battery share the UPS output, one slope)."""
    delta = perturbation_mw(feeders.sum(axis=1) if feeders.ndim == 2 else feeders)
    out, seen = {}, {}
    for n in storages:
        bus = "bess" if n == "bess" else "ups_output"
        if n == at:
            out[n] = 1.0
            continue
        if bus not in seen:
            g = float(np.mean(pcc_gain(net, feeders, s0, n, delta)))
            seen[bus] = g / gain if np.isfinite(g) and g > 0 else 1.0
        out[n] = seen[bus]
    return out


def referred_storages(storages: dict, ratio: dict) -> dict:
    """The storage sections in the LP's frame: each one's power referred to the anchor
    storage's slope, s'_n = r_n s_n (the LP's PCC power is load' + Σ s'_n). A ratio r scales
    the power side and leaves the energy side: P̂' = r P̂ (its bounds, the converter ramp,
    the cost per kW and fixed O&M per kW / r), η_c' = η_c / r, η_d' = r η_d (the stored energy
    is the same: η_c' s'^{ch} = η_c s^{ch}, s'^{dis} / η_d' = s^{dis} / η_d), the degradation
    per MWh discharged / r, the duration bounds / r (E ≥ d P̂ = (d / r) P̂'). A fixed hybrid's
    unit ratings (``unit_p_rated_mw``) are referred with its section's power."""
    out = {}
    for n, c in storages.items():
        r = float(ratio.get(n, 1.0))
        if abs(r - 1.0) < 1e-12:
            out[n] = c
            continue
        upd = {"eff_charge_frac": c.eff_charge_frac / r, "eff_discharge_frac": c.eff_discharge_frac * r,
               "cost_usd_per_kw": c.cost_usd_per_kw / r, "min_p_rated_mw": c.min_p_rated_mw * r,
               "degradation_usd_per_mwh": c.degradation_usd_per_mwh / r}
        for k in ("max_p_rated_mw", "p_rated_mw", "max_ramp_mw_per_s"):
            if getattr(c, k, None) is not None:
                upd[k] = getattr(c, k) * r
        if getattr(c, "unit_p_rated_mw", None):   # a fixed hybrid: each unit's power too
            upd["unit_p_rated_mw"] = {u: v * r for u, v in c.unit_p_rated_mw.items()}
        for k in ("min_duration_h", "max_duration_h", "fixed_om_usd_per_kw_year"):
            if getattr(c, k, None) is not None:
                upd[k] = getattr(c, k) / r
        out[n] = c.model_copy(update=upd)
    return out


def at_the_storages(sol, ratio: dict):
    """A LP result in the referred frame back at the storages' own buses: P̂ and the powers / r
    (Ê and the SoC are the same in both frames)."""
    if all(abs(float(ratio.get(_section(u), 1.0)) - 1.0) < 1e-12 for u in sol.p_rated_mw_opt):
        return sol

    def back(d: dict) -> dict:
        return {u: np.asarray(v) / float(ratio.get(_section(u), 1.0)) for u, v in d.items()}

    return replace(sol, p_rated_mw_opt={u: float(v) / float(ratio.get(_section(u), 1.0))
                                        for u, v in sol.p_rated_mw_opt.items()},
                   p_storage_mw=back(sol.p_storage_mw), p_charge_mw=back(sol.p_charge_mw),
                   p_discharge_mw=back(sol.p_discharge_mw))


def _reach_mw(name: str, cfg, optimize) -> float:
    """Largest power the anchor storage can have: its rating (or ``max_p_rated_mw``), within
    what its connection carries (``optimize.max_bess_p_mw``). [MW]"""
    p = cfg.max_p_rated_mw if cfg.extendable else cfg.p_rated_mw
    reach = np.inf if p is None else float(p)
    cap = getattr(optimize, "max_bess_p_mw", None) if name == "bess" else None
    if cap is not None:
        reach = min(reach, float(cap))
    return reach


def _shifted_caps(optimize, shift_mw: float) -> dict:
    """The network caps on the LP's load: the caps' rows read ``load' + Σ s <= C`` with the LP's
    load ``load' = L + d_t``; with ``C' = C + min_t d_t`` (``shift_mw``) every plan that meets
    them has ``L + Σ s <= C`` (the import side, where a network's capacity binds). The export
    side (``-C <= L + Σ s``, discharging more than the load plus the capacity) is not
    tightened. [MW]"""
    out = {}
    for key in ("max_feeder_p_mw", "max_site_p_mw"):
        v = getattr(optimize, key, None)
        if v is not None:
            out[key] = max(float(v) + shift_mw, 1e-6)
    return out
