"""The blocks of one co-simulation run's results: its metrics blocks (storage, training,
crashes, grid events and ride-through, grid impact) and its time-series table.

Pure functions over the run's arrays, called by :func:`facility.cosim.simulate_design` once
the load, the controller and the power flow have run. Layer: above the model packages
(storage, electrical, grid_impact) and :mod:`facility.metrics`; imports no orchestrator.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from facility import metrics as fm
from facility.electrical.grid_events import ups_sag_settings
from facility.electrical.ride_through import ride_through_assessment, ups_energy_for_curve
from facility.grid_impact.metrics import LIMIT_METRIC, build_model, grid_impact_compliance, grid_impact_metrics
from facility.storage import storage_metrics_from_series

__all__ = ["grid_event_block", "grid_impact_block", "grid_impact_margins", "numeric_tree", "storage_block", "training_block",
           "add_crashes", "timeseries_frame"]


def grid_event_block(metrics, ts, scenario, ge, pf, pf_ref, net, storages) -> None:
    """The ``ride_through`` block, the ride-through rows of ``compliance`` and the event columns."""
    dt = scenario.time.dt_s
    rt = scenario.spec.ride_through
    block, rows, undecided = ride_through_assessment(ge.vm_pu, pf.p_pcc_mw, pf_ref.p_pcc_mw, ge.disconnected_mw,
                                                     dt, rt)
    block["ups"] = dict(ge.info)
    ups = storages.get("ups")
    if rt is not None:
        p_it_peak = float(ge.p_it_mw.max(initial=0.0))
        need = ups_energy_for_curve(p_it_peak, float(np.sum(net.ups_sn_mva)), ups_sag_settings(scenario), rt,
                                    dt_s=min(dt, 0.001),
                                    eff_discharge_frac=ups.eff_discharge_frac if ups is not None else 1.0)
        need["p_it_peak_mw"] = p_it_peak
        if ups is not None and ups.e_rated_mwh > 0:
            usable = (ups.initial_soc_frac - (ups.min_soc_frac - ups.reserve_frac)) * ups.e_rated_mwh
            need["reserve_frac_needed"] = need["e_mwh"] / ups.e_rated_mwh
            need["battery_holds"] = bool(need["e_mwh"] <= usable + 1e-12 and need["p_mw"] <= ups.p_rated_mw + 1e-9)
        block["ups_sizing"] = need
    metrics["ride_through"] = numeric_tree(block)
    und = metrics.setdefault("undecided", {})
    und.update({k: True for k in undecided})
    limit = fm.limit_rows(metrics["compliance"])
    limit.update(rows)
    metrics["compliance"] = {**limit, "all_decided": not und, "compliant": all(bool(v) for v in limit.values())}
    for name, col in ge.columns.items():
        ts[name] = col
    ts["p_ref_pcc_mw"] = pf_ref.p_pcc_mw


def grid_impact_block(metrics: dict, scenario, p_pcc_mw, p_raw_pcc_mw, dt: float) -> None:
    """The ``grid_impact`` block (PCC power, and a summary for the raw power) and its limits'
    rows in ``compliance`` / ``compliance_raw`` (:mod:`facility.grid_impact`)."""
    cfg = scenario.grid_impact
    model = build_model(cfg, scenario.library.shaft, scenario.library.mode_set)
    block = grid_impact_metrics(p_pcc_mw, dt, model)
    raw = grid_impact_metrics(p_raw_pcc_mw, dt, model)
    block["raw"] = {k: raw[k] for k in ("shaft_bin_peak_torque_pu", "mode_bin_peak_mw", "max_damage_per_year",
                                        "min_life_years")}
    block["raw"]["peak_torque_pu"] = raw["shaft"]["peak_torque_pu"]
    block["raw"]["mode_total_peak_mw"] = raw["modes"]["total"]["peak_mw"]
    metrics["grid_impact"] = block
    for key, blk in (("compliance", block), ("compliance_raw", raw)):
        rows = fm.limit_rows(metrics[key])
        rows.update(grid_impact_compliance(blk, cfg))
        metrics[key] = {**rows, "all_decided": metrics[key]["all_decided"], "compliant": all(rows.values())}


def grid_impact_margins(metrics: dict, cfg) -> dict:
    """``{row: (value, limit, unit)}`` of the grid-impact limits that are rows of
    ``metrics['compliance']``, for :func:`facility.metrics.limit_margins` (units ``pu``, ``mw``,
    ``per_year`` as the limit keys end)."""
    gi = metrics.get("grid_impact")
    out = {}
    if gi is None:
        return out
    for row, (limit_key, metric_key) in LIMIT_METRIC.items():
        lim = getattr(cfg, limit_key, None)
        if lim is not None and row in metrics["compliance"]:
            unit = next(u for u in ("per_year", "pu", "mw") if limit_key.endswith(u))
            out[row] = (float(gi[metric_key]), float(lim), unit)
    return out


def numeric_tree(obj: Any) -> Any:
    """Keep only numbers and bools (metrics.json leaves), recursively."""
    if isinstance(obj, dict):
        out = {str(k): numeric_tree(v) for k, v in obj.items()}
        return {k: v for k, v in out.items() if v is not None and v != {}}
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, float, np.integer, np.floating)):
        return float(obj) if isinstance(obj, (float, np.floating)) else int(obj)
    return None


def storage_block(storages, p_storage, soc, dt, saturation) -> dict:
    out = {}
    for name, params in storages.items():
        p = np.asarray(p_storage.get(name, np.zeros_like(soc[name])), dtype=float)
        out[name] = storage_metrics_from_series(p, np.asarray(soc[name], dtype=float), params, dt)
        sat = saturation.get(name) if saturation else None
        out[name]["saturated"] = sat is not None
        if sat is not None:
            out[name]["first_saturation_s"] = float(sat)
    return out


def training_block(scenario, gpu_full, gpu_normal, engaged, codesign) -> dict:
    if gpu_full is None:
        return {"slowdown_frac": 0.0}
    # Under the co-design the full GPU controls act only while engaged: blend the slowdown of
    # the ramps-only controls and of the full controls by the engaged share of the horizon.
    frac = (float(np.mean(engaged)) if engaged.size else 0.0) if codesign else 1.0
    blended = {}
    for key, full in gpu_full.slowdown_frac.items():
        normal = float(gpu_normal.slowdown_frac.get(key, 0.0)) if codesign else float(full)
        blended[key] = normal + (float(full) - normal) * frac
    out = {"slowdown_frac": blended.pop("overall", 0.0)}
    if blended:
        out["slowdown_frac_by_job"] = blended
    return out


def add_crashes(training: dict, profile) -> None:
    """Crash costs into the training block: the redone work (time since the last checkpoint)
    adds ``lost_s / running_s`` to each crashed job's slowdown; ``training.crashes`` holds
    count, lost time [s], lost iterations and down time [s] (docs/failures.md)."""
    jobs = profile.meta.get("jobs", {})
    crashed = {name: m["crashes"] for name, m in jobs.items() if "crashes" in m}
    if not crashed:
        return
    n_gpus = profile.groups.groupby("job", sort=False)["n_gpus"].sum()
    by_job = dict(training.get("slowdown_frac_by_job", {}))
    w_all = float(n_gpus.sum())
    for name, c in crashed.items():
        run = float(jobs[name].get("running_s", 0.0))
        frac = c["lost_s"] / run if run > 0 else 0.0
        by_job[name] = float(by_job.get(name, 0.0)) + frac
        training["slowdown_frac"] = float(training.get("slowdown_frac", 0.0)) + (
            frac * float(n_gpus.get(name, 0.0)) / w_all if w_all > 0 else 0.0)
    training["slowdown_frac_by_job"] = by_job
    training["crashes"] = {
        "count": int(sum(c["n_crashes"] for c in crashed.values())),
        "lost_s": float(sum(c["lost_s"] for c in crashed.values())),
        "lost_iterations": float(sum(c["lost_iterations"] for c in crashed.values())),
        "down_s": float(sum(c["down_s"] for c in crashed.values())),
        "per_job": {name: {k: c[k] for k in ("n_crashes", "lost_s", "lost_iterations", "down_s")}
                    for name, c in crashed.items()},
    }


def timeseries_frame(t_s, raw_site, p_load, pf, pf_raw, p_storage, soc, engaged) -> pd.DataFrame:
    cols = {
        "t_s": t_s,
        "p_gpu_mw": raw_site.p_gpu_mw,
        "p_site_mw": raw_site.p_site_mw,
        "p_load_mw": p_load,
        "p_raw_pcc_mw": pf_raw.p_pcc_mw,
        "p_pcc_mw": pf.p_pcc_mw,
        "q_pcc_mvar": pf.q_pcc_mvar,
        "vm_min_pu": pf.vm_min_pu,
        "vm_max_pu": pf.vm_max_pu,
        "vm_pcc_pu": pf.vm_pcc_pu,
        "vm_min_mv_pu": pf.vm_min_mv_pu,
        "vm_min_lv_pu": pf.vm_min_lv_pu,
        "vm_max_lv_pu": pf.vm_max_lv_pu,
        "trafo_loading_percent": pf.trafo_loading_percent,
        "sub_trafo_loading_percent": pf.sub_trafo_loading_percent,
        "lv_trafo_loading_percent": pf.lv_trafo_loading_percent,
        "bess_trafo_loading_percent": pf.bess_trafo_loading_percent,
        "ups_loading_percent": pf.ups_loading_percent,
        "losses_mw": pf.losses_mw,
    }
    for name, s in soc.items():
        cols[f"p_{name}_mw"] = np.asarray(p_storage.get(name, np.zeros(len(t_s))), dtype=float)
        cols[f"soc_{name}_frac"] = np.asarray(s, dtype=float)
    cols["gpu_engaged"] = np.asarray(engaged, dtype=bool)
    return pd.DataFrame(cols)
