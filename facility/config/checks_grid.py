"""Physics checks of the network, the grid events and the grid-impact section.

:mod:`facility.config.checks` runs them with the others.

Each ``check_*`` function returns a list of problems (strings naming key, unit and range).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from facility.config.plausibility import estimate_peak_site_mw
from facility.errors import ScenarioError

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = ["check_grid", "check_grid_events", "check_grid_impact", "grid_impact_warnings"]


def check_grid(s: "Scenario") -> list[str]:
    """The substation must be able to carry the peak site load (within 2x of its rating)."""
    g = s.grid
    out = []
    if g.mv_kv >= g.vn_kv:
        out.append(f"grid.mv_kv = {g.mv_kv:g} kV must be below grid.vn_kv = {g.vn_kv:g} kV")
    if g.lv_kv >= g.mv_kv:
        out.append(f"grid.lv_kv = {g.lv_kv:g} kV must be below grid.mv_kv = {g.mv_kv:g} kV")
    from facility.electrical.library import check_grid_types, load_trafo_type  # no pandapower import

    types = check_grid_types(g)
    out.extend(types)
    if not types:   # a transformer needs a reactance: vkr < vk (pandapower divides by it)
        for pre, type_key in (("trafo", "trafo_type"), ("lv_trafo", "lv_trafo_type")):
            name = getattr(g, type_key)
            if name is not None:
                tt = load_trafo_type(name, key=f"grid.{type_key}")
                vk, vkr, where = tt.vk_percent, tt.vkr_percent, f" (from grid.{type_key} = {name!r})"
            else:
                vk, vkr, where = getattr(g, f"{pre}_vk_percent"), getattr(g, f"{pre}_vkr_percent"), ""
            if vkr >= vk:
                out.append(f"grid.{pre}_vkr_percent = {vkr:g} % must be below grid.{pre}_vk_percent = "
                           f"{vk:g} %{where}: the short-circuit voltage's real part cannot exceed it "
                           f"(the transformer would have no reactance)")
    sn = g.trafo_sn_mva
    if g.trafo_type is not None and not types:
        sn = load_trafo_type(g.trafo_type).sn_mva
    if g.enabled:
        from facility.config.preconditions import check_feeders as feeder_checks
        from facility.config.preconditions import feeder_peaks_mw

        try:
            peaks = feeder_peaks_mw(s)
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
        out.extend(feeder_checks(s))
    return out


def check_grid_events(s: "Scenario") -> list[str]:
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
            from facility.electrical.grid_events import read_voltage_trace  # numpy/pandas only

            try:
                read_voltage_trace(ev.trace_file, f"{key}.trace_file")
            except ScenarioError as exc:
                out.append(str(exc))
    if s.grid_events and any(n.startswith("ups.") for n in s.storage_units()):
        # what the run refuses (facility.cosim.design, grid events stage), refused here already
        out.append(f"ups.technologies = {list(s.ups.technologies)!r} with [[grid_events]]: the UPS transfer "
                   "model runs one UPS battery; set ups.technology to one technology, or drop the "
                   "grid_events")
    if s.grid_events:
        from facility.electrical.library import load_ups_type
        from facility.electrical.sags import UpsSagSettings

        try:
            st = UpsSagSettings.resolve(s.ups, load_ups_type(s.grid.ups_type))
        except ScenarioError:
            return out  # check_grid names the UPS type
        if st.retransfer_vm_pu < st.transfer_vm_pu:
            out.append(f"ups.retransfer_vm_pu = {st.retransfer_vm_pu:g} pu must not be below ups.transfer_vm_pu = "
                       f"{st.transfer_vm_pu:g} pu (with the grid.ups_type's values where unset)")
    return out


def check_grid_impact(s: "Scenario") -> list[str]:
    """``[grid_impact]``: the shaft is a bundled model, the mode set a bundled one or a readable
    mode set file (validate names them), the torsional band's edge lies between the connected
    shaft's electromechanical and lowest torsional mode, a governor has the shaft's turbine
    shares."""
    gi = s.grid_impact
    if not gi.enabled:
        return []
    from facility.grid_impact.library import list_mode_sets, list_shafts

    out = []
    if gi.shaft_model not in list_shafts():
        out.append(f"grid_impact.shaft_model = {gi.shaft_model!r} is not a bundled shaft model "
                   f"(models/grid_impact/): {', '.join(list_shafts())}")
    from facility.config.files import is_explicit_path

    if is_explicit_path(gi.mode_set):
        from facility.grid_impact.library import read_mode_set_file

        try:
            read_mode_set_file(gi.mode_set)
        except ScenarioError as e:
            out.append(str(e))
    elif gi.mode_set not in list_mode_sets():
        out.append(f"grid_impact.mode_set = {gi.mode_set!r} is not a bundled mode set "
                   f"(models/grid_impact/): {', '.join(list_mode_sets())} (or the path of a mode set file, "
                   f"e.g. one facility grid-modes wrote)")
    if not out:
        from facility.grid_impact.connection import connect_shaft, torsional_band_min_hz
        from facility.grid_impact.library import load_shaft

        try:
            torsional_band_min_hz(gi, connect_shaft(gi, load_shaft(gi.shaft_model)))
        except ScenarioError as e:
            out.append(str(e))
    return out


def grid_impact_warnings(s: "Scenario") -> list[str]:
    """Torsional modes above the Nyquist frequency of ``time.dt_s`` (their response is not
    resolved: the metrics see only the modes below it)."""
    gi = s.grid_impact
    if not gi.enabled or check_grid_impact(s):
        return []
    from facility.grid_impact.connection import connect_shaft
    from facility.grid_impact.library import load_shaft

    nyq = 0.5 / s.time.dt_s
    above = [f for f in connect_shaft(gi, load_shaft(gi.shaft_model)).torsional_modes_hz() if f >= nyq]
    if not above:
        return []
    return [f"grid_impact: torsional mode(s) at {', '.join(f'{f:.2f}' for f in above)} Hz lie above the "
            f"Nyquist frequency {nyq:g} Hz of time.dt_s = {s.time.dt_s:g} s: not resolved, their torque "
            f"is missing from the grid_impact metrics (use dt_s <= {0.5 / (1.05 * max(above)):.3g} s)"]
