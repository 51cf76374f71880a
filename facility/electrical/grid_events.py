"""Apply a scenario's ``[[grid_events]]`` to a run: the loads and the UPS battery the power flow
then sees, the battery's trajectory, and the time-series columns (physics in
:mod:`facility.electrical.sags`).

Energy bookkeeping per step (consumer frame): the IT load behind each feeder's UPS splits into
what the grid gives (``grid``), what the battery supplies and what is lost. The power flow gets
``grid + cooling`` per feeder and, as UPS battery power, the battery's charging only (its
discharge feeds the DC link, not the AC bus); so p_pcc = p_load + Σ p_storage + losses still
holds with p_load = IT served + cooling drawn and p_ups = the battery's power.

Storage inside a rack that lost power cannot run: the rack storage's power is scaled by the
share of the IT load still served in each step (its SoC replayed from the changed power), and
the site never exports: where the served load plus every storage's power would fall below
zero, the storages that discharge give up the difference (shared by their discharge). The
closed loop is not re-run through the event: what the idle rack storage did not deliver
stays as an SoC offset after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from facility.config import files
from facility.electrical.sags import (UpsSagSettings, battery_support, cooling_response, sag_voltage_pu,
                                      ups_grid_share, ups_need_mw)
from facility.errors import ScenarioError
from facility.workload.trace_format import CELL_TIME_UNITS, first_bad_cell, split_cell_units

__all__ = ["GridEventResult", "apply_grid_events", "read_voltage_trace", "ups_sag_settings"]


@dataclass
class GridEventResult:
    """What :func:`apply_grid_events` returns.

    Attributes
    ----------
    vm_pu : numpy.ndarray, shape (T,)
        Retained PCC voltage of the events. [pu]
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Per-feeder AC load for the power flow (IT from the grid + cooling drawn). [MW]
    p_storage_pf_mw : dict
        Storage powers for the power flow (UPS battery: its charging through the rectifier). [MW]
    p_storage_mw, soc_frac : dict
        Storage powers and SoC to record (UPS battery: its own power, discharge < 0). [MW], [frac]
    p_load_mw : numpy.ndarray, shape (T,)
        Load served: IT load minus lost + cooling drawn. [MW]
    disconnected_mw : numpy.ndarray, shape (T,)
        Load moved off the grid: IT transferred to the battery or lost, cooling dropped out. [MW]
    p_it_mw : numpy.ndarray, shape (T,)
        IT load behind the UPSs without the events. [MW]
    columns : dict
        Time-series columns: ``vm_event_pu``, ``ups_on_battery``, ``p_it_lost_mw``,
        ``p_ups_supply_mw``, ``p_cooling_drawn_mw``.
    info : dict
        ``ups_transfers``, ``ups_battery_mwh`` (energy the battery supplied) [MWh],
        ``it_lost_mwh`` [MWh], ``max_it_lost_mw`` [MW], ``cooling_dropout_s`` [s].
    events : list of dict
        events.json entries (sag, transfer, retransfer, battery empty).
    changed : list of str
        Storages whose power the event changed (their ``soc_frac`` entry is still the
        closed loop's: the caller replays it).
    """

    vm_pu: np.ndarray
    p_feeder_mw: np.ndarray
    p_storage_pf_mw: dict
    p_storage_mw: dict
    soc_frac: dict
    p_load_mw: np.ndarray
    disconnected_mw: np.ndarray
    p_it_mw: np.ndarray
    columns: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    events: list = field(default_factory=list)
    changed: list = field(default_factory=list)


#: Unit suffixes a vm_pu cell may carry (``0.7 pu``, ``70 %``), pu per unit.
VM_CELL_UNITS = {"pu": 1.0, "p.u.": 1.0, "%": 0.01}


def _cells(col, name: str, unit: str, units: dict, key: str, path: str) -> np.ndarray:
    """A column's numbers, each cell converted by its own unit suffix (a bare number is in
    ``unit``); a cell that is no number, or has a unit not in ``units``, is refused by row,
    value and the unit expected."""
    if pd.api.types.is_numeric_dtype(col):
        return col.to_numpy(dtype=float)
    text = col.astype(str).str.strip()
    v, unknown, suffix = split_cell_units(text, 1.0, units)
    bad = first_bad_cell(v, unknown, suffix, "is not accepted there")
    if bad is not None:
        i, why = bad
        raise ScenarioError(
            f"{key} = {files.shown(path)}: column {name} at data row {i + 1} reads {files.shown(col.iloc[i])}: "
            f"{why}; expected a bare number in {unit} or one with a unit: {', '.join(units)}")
    return v


def read_voltage_trace(path: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    """A recorded voltage: CSV with ``t_s`` [s] (increasing) and ``vm_pu`` [pu] columns.

    Raises
    ------
    ScenarioError
        The file is unreadable, lacks a column, or holds times not increasing or voltages
        outside [0, 1.5] pu; the message names ``key``.
    """
    p = files.check_file(path, key=key, what="voltage trace (CSV with t_s, vm_pu)", max_bytes=files.MAX_CSV_BYTES)
    try:
        df = pd.read_csv(p, comment="#")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{key} = {files.shown(path)}: not a readable CSV ({exc})") from None
    cols = {c.strip(): c for c in df.columns}
    missing = [c for c in ("t_s", "vm_pu") if c not in cols]
    if missing:
        raise ScenarioError(f"{key} = {files.shown(path)}: missing column(s) {', '.join(missing)} "
                            f"(has: {', '.join(map(str, df.columns))}); a voltage trace needs t_s [s] and vm_pu [pu]")
    t = _cells(df[cols["t_s"]], "t_s", "s", CELL_TIME_UNITS, key, path)
    v = _cells(df[cols["vm_pu"]], "vm_pu", "pu", VM_CELL_UNITS, key, path)
    if t.size < 2 or not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
        raise ScenarioError(f"{key} = {files.shown(path)}: needs at least 2 rows of finite numbers in t_s [s] and vm_pu [pu]")
    if np.any(np.diff(t) <= 0):
        raise ScenarioError(f"{key} = {files.shown(path)}: t_s [s] must increase strictly (row "
                            f"{int(np.flatnonzero(np.diff(t) <= 0)[0]) + 2})")
    if v.min() < 0 or v.max() > 1.5:
        raise ScenarioError(f"{key} = {files.shown(path)}: vm_pu = {v.min():g}..{v.max():g} pu; allowed: 0 to 1.5 pu")
    return t, v


def _dark_and_no_export(p_store: dict, p_store_pf: dict, storages: dict, it_mw: np.ndarray,
                        lost_mw: np.ndarray, p_grid_mw: np.ndarray) -> list[str]:
    """Rack storage idle in the racks that lost power, and no export at the site: the storage
    powers (``p_store``, ``p_store_pf``) changed in place; returns the names changed. [MW]"""
    served = np.clip(1.0 - np.divide(lost_mw, it_mw, out=np.zeros_like(it_mw), where=it_mw > 0), 0.0, 1.0)
    new = {n: np.asarray(p_store[n], dtype=float) * served for n in p_store
           if n.split(".", 1)[0] == "rack_storage" and n in storages}
    # no export: the lossless site power (grid-fed load + storage) stays at or above zero
    cur = {n: new.get(n, np.asarray(p_store_pf[n], dtype=float)) for n in p_store_pf}
    site = p_grid_mw + sum(cur.values(), np.zeros_like(p_grid_mw))
    deficit = np.maximum(-site, 0.0)
    if np.any(deficit > 1e-12):
        dis = {n: np.maximum(-cur[n], 0.0) for n in cur if n != "ups" and n in storages}
        tot = sum(dis.values(), np.zeros_like(p_grid_mw))
        for n, d in dis.items():
            give = np.divide(d, tot, out=np.zeros_like(tot), where=tot > 0) * np.minimum(deficit, tot)
            if np.any(give > 0):
                new[n] = cur[n] + give
    changed = []
    for n, p in new.items():
        if not np.array_equal(p, p_store[n]):
            p_store[n] = p_store_pf[n] = p
            changed.append(n)
    return changed


def ups_sag_settings(scenario) -> UpsSagSettings:
    """The UPS's sag settings: ``[ups]`` keys over ``grid.ups_type``'s values (the resolved
    scenario's ``library.ups``; before resolving, :meth:`UpsSagSettings.resolve` with the type)."""
    return UpsSagSettings.resolve(scenario.ups, scenario.library.ups)


def apply_grid_events(scenario, t_s: np.ndarray, p_feeder_mw: np.ndarray, cooling_frac: np.ndarray,
                      ups_sn_mva: np.ndarray, p_storage_mw: dict, soc_frac: dict, ups_params=None,
                      caps: dict | None = None, storages: dict | None = None) -> GridEventResult:
    """The run under the scenario's grid events.

    Parameters
    ----------
    scenario : Scenario
        With ``grid_events``, ``[ups]`` sag keys, ``site.cooling_*``.
    t_s : numpy.ndarray, shape (T,)
        Step times. [s]
    p_feeder_mw : numpy.ndarray, shape (T, F)
        Per-feeder site load without events (IT + cooling). [MW]
    cooling_frac : numpy.ndarray, shape (T,)
        Share of the site load that is cooling (not on the UPS). [frac]
    ups_sn_mva : numpy.ndarray, shape (F,)
        UPS rating per feeder. [MVA]
    p_storage_mw, soc_frac : dict
        The controllers' storage powers and SoC without events. [MW], [frac]
    ups_params : StorageParams, optional
        The UPS battery (none = no battery: IT load the UPS cannot take from the grid is lost).
    caps : dict, optional
        The network's limits for storage (``max_site_p_mw``, ``max_feeder_p_mw`` [MW],
        :func:`facility.electrical.limits.storage_caps`): the recharge stays within their
        headroom over the load and the other storages; none = unlimited.
    storages : dict of str to StorageParams, optional
        Every storage of ``p_storage_mw``: with it the event changes their power (rack storage
        in dark racks, discharge that would export; listed in ``changed``, whose SoC the caller
        replays with :func:`facility.storage.soc.replay_delivered`); none = powers kept.

    Returns
    -------
    GridEventResult
    """
    dt = scenario.time.dt_s
    t = np.asarray(t_s, dtype=float)
    traces = {i: read_voltage_trace(ev.trace_file, f"grid_events.{i}.trace_file")
              for i, ev in enumerate(scenario.grid_events) if ev.trace_file is not None}
    vm = sag_voltage_pu(t, scenario.grid_events, traces)
    settings = ups_sag_settings(scenario)
    p = np.asarray(p_feeder_mw, dtype=float)
    c = np.clip(np.asarray(cooling_frac, dtype=float), 0.0, 1.0)[:, None]
    cool = p * c
    it = p - cool
    site = scenario.site
    cool_drawn, tripped = cooling_response(cool, vm, dt, site.cooling_vm_exponent, site.cooling_dropout_vm_pu,
                                           site.cooling_restart_s)
    share, on_battery, transfers = ups_grid_share(vm, dt, settings)
    grid_it, need_f = ups_need_mw(it, vm, share, ups_sn_mva, settings.max_input_current_pu)
    need = need_f.sum(axis=1)
    has = ups_params is not None
    headroom = None
    if has and caps:
        # the recharge rides on top of the load and of the other storages' charging
        others = sum((np.asarray(v, dtype=float) for k, v in p_storage_mw.items() if k != "ups"), np.zeros(t.size))
        ctl_ups = np.maximum(np.asarray(p_storage_mw.get("ups", np.zeros(t.size)), dtype=float), 0.0)
        rooms = []
        if caps.get("max_site_p_mw") is not None:
            rooms.append(caps["max_site_p_mw"] - p.sum(axis=1))
        if caps.get("max_feeder_p_mw") is not None:
            rooms.append(np.maximum(caps["max_feeder_p_mw"] - p, 0.0).sum(axis=1))
        if rooms:
            headroom = np.maximum(np.minimum.reduce(rooms) - others - ctl_ups, 0.0)
    bs = battery_support(
        need, dt,
        p_rated_mw=ups_params.p_rated_mw if has else 0.0, e_rated_mwh=ups_params.e_rated_mwh if has else 0.0,
        eff_charge_frac=ups_params.eff_charge_frac if has else 1.0,
        eff_discharge_frac=ups_params.eff_discharge_frac if has else 1.0,
        floor_soc_frac=(ups_params.min_soc_frac - ups_params.reserve_frac) if has else 0.0,
        recharge_frac=settings.recharge_frac,
        p_ctl_mw=p_storage_mw.get("ups") if has else None, soc_ctl_frac=soc_frac.get("ups") if has else None,
        initial_soc_frac=ups_params.initial_soc_frac if has else 1.0, max_recharge_mw=headroom)
    # lost IT load spread over the feeders in proportion to their need
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(need[:, None] > 0, need_f / need[:, None], 0.0)
    lost_f = w * bs.lost_mw[:, None]
    p_pf = grid_it + cool_drawn
    p_store = dict(p_storage_mw)
    p_store_pf = dict(p_storage_mw)
    soc = dict(soc_frac)
    if has:
        p_store["ups"] = bs.p_mw
        p_store_pf["ups"] = bs.p_mw + bs.supplied_mw  # the battery's discharge stays inside the UPS
        soc["ups"] = bs.soc_frac
    changed = (_dark_and_no_export(p_store, p_store_pf, storages, it.sum(axis=1), bs.lost_mw, p_pf.sum(axis=1))
               if storages else [])
    p_load = (it - lost_f).sum(axis=1) + cool_drawn.sum(axis=1)
    transferred = (it * (1.0 - share)[:, None]).sum(axis=1)
    disconnected = np.maximum(transferred, bs.lost_mw) + np.where(tripped, cool.sum(axis=1), 0.0)
    h = dt / 3600.0
    info = {"ups_transfers": len(transfers), "ups_battery_mwh": float(bs.supplied_mw.sum() * h),
            "it_lost_mwh": float(bs.lost_mw.sum() * h), "max_it_lost_mw": float(bs.lost_mw.max(initial=0.0)),
            "cooling_dropout_s": float(tripped.sum() * dt), "min_vm_pu": float(vm.min(initial=1.0))}
    for k, v in settings.__dict__.items():
        info[f"ups_{k}"] = float(v)
    events = []
    for i, ev in enumerate(scenario.grid_events):
        detail = (f"voltage sag to {ev.depth_pu:g} pu for {ev.duration_s:g} s" if ev.trace_file is None
                  else f"recorded voltage trace {ev.trace_file}")
        events.append({"t_s": float(ev.start_s), "kind": "grid_event", "detail": f"grid_events.{i}: {detail}"})
    for a, b in transfers:
        events.append({"t_s": float(t[a]), "kind": "ups_transfer",
                       "detail": f"UPS transferred {transferred[a]:.3g} MW of IT load to its battery "
                                 f"(voltage below {settings.transfer_vm_pu:g} pu for over {settings.transfer_delay_s:g} s)"})
        if b < t.size:
            events.append({"t_s": float(t[b]), "kind": "ups_retransfer",
                           "detail": f"UPS walks its load back to the grid over {settings.walk_in_s:g} s"})
    for k in bs.empty_steps:
        events.append({"t_s": float(t[k]), "kind": "ups_battery_empty",
                       "detail": f"UPS battery empty: {bs.lost_mw[k]:.3g} MW of IT load lost"})
    lost_runs = np.flatnonzero(np.diff(np.r_[0, (bs.lost_mw > 1e-9).astype(np.int8)]) == 1)
    if lost_runs.size and not bs.empty_steps:
        k = int(lost_runs[0])
        events.append({"t_s": float(t[k]), "kind": "it_load_lost",
                       "detail": f"{bs.lost_mw[k]:.3g} MW of IT load lost (UPS battery power or energy too small"
                                 f"{'' if has else '; ups.enabled = false: no battery'})"})
    columns = {"vm_event_pu": vm, "ups_on_battery": on_battery, "p_it_lost_mw": bs.lost_mw,
               "p_ups_supply_mw": bs.supplied_mw, "p_cooling_drawn_mw": cool_drawn.sum(axis=1)}
    return GridEventResult(vm_pu=vm, p_feeder_mw=p_pf, p_storage_pf_mw=p_store_pf, p_storage_mw=p_store,
                           soc_frac=soc, p_load_mw=p_load, disconnected_mw=disconnected, p_it_mw=it.sum(axis=1), columns=columns,
                           info=info, events=events, changed=changed)
