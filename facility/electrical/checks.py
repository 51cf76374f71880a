"""The checks of a scenario that need the electrical model: the transformer and UPS types it
names, each transformer's short-circuit voltage, the grid's and the transformers' capacity
for the peak site load, and the ``[[grid_events]]`` (voltage traces, the UPS's sag settings).

Each ``check_*`` returns a list of problems (strings naming key, unit and range), like those of
:mod:`facility.config.checks`; :func:`facility.scenario.resolve` runs them with the others. They
take the types as loaded once (``lib``: the scenario's :class:`~facility.config.resolved.Library`
with its domain entries; an entry that could not be loaded is None there, its message in
``lib.unresolved``, reported here where today's check of that entry stands). No pandapower.

May import: :mod:`facility.config`, :mod:`facility.errors`, :mod:`facility.workload` (the
feeders' peaks) and the light modules of :mod:`facility.electrical` (library, sags,
grid_events).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.plausibility import estimate_peak_site_mw
from facility.electrical.grid_events import read_voltage_trace
from facility.electrical.library import _LV_KEYS, _SUB_KEYS
from facility.electrical.sags import UpsSagSettings
from facility.errors import ScenarioError
from facility.workload.checks import check_feeders, feeder_peaks_mw

if TYPE_CHECKING:
    from facility.config.resolved import Library
    from facility.config.schema import GridConfig, Scenario

__all__ = ["check_grid_types", "check_grid", "check_grid_events"]

#: (Library entry, GridConfig key naming its type, the GridConfig keys the type supplies)
_TRAFOS = (("trafo", "trafo_type", _SUB_KEYS), ("lv_trafo", "lv_trafo_type", _LV_KEYS))


def check_grid_types(g: "GridConfig", lib: "Library") -> list[str]:
    """The types exist, the scenario does not set keys that a type already supplies, and each
    transformer type is for the network's voltages."""
    out = []
    defaults = type(g).model_fields
    for entry, type_key, keys in _TRAFOS:
        name = getattr(g, type_key)
        if name is None:
            continue
        if entry in lib.unresolved:
            out.append(lib.unresolved[entry])
            continue
        tt = getattr(lib, entry)
        for key, attr in keys.items():
            val = getattr(g, key)
            if val != defaults[key].default and val != getattr(tt, attr):
                out.append(f"grid.{key} = {val:g} conflicts with grid.{type_key} = {name!r} "
                           f"({attr} = {getattr(tt, attr):g}); set one or the other")
        hv, lv = (g.vn_kv, g.mv_kv) if type_key == "trafo_type" else (g.mv_kv, g.lv_kv)
        if abs(tt.vn_hv_kv / hv - 1) > 0.01 or abs(tt.vn_lv_kv / lv - 1) > 0.01:
            out.append(f"grid.{type_key} = {name!r} is a {tt.vn_hv_kv:g}/{tt.vn_lv_kv:g} kV transformer; "
                       f"the network needs {hv:g}/{lv:g} kV")
    if "ups" in lib.unresolved:
        out.append(lib.unresolved["ups"])
    return out


def check_grid(s: "Scenario", lib: "Library") -> list[str]:
    """The types (:func:`check_grid_types`); every transformer has a reactance; the utility and
    the substation can carry the peak site load (within 2x of the transformers' rating), and so
    can every feeder's MV/LV transformer (:func:`facility.workload.checks.check_feeders`)."""
    g = s.grid
    out = []
    types = check_grid_types(g, lib)
    out.extend(types)
    if not types:   # a transformer needs a reactance: vkr < vk (pandapower divides by it)
        for entry, type_key, _ in _TRAFOS:
            pre = entry
            name = getattr(g, type_key)
            if name is not None:
                tt = getattr(lib, entry)
                vk, vkr, where = tt.vk_percent, tt.vkr_percent, f" (from grid.{type_key} = {name!r})"
            else:
                vk, vkr, where = getattr(g, f"{pre}_vk_percent"), getattr(g, f"{pre}_vkr_percent"), ""
            if vkr >= vk:
                out.append(f"grid.{pre}_vkr_percent = {vkr:g} % must be below grid.{pre}_vk_percent = "
                           f"{vk:g} %{where}: the short-circuit voltage's real part cannot exceed it "
                           f"(the transformer would have no reactance)")
    sn = g.trafo_sn_mva
    if g.trafo_type is not None and not types:
        sn = lib.trafo.sn_mva
    if g.enabled:
        try:
            peaks = feeder_peaks_mw(s, lib)
            peak = sum(peaks) if peaks else estimate_peak_site_mw(s)
        except ScenarioError:
            return out
        if g.sc_mva < peak:
            out.append(
                f"grid.sc_mva = {g.sc_mva:g} MVA is below the peak site load of up to {peak:.1f} MW "
                f"(short-circuit ratio {g.sc_mva / peak:.2g} < 1): the utility cannot deliver it "
                f"(voltage collapse); allowed: sc_mva ≥ {peak:.1f} MVA (real connections: ≥ 3x)")
        if sn is not None and peak > 2.0 * sn * g.n_trafos:
            src = f" (from grid.trafo_type = {g.trafo_type!r})" if g.trafo_type is not None else ""
            out.append(
                f"grid.trafo_sn_mva = {sn:g} MVA{src} x grid.n_trafos = {g.n_trafos} transformer(s) "
                f"cannot carry the peak site load of up to {peak:.1f} MW (jobs.*.n_gpus at full "
                f"power, site.non_gpu_frac, site.pue, site.base_load_mw); allowed: trafo_sn_mva ≥ "
                f"{peak / 2.0 / g.n_trafos:.1f} MVA (2x overload at most)"
            )
        out.extend(check_feeders(s, lib))
    return out


def check_grid_events(s: "Scenario", lib: "Library") -> list[str]:
    """Each sag starts inside the horizon and is resolved by dt_s; a voltage trace is readable;
    the UPS's retransfer voltage is not below its transfer voltage."""
    out = []
    dt, horizon = s.time.dt_s, s.time.horizon_s
    for i, ev in enumerate(s.grid_events):
        key = f"grid_events.{i}"
        if ev.start_s >= horizon:
            out.append(f"{key}.start_s = {ev.start_s:g} s is not inside the horizon; allowed: < time.horizon_s = "
                       f"{horizon:g} s")
        if ev.duration_s is not None and ev.duration_s < dt - 1e-12:
            out.append(f"{key}.duration_s = {ev.duration_s:g} s is shorter than time.dt_s = {dt:g} s; allowed: "
                       f">= {dt:g} s")
        if ev.trace_file is not None:
            try:
                read_voltage_trace(ev.trace_file, f"{key}.trace_file")
            except ScenarioError as exc:
                out.append(str(exc))
    if s.grid_events and any(n.startswith("ups.") for n in s.storage_units()):
        # what the run refuses (facility.cosim.design, grid events stage), refused here already
        out.append(f"ups.technologies = {list(s.ups.technologies)!r} with [[grid_events]]: the UPS transfer "
                   "model runs one UPS battery; set ups.technology to one technology, or drop the "
                   "grid_events")
    if s.grid_events and lib.ups is not None:   # an unknown type: check_grid names it
        st = UpsSagSettings.resolve(s.ups, lib.ups)
        if st.retransfer_vm_pu < st.transfer_vm_pu:
            out.append(f"ups.retransfer_vm_pu = {st.retransfer_vm_pu:g} pu must not be below ups.transfer_vm_pu = "
                       f"{st.transfer_vm_pu:g} pu (with the grid.ups_type's values where unset)")
    return out
