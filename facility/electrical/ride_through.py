"""Voltage ride-through: judge a run's grid events against a spec's curve, and size the UPS
battery for the curve's worst sags.

A ride-through curve (``[spec.ride_through]``, e.g. ERCOT NOGRR282) lists bands by their upper
voltage edge ``band_max_vm_pu[i]`` and the time ``band_min_ride_s[i]`` the load must stay
connected while the voltage stays below that edge. For each excursion of the PCC voltage below
``recovery_vm_pu`` (a "sag"), the load must stay connected from the sag's start

* until the first step at which the voltage has been below some edge longer than its band
  allows (the sag left the curve: from there the load may disconnect), or
* when the sag stays within the curve, through the sag and ``max_recovery_s`` after it,

and, for a sag within the curve, draw again at least ``recovery_frac`` of what it would have
drawn without the sag within ``max_recovery_s`` of the voltage's return above
``recovery_vm_pu``. "Disconnected" is load moved off the grid: IT load transferred to the UPS
battery (or lost) and cooling whose contactors dropped out; a load that merely follows the
voltage (constant impedance, the rectifier's current limit) stays connected.
"""

from __future__ import annotations

import numpy as np

from facility.electrical.sags import UpsSagSettings, time_true_s, ups_grid_share, ups_need_mw

__all__ = ["ride_through_assessment", "ups_energy_for_curve", "curve_worst_sags"]

#: Disconnected power below which a load counts as connected. [MW]
CONNECTED_TOL_MW = 1e-6


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    m = np.asarray(mask, dtype=bool)
    d = np.diff(np.r_[0, m.astype(np.int8), 0])
    return list(zip(np.flatnonzero(d == 1).tolist(), np.flatnonzero(d == -1).tolist()))


def ride_through_assessment(vm_pu: np.ndarray, p_pcc_mw: np.ndarray, p_ref_mw: np.ndarray,
                            disconnected_mw: np.ndarray, dt_s: float, rt=None) -> tuple[dict, dict, dict]:
    """Per-sag ride-through figures, the compliance rows and the undecided limits.

    Parameters
    ----------
    vm_pu : numpy.ndarray, shape (T,)
        PCC voltage of the grid events. [pu]
    p_pcc_mw, p_ref_mw : numpy.ndarray, shape (T,)
        PCC power with the events and without them (the same run otherwise). [MW]
    disconnected_mw : numpy.ndarray, shape (T,)
        Load moved off the grid (transferred to the UPS battery, lost, cooling dropped out). [MW]
    dt_s : float
        Time step. [s]
    rt : RideThroughSpec, optional
        The spec's curve; none = figures only, no rows.

    Returns
    -------
    block : dict
        ``n_sags``, ``max_load_loss_mw`` (largest p_ref - p_pcc) [MW], ``max_disconnected_mw``
        [MW], ``sags.<i>``: ``start_s``, ``duration_s`` [s], ``min_vm_pu`` [pu],
        ``within_curve``, ``connected`` (where a curve is given), ``recovery_s`` [s],
        ``load_loss_mw`` [MW], ``disconnected_mw`` [MW].
    rows : dict
        ``ride_through_connected``, ``ride_through_recovery``, ``ride_through_max_load_loss_mw``
        (each where the spec sets it and the run decides it).
    undecided : dict
        ``{row: True}`` for rows the run cannot decide (the horizon ends before the recovery
        window closes).
    """
    vm = np.asarray(vm_pu, dtype=float)
    p = np.asarray(p_pcc_mw, dtype=float)
    ref = np.asarray(p_ref_mw, dtype=float)
    disc = np.asarray(disconnected_mw, dtype=float)
    n = vm.size
    v_rec = rt.recovery_vm_pu if rt is not None else 0.9
    sags = _runs(vm < v_rec - 1e-12)
    loss = ref - p
    block: dict = {"n_sags": len(sags), "max_load_loss_mw": float(max(0.0, loss.max())) if n else 0.0,
                   "max_disconnected_mw": float(disc.max()) if n else 0.0, "sags": {}}
    connected_all, recovery_ok, recovery_undecided = True, True, False
    eps = 1e-9 * dt_s
    for i, (s, e) in enumerate(sags):
        nxt = sags[i + 1][0] if i + 1 < len(sags) else n
        info = {"start_s": s * dt_s, "duration_s": (e - s) * dt_s, "min_vm_pu": float(vm[s:e].min()),
                "load_loss_mw": float(max(0.0, loss[s:nxt].max())),
                "disconnected_mw": float(disc[s:nxt].max())}
        if rt is not None:
            seg = vm[s:e]
            first_out = e - s
            for edge, ride in zip(rt.band_max_vm_pu, rt.band_min_ride_s):
                over = np.flatnonzero(time_true_s(seg < edge - 1e-12, dt_s) > ride + eps)
                if over.size:
                    first_out = min(first_out, int(over[0]))
            within = first_out == e - s
            after = int(round((rt.max_recovery_s or 0.0) / dt_s))
            req_end = min(nxt, e + after) if within else s + first_out
            connected = bool(disc[s:req_end].max(initial=0.0) <= CONNECTED_TOL_MW)
            info["within_curve"] = within
            info["connected"] = connected
            connected_all &= connected
            if within and rt.recovery_frac is not None:
                ok_k = np.flatnonzero(p[e:nxt] >= rt.recovery_frac * ref[e:nxt] - 1e-9)
                if ok_k.size:
                    rec_s = float(ok_k[0]) * dt_s
                    info["recovery_s"] = rec_s
                    recovery_ok &= rec_s <= rt.max_recovery_s + eps
                elif (nxt - e) * dt_s >= rt.max_recovery_s - eps:
                    info["recovery_s"] = (nxt - e) * dt_s  # not recovered before the next sag / the end
                    info["recovered"] = False
                    recovery_ok = False
                else:
                    recovery_undecided = True
        block["sags"][str(i)] = info
    rows: dict = {}
    undecided: dict = {}
    if rt is not None and sags:
        rows["ride_through_connected"] = bool(connected_all)
        if rt.recovery_frac is not None:
            if recovery_undecided and recovery_ok:
                undecided["ride_through_recovery"] = True
            else:
                rows["ride_through_recovery"] = bool(recovery_ok)
        if rt.max_load_loss_mw is not None:
            rows["ride_through_max_load_loss_mw"] = bool(block["max_load_loss_mw"] <= rt.max_load_loss_mw + 1e-9)
    return block, rows, undecided


def curve_worst_sags(rt) -> list[tuple[float, float]]:
    """The worst sag each band of the curve asks the load to ride through.

    Returns
    -------
    list of (float, float)
        ``(retained voltage [pu], duration [s])``: the band's lower edge (0 for the last band)
        held for the band's ``band_min_ride_s``.
    """
    edges = list(rt.band_max_vm_pu[1:]) + [0.0]
    return [(float(v), float(d)) for v, d in zip(edges, rt.band_min_ride_s)]


def ups_energy_for_curve(p_it_mw: float, ups_sn_mva: float, settings: UpsSagSettings, rt, dt_s: float = 0.001,
                         eff_discharge_frac: float = 1.0) -> dict:
    """UPS battery energy and power the curve's worst sags take (a battery without limits).

    Each of :func:`curve_worst_sags` is run through the UPS model (:func:`ups_grid_share`,
    :func:`ups_need_mw`) from 1 pu, through its retransfer and walk-in; the battery supplies
    the need. Closed form for a transfer: E = P_it (d - t_transfer + retransfer_delay_s +
    walk_in_s / 2) / eff_discharge; for a ride-through on the rectifier's current limit:
    E = (P_it - I_max vm S) d / eff_discharge when positive.

    Parameters
    ----------
    p_it_mw : float
        IT load behind the UPSs (use the peak). [MW]
    ups_sn_mva : float
        Total UPS rating. [MVA]
    settings : UpsSagSettings
    rt : RideThroughSpec
    dt_s : float
        Step of the calculation. [s]
    eff_discharge_frac : float
        Battery discharge efficiency. [frac]

    Returns
    -------
    dict
        ``e_mwh`` and ``p_mw`` (each the largest over the sags) [MWh], [MW], ``worst_band`` (the
        index of the largest energy),
        ``transfers`` (number of sags that transfer), and per band ``bands.<i>.e_mwh``.
    """
    out: dict = {"bands": {}}
    best = (-1.0, 0)
    p_max = 0.0
    n_transfers = 0
    for i, (v, d) in enumerate(curve_worst_sags(rt)):
        pre = 0.1
        post = settings.retransfer_delay_s + settings.walk_in_s + 1.0
        t = np.arange(0.0, pre + d + post, dt_s)
        vm = np.where((t >= pre - 1e-12) & (t < pre + d - 1e-12), v, 1.0)
        share, _, transfers = ups_grid_share(vm, dt_s, settings)
        n_transfers += bool(transfers)
        _, need = ups_need_mw(np.full((t.size, 1), p_it_mw), vm, share, np.array([ups_sn_mva]),
                              settings.max_input_current_pu)
        e = float(need.sum() * dt_s / 3600.0 / eff_discharge_frac)
        pk = float(need.max())
        out["bands"][str(i)] = {"vm_pu": v, "duration_s": d, "e_mwh": e, "p_mw": pk, "transfers": bool(transfers)}
        if e > best[0]:
            best = (e, i)
        p_max = max(p_max, pk)
    out.update(e_mwh=max(0.0, best[0]), p_mw=p_max, worst_band=best[1], transfers=n_transfers)
    return out
