r"""A realizable plan from an interior point of the restriction
(:mod:`facility.optimize.strategies.interior`, docs/formulation.md *The plan*).

An interior point is not a vertex: the restriction's solution charges and discharges at once
by a little everywhere (it costs only losses, below the solver's tolerance). Per storage the
net power less a constant δ (which moves no window limit: a constant shift changes no
difference of two PCC samples) is split into charge or discharge; netting only adds stored
energy, and where the SoC leaves its band the energy rating grows by ΔÊ (the trajectory moves
by a^t s₀ΔÊ with a = 1 − σ Δt_h, the band by s_min ΔÊ and s_max ΔÊ). The cheapest plan that passes
:func:`facility.optimize.certificates.verify.verify_plan` is kept. Where the LP burns energy on purpose (the
resistor), :func:`overlap_fix` gives the direction fixes of a repair round.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.formulation import op_cost_coefficients, plan_cost_kusd
from facility.optimize.model.lever_columns import lever_cost_kusd
from facility.optimize.model.problem import Problem
from facility.optimize.certificates.verify import verify_plan

__all__ = ["OVERLAP_NOISE_MW", "realize", "overlap_fix", "cost_usd", "decay", "stored_energy"]

#: Overlap below which min(p_ch, p_dis) counts as the solver's noise, not a resistor. [MW]
OVERLAP_NOISE_MW = 1e-4


def decay(s, n: int, h: float) -> np.ndarray:
    """a^t for t = 0..n with a = 1 − σ Δt_h: how a change of the initial stored energy
    carries to step t under self-discharge (ones where σ = 0). [-]"""
    a = 1.0 - s.sigma_per_h * h
    return np.ones(n + 1) if a == 1.0 else a ** np.arange(n + 1)


def stored_energy(s, e0: float, ch: np.ndarray, dis: np.ndarray, h: float) -> np.ndarray:
    """The SoC recursion e_{t+1} = a e_t + Δt_h (η_c p^ch_t − p^dis_t / η_d) from e_0, a = 1 − σ Δt_h
    (:func:`facility.optimize.model.formulation.add_soc_dynamics`). [MWh] (T + 1,)"""
    u = h * (s.eta_c * ch - dis / s.eta_d)
    a = 1.0 - s.sigma_per_h * h
    if a == 1.0:
        return e0 + np.concatenate([[0.0], np.cumsum(u)])
    from scipy.signal import lfilter

    return np.concatenate([[e0], lfilter([1.0], [1.0, -a], u, zi=[a * e0])[0]])


def _netted(s, p: np.ndarray, e_r: float, h: float, delta: float):
    """Net power p − δ split into charge and discharge, the stored energy it gives from
    s₀Ê, and the energy growth ΔÊ that puts it back inside the SoC band: the trajectory
    moves by a^t s₀ΔÊ (a = 1 − σ Δt_h, :func:`decay`; the whole of s₀ΔÊ where σ = 0), the
    band by s_min ΔÊ and s_max ΔÊ, so step t needs ΔÊ ≥ over_t / (s_max − a^t s₀) above the
    band and ΔÊ ≥ under_t / (a^t s₀ − s_min) below it. ΔÊ = inf: impossible."""
    q = p - delta
    ch, dis = np.maximum(q, 0.0), np.maximum(-q, 0.0)
    e = stored_energy(s, s.soc0 * e_r, ch, dis, h)
    over = e - s.soc_max * e_r
    under = s.soc_min * e_r - e
    need = [0.0]
    shift = s.soc0 * decay(s, p.size, h)
    with np.errstate(divide="ignore", invalid="ignore"):
        for viol, room in ((over, s.soc_max - shift), (under, shift - s.soc_min)):
            bad = viol > 0
            if bad.any():
                r = room[bad]
                need.append(float(np.max(np.where(r > 0, viol[bad] / np.where(r > 0, r, 1.0), np.inf))))
    return ch, dis, e, max(need) * (1.0 + 1e-9)


def _realize_storage(s, p: np.ndarray, e_r: float, dt_s: float, price_kusd: float):
    """The cheapest realizable plan of one storage whose net power is p − δ for a constant
    δ (module text): (p_rated, e_rated, ch, dis, e) or None."""
    h = dt_s / 3600.0
    c_ch, c_dis = op_cost_coefficients(s, dt_s, price_kusd)

    def plan_at(delta, netted=None):
        ch, dis, e, de = netted if netted is not None else _netted(s, p, e_r, h, delta)
        p_r2, e_r2 = s.duration_ratings(max(float(np.max(ch + dis)), s.p_lo), max(e_r + de, s.e_lo))
        e = e + s.soc0 * (e_r2 - e_r) * decay(s, p.size, h)
        ok = (np.isfinite(de) and e_r2 <= s.e_hi * (1 + 1e-9) and p_r2 <= s.p_hi * (1 + 1e-9)
              and e[-1] >= s.soc0 * e_r2 - 1e-9 * max(e_r2, 1.0)
              and (s.terminal != "equal_initial" or abs(e[-1] - e[0]) <= 1e-7 * max(e_r2, 1.0)))
        cost = (s.c_p * p_r2 + s.c_e * e_r2 + c_ch * float(np.sum(ch)) + c_dis * float(np.sum(dis))
                if ok else np.inf)
        return cost, (p_r2, e_r2, ch, dis, e)

    plain = _netted(s, p, e_r, h, 0.0)
    # the netting surplus per hour, as a constant power: the scale of a useful shift
    scale = max(abs(float(plain[2][-1] - s.soc0 * e_r)) / max(p.size * h, 1e-12), 1e-9)
    best = plan_at(0.0, plain)
    for k in (-4, -2, -1, -0.5, 0.25, 0.5, 0.75, 1.0, 1.5, 2, 4):
        c = plan_at(k * scale)
        if c[0] < best[0]:
            best = c
    return best[1] if np.isfinite(best[0]) else None


def realize(pb: Problem, raw: dict, lever_plan: dict | None = None) -> tuple[dict | None, dict, str]:
    """A realizable plan from an interior point of the restriction (module text): per storage
    the net power less a constant δ (the cheapest of a few; δ = 0 is the plain netting), split
    into charge or discharge, with the energy growth that keeps it in the SoC band.

    A constant shift of the PCC power changes no difference between two of its samples, so no
    window limit nor the dynamic range; the plan is checked on every row of the full LP.

    Returns
    -------
    (plan or None, grown_e_mwh per storage, why not)
    """
    plan, grown = {}, {}
    for n, (_, e_r, ch, dis, _) in raw.items():
        s = pb.storages[n]
        got = _realize_storage(s, ch - dis, e_r, pb.dt_s, pb.price_usd_per_mwh / 1000.0)
        if got is None:
            return None, grown, f"{n}: netting the plan leaves its rating or SoC bounds"
        plan[n] = got
        grown[n] = got[1] - e_r
    bad = verify_plan(pb.load_mw, pb.dt_s, pb.storages, pb.spec, plan, pb.margin_frac,
                      levers=pb.levers, lever_plan=lever_plan)
    return (None, grown, bad) if bad else (plan, grown, "")


def overlap_fix(raw: dict, zero: dict | None) -> tuple[dict, int]:
    """Direction fixes of the overlapping steps (added to ``zero``): the smaller side of
    every step with min(p_ch, p_dis) above the noise gets upper bound 0."""
    zero = {n: {k: v.copy() for k, v in d.items()} for n, d in (zero or {}).items()}
    n_fixed = 0
    for n, (_, _, ch, dis, _) in raw.items():
        ov = np.minimum(ch, dis) > OVERLAP_NOISE_MW
        d = zero.setdefault(n, {"ch": np.zeros(ch.size, bool), "dis": np.zeros(ch.size, bool)})
        d["dis"] |= ov & (ch >= dis)
        d["ch"] |= ov & (ch < dis)
        n_fixed += int(ov.sum())
    return zero, n_fixed


def cost_usd(pb: Problem, plan: dict, lever_plan: dict | None = None) -> float:
    c = plan_cost_kusd(pb.storages, plan, pb.dt_s, pb.price_usd_per_mwh)
    if pb.levers is not None and lever_plan is not None:
        c += sum(lever_cost_kusd(pb.levers, lever_plan, pb.dt_s, pb.price_usd_per_mwh).values())
    return 1000.0 * c
