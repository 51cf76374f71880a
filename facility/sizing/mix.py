"""The mix: the scenario's GPU levers as optimizer inputs, the optimizer's decisions as a design
the simulator runs, and what the design costs per year.

Three pure steps around :func:`facility.optimize.size_storage` (called by
:func:`facility.sizing.size_scenario`):

1. :func:`lever_inputs` — from the scenario and its load profile, the per-job data of the
   levers ``optimize.levers`` names (:class:`facility.optimize.model.levers.LeverInputs`) and the
   site power they act on (after the GPU controls that are not decisions);
2. :func:`realize` — the sized scenario (storages fixed at their ratings, the GPU stages the
   levers use switched on, the optimal controller on the plan, no co-design switching) and the
   :class:`facility.gpu.planned.GpuPlan` with each job's floor, cap and planned burn;
3. :func:`annual_cost` — the design's cost in USD per year: storage capex annuity, energy of
   conversion losses and of burned power, degradation, slowdown (docs/formulation.md).

Imports: :mod:`facility.config` (the technologies' annuities), :mod:`facility.gpu` (the
plan and smoothing steps) and :mod:`facility.optimize.model.levers`; no other sizing module,
never :mod:`facility.cosim` nor :mod:`facility.run`. A job's GPU model comes from the scenario's
resolved library (``scenario.library.gpu``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from facility.config.technology import annuity_lifetime_years, capital_recovery_factor, unit_configs
from facility.errors import ScenarioError
from facility.gpu.planned import GpuPlan
from facility.gpu.smoothing import steps_for
from facility.optimize.model.levers import JobInput, LeverInputs

__all__ = ["gpu_levers", "lever_inputs", "base_scenario", "realize", "hybrid_fixed", "without_unbought_units", "ratings_costs", "annual_cost",
           "held_mask"]

_H_PER_YEAR = 8760.0


def gpu_levers(scenario) -> list[str]:
    """The GPU levers among ``optimize.levers`` (floor, burn, cap)."""
    return [v for v in scenario.optimize.levers if v != "storage"]


def base_scenario(scenario):
    """The scenario with the GPU stages that are decisions switched off (their base).

    Raises
    ------
    ScenarioError
        A lever would act through a stage whose other settings the LP cannot represent
        (programmed ramps, hysteresis or a secondary floor with the floor lever; firefly with
        the floor or cap lever).
    """
    lev = gpu_levers(scenario)
    gs, ff, pc = scenario.gpu_smoothing, scenario.firefly, scenario.power_cap
    upd = {}
    if "floor" in lev:
        bad = [k for k in ("ramp_up_w_per_s", "ramp_down_w_per_s", "secondary_floor_frac")
               if getattr(gs, k) is not None] + [k for k in ("ramp_down_hysteresis_s",) if getattr(gs, k) > 0]
        if gs.enabled and bad:
            raise ScenarioError(
                f"optimize.levers = {scenario.optimize.levers}: the floor lever decides "
                f"gpu_smoothing.floor_frac, but gpu_smoothing also sets {', '.join(bad)}, which "
                f"the LP cannot represent (a ramp limiter is a recursion with clipping); unset "
                f"them or drop 'floor' from optimize.levers")
        upd["gpu_smoothing"] = gs.model_copy(update={"enabled": False})
    if ("floor" in lev or "cap" in lev) and ff.enabled:
        raise ScenarioError(
            f"optimize.levers = {scenario.optimize.levers}: firefly.enabled = true with the "
            f"floor or cap lever (firefly's fill-in depends on the cap and sits under the floor); "
            f"use the burn lever instead of firefly, or switch firefly off")
    if "cap" in lev:
        upd["power_cap"] = pc.model_copy(update={"enabled": False})
    return scenario.model_copy(update=upd) if upd else scenario


def held_mask(running: np.ndarray, stop_delay_s: float, dt_s: float) -> np.ndarray:
    """Steps where a floor holds: running, or within ``stop_delay_s`` after the last running
    step (as :mod:`facility.gpu.smoothing`). (G, T) bool."""
    r = np.asarray(running, dtype=bool)
    n = steps_for(stop_delay_s, dt_s)
    if n == 0:
        return r.copy()
    idx = np.arange(r.shape[1])
    last = np.maximum.accumulate(np.where(r, idx[None, :], -1), axis=1)
    return r | ((last >= 0) & (idx[None, :] - last <= n))


def lever_inputs(scenario, profile, p_base_w: np.ndarray):
    """The levers' inputs of a scenario.

    Parameters
    ----------
    scenario : Scenario
    profile : LoadProfile
    p_base_w : numpy.ndarray (G, T)
        GPU power per GPU after the controls that are not decisions
        (:func:`base_scenario`). [W]

    Returns
    -------
    LeverInputs or None
        None when ``optimize.levers`` names no GPU lever.
    """
    lev = gpu_levers(scenario)
    if not lev:
        return None
    groups = profile.groups
    jobs_of = groups["job"].astype(str).to_numpy()
    n_gpus = groups["n_gpus"].to_numpy(dtype=float)
    held = held_mask(profile.running, scenario.gpu_smoothing.stop_delay_s, profile.dt_s)
    pc = scenario.power_cap
    out = []
    for job in scenario.jobs:
        g = np.flatnonzero(jobs_of == job.name)
        gpu = scenario.library.gpu(job.gpu)
        fixed_cap = pc.enabled and "cap" not in lev
        ceiling = gpu.tdp_w * (pc.cap_frac if fixed_cap else 1.0)
        floor_range = None
        if "floor" in lev and gpu.supports_power_smoothing and gpu.max_floor_frac > 0:
            floor_range = (gpu.min_floor_frac, gpu.max_floor_frac)
        cap_range = (gpu.min_cap_frac, 1.0) if "cap" in lev else None
        out.append(JobInput(job.name, n_gpus[g], np.asarray(p_base_w[g], dtype=float), gpu.tdp_w,
                            ceiling, np.asarray(profile.running[g], dtype=bool), held[g],
                            np.asarray(profile.compute[g], dtype=bool), floor_range, cap_range,
                            "burn" in lev, pc.perf_exponent))
    site = scenario.site
    k_it = 1.0 + site.non_gpu_frac
    return LeverInputs(tuple(out), k_it, (site.pue - 1.0) * k_it, site.cooling_tau_s)


def realize(scenario, sol, *, closed_loop: bool = False):
    """The design a sizing result describes, as a scenario the simulator runs.

    ``closed_loop``: the design is run by the scenario's own (deployable) controller, not by
    the plan: the controller kind stays, and what only foresight can schedule (the planned
    burn, a time series of the future load) is left out; static levers (floor, cap) stay.

    Returns
    -------
    (Scenario, dict or None, GpuPlan or None)
        The sized scenario, the storage dispatch plan for the optimal controller
        (``{storage: p_mw (T,)}``) and the GPU plan (None without GPU levers).
    """
    upd = {}
    for n, cfg in scenario.storages().items():
        if cfg.technologies:   # a hybrid section runs as its units, each at its sized ratings
            upd[n] = hybrid_fixed(n, cfg, {u: (sol.p_rated_mw_opt[u], sol.e_rated_mwh_opt[u])
                                           for u in sol.p_rated_mw_opt if u.startswith(n + ".")})
            continue
        upd[n] = cfg.model_copy(update={"extendable": False,
                                        "p_rated_mw": float(sol.p_rated_mw_opt[n]),
                                        "e_rated_mwh": float(sol.e_rated_mwh_opt[n])})
    ctl = scenario.controller
    gpu_plan = None
    if sol.levers:
        floors = {j: d["floor_frac"] for j, d in sol.levers.items() if d["floor_frac"] is not None}
        caps = {j: d["cap_frac"] for j, d in sol.levers.items() if d["cap_frac"] is not None}
        burns = {} if closed_loop else {
            j: d["burn_mw"] for j, d in sol.levers.items()
            if d["burn_mw"] is not None and float(np.max(d["burn_mw"], initial=0.0)) > 0}
        gpu_plan = GpuPlan(floors, caps, burns)
        if floors:
            upd["gpu_smoothing"] = scenario.gpu_smoothing.model_copy(
                update={"enabled": True, "floor_frac": float(next(iter(floors.values())))})
        if caps:
            upd["power_cap"] = scenario.power_cap.model_copy(
                update={"enabled": True, "cap_frac": float(next(iter(caps.values())))})
        # the plan fixes what every lever does at every step: no co-design switching
        kind = ctl.kind if closed_loop else ("optimal" if scenario.storages() else "none")
        upd["controller"] = ctl.model_copy(update={"kind": kind, "codesign": False})
    elif ctl.kind == "none" and not closed_loop:
        upd["controller"] = ctl.model_copy(update={"kind": "optimal"})
    sized = scenario.model_copy(update=upd)
    plan = sol.p_storage_mw if sized.controller.kind == "optimal" and sol.p_storage_mw else None
    return sized, plan, gpu_plan

#: A hybrid unit whose power rating is below this share of its section's (at least 1 MW) is
#: left out (solver round-off). [frac]
UNIT_ZERO_FRAC = 1e-6


def hybrid_fixed(name: str, cfg, ratings: dict):
    """A hybrid section with its units' ratings fixed: ``ratings`` maps each unit
    ``<section>.<technology>`` to ``(p_rated_mw, e_rated_mwh)``; the section's ratings are
    their sums (``unit_p_rated_mw`` / ``unit_e_rated_mwh``, what scenario.resolved.toml shows)."""
    tiny = UNIT_ZERO_FRAC * max(1.0, sum(float(v[0]) for v in ratings.values()))
    # a unit the LP left out comes back as solver round-off (1e-12 MW): it is not bought
    p = {u.split(".", 1)[1]: float(v[0]) if float(v[0]) > tiny else 0.0 for u, v in ratings.items()}
    e = {u.split(".", 1)[1]: float(v[1]) if float(v[0]) > tiny else 0.0 for u, v in ratings.items()}
    return cfg.model_copy(update={"extendable": False, "unit_p_rated_mw": p, "unit_e_rated_mwh": e,
                                  "p_rated_mw": float(sum(p.values())), "e_rated_mwh": float(sum(e.values()))})


def without_unbought_units(sol):
    """The sizing result with every hybrid unit below :data:`UNIT_ZERO_FRAC` of its section's
    power (solver round-off of a unit the LP left out) at 0 MW / 0 MWh, as
    :func:`hybrid_fixed` runs it."""
    p, e = dict(sol.p_rated_mw_opt), dict(sol.e_rated_mwh_opt)
    plans = {k: dict(getattr(sol, k)) for k in ("p_storage_mw", "p_charge_mw", "p_discharge_mw")}
    for u in p:
        if "." not in u:
            continue
        sec = u.split(".", 1)[0]
        tot = sum(float(v) for k, v in sol.p_rated_mw_opt.items() if k.split(".", 1)[0] == sec)
        if float(p[u]) <= UNIT_ZERO_FRAC * max(1.0, tot):
            p[u], e[u] = 0.0, 0.0
            for plan in plans.values():     # and its plan (round-off too)
                if u in plan:
                    plan[u] = np.zeros_like(np.asarray(plan[u], dtype=float))
    return replace(sol, p_rated_mw_opt=p, e_rated_mwh_opt=e, **plans)


def ratings_costs(cfg, opt, p_rated_mw: float, e_rated_mwh: float) -> tuple[float, float, float]:
    """What one storage unit's ratings cost: its capex, the capex's annuity and its fixed O&M.

    Parameters
    ----------
    cfg : StorageConfig
        The unit (``cost_usd_per_kw``, ``cost_usd_per_kwh``, ``fixed_om_usd_per_kw_year``,
        ``fixed_om_usd_per_kwh_year``; its annuity lifetime,
        :func:`facility.config.technology.annuity_lifetime_years`).
    opt : OptimizeConfig
        ``discount_rate_frac`` and ``lifetime_years``.
    p_rated_mw, e_rated_mwh : float
        The ratings. [MW], [MWh]

    Returns
    -------
    (capex, annuity, fixed_om)
        ``1000 (P̂ cost_usd_per_kw + Ê cost_usd_per_kwh)`` [USD], ``CRF(r, n) capex``
        [USD/yr] and ``1000 (P̂ fixed_om_usd_per_kw_year + Ê fixed_om_usd_per_kwh_year)``
        [USD/yr].
    """
    crf = capital_recovery_factor(opt.discount_rate_frac, annuity_lifetime_years(cfg, opt))
    capex = 1000.0 * (p_rated_mw * cfg.cost_usd_per_kw + e_rated_mwh * cfg.cost_usd_per_kwh)
    om = 1000.0 * (p_rated_mw * cfg.fixed_om_usd_per_kw_year + e_rated_mwh * cfg.fixed_om_usd_per_kwh_year)
    return capex, crf * capex, om


def annual_cost(scenario, sol) -> dict:
    """Cost of a sized design in USD per year, and its mix.

    ============================  =================================================================
    key                           meaning
    ============================  =================================================================
    storage_capex_usd_per_year    Σ_s CRF(r, n_s) · 1000 (P̂_s cost_usd_per_kw + Ê_s cost_usd_per_kwh)
    fixed_om_usd_per_year         Σ_s 1000 (P̂_s fixed_om_usd_per_kw_year + Ê_s fixed_om_usd_per_kwh_year)
    loss_energy_usd_per_year      π Σ_t Δt_h ((1 − η_c) p^ch + (1/η_d − 1) p^dis) · 8760 / H
    burn_energy_usd_per_year      π κ Σ_t Δt_h (floor burn + planned burn) · 8760 / H
    degradation_usd_per_year      Σ_t Δt_h c_deg p^dis · 8760 / H
    slowdown_usd_per_year         v · n_gpus · extra_s / 3600 · 8760 / H (v: slowdown_usd_per_gpu_h)
    total_usd_per_year            the sum
    ============================  =================================================================

    (H: horizon [h], κ = (1 + non_gpu_frac) pue, CRF = r(1+r)^n / ((1+r)^n − 1), n_s the
    storage's annuity lifetime: ``optimize.lifetime_years`` where the scenario sets it, else its
    technology's calendar life, :func:`facility.config.technology.annuity_lifetime_years`;
    ``capex_recovery_factor_per_year`` is the CRF at ``optimize.lifetime_years`` or 15.) The mix:
    per storage unit (a hybrid section's units ``<section>.<technology>``) ``p_rated_mw``,
    ``e_rated_mwh``, ``duration_h`` (E/P, 0 without power), ``capex_usd``,
    ``loss_mwh_per_year``, ``equivalent_full_cycles_per_year`` (planned discharge / E),
    ``annuity_lifetime_years`` (n_s),
    ``cost_usd_per_year`` (its capex annuity, fixed O&M, losses and degradation) and, with a
    technology, ``technology``; per job ``floor_frac``, ``cap_frac``,
    ``burned_mwh_per_year`` (site side), ``slowdown_frac``.
    """
    opt = scenario.optimize
    dt = scenario.time.dt_s
    T = next(iter(sol.p_charge_mw.values())).size if sol.p_charge_mw else sol.p_pcc_mw.size
    horizon_h = T * dt / 3600.0
    per_year = _H_PER_YEAR / horizon_h
    h = dt / 3600.0
    crf = capital_recovery_factor(opt.discount_rate_frac, opt.lifetime_or_default_years)
    price = opt.energy_price_usd_per_mwh
    out = {"storage_capex_usd_per_year": 0.0, "fixed_om_usd_per_year": 0.0,
           "loss_energy_usd_per_year": 0.0,
           "burn_energy_usd_per_year": 0.0, "degradation_usd_per_year": 0.0,
           "slowdown_usd_per_year": 0.0}
    mix: dict = {"storages": {}, "jobs": {}}
    cfgs = {u: uc for n, c in scenario.storages().items() for u, uc in unit_configs(n, c).items()}
    for name, p_r in sol.p_rated_mw_opt.items():
        c = cfgs[name]
        life = annuity_lifetime_years(c, opt)
        e_r = sol.e_rated_mwh_opt[name]
        capex, annuity, om = ratings_costs(c, opt, p_r, e_r)
        ch, dis = sol.p_charge_mw[name], sol.p_discharge_mw[name]
        loss_mwh = h * float(np.sum((1 - c.eff_charge_frac) * ch + (1 / c.eff_discharge_frac - 1) * dis))
        deg = c.degradation_usd_per_mwh * h * float(np.sum(dis)) * per_year
        out["storage_capex_usd_per_year"] += annuity
        out["fixed_om_usd_per_year"] += om
        out["loss_energy_usd_per_year"] += price * loss_mwh * per_year
        out["degradation_usd_per_year"] += deg
        efc = h * float(np.sum(dis)) / e_r * per_year if e_r > 0 else 0.0
        mix["storages"][name] = {"p_rated_mw": float(p_r), "e_rated_mwh": float(e_r),
                                 "duration_h": float(e_r / p_r) if p_r > 0 else 0.0,
                                 "capex_usd": capex, "loss_mwh_per_year": loss_mwh * per_year,
                                 "equivalent_full_cycles_per_year": efc,
                                 "annuity_lifetime_years": life,
                                 "cost_usd_per_year": annuity + om + price * loss_mwh * per_year + deg}
        if c.technology:
            mix["storages"][name]["technology"] = c.technology
    kappa = (1.0 + scenario.site.non_gpu_frac) * scenario.site.pue
    jobs = {j.name: j for j in scenario.jobs}
    for name, d in sol.levers.items():
        burned = d["floor_burn_mw"] + (d["burn_mw"] if d["burn_mw"] is not None else 0.0)
        mwh = kappa * h * float(np.sum(burned)) * per_year
        running_s = _running_s(scenario, jobs[name])
        slow_frac = d["extra_s"] / running_s if running_s > 0 else 0.0
        out["burn_energy_usd_per_year"] += price * mwh
        out["slowdown_usd_per_year"] += (opt.slowdown_usd_per_gpu_h * jobs[name].n_gpus
                                         * d["extra_s"] / 3600.0 * per_year)
        mix["jobs"][name] = {"floor_frac": d["floor_frac"], "cap_frac": d["cap_frac"],
                             "burned_mwh_per_year": mwh, "slowdown_frac": slow_frac,
                             "planned_burn": d["burn_mw"] is not None and float(np.max(d["burn_mw"], initial=0.0)) > 0}
    out["total_usd_per_year"] = float(sum(out.values()))
    out["capex_recovery_factor_per_year"] = crf
    return {"cost": out, "mix": mix}


def _running_s(scenario, job) -> float:
    h = scenario.time.horizon_s
    start = max(job.start_s, 0.0)
    stop = h if job.stop_s is None else min(job.stop_s + job.ramp_s, h)
    return max(stop - start, 0.0)
