"""Electrical limits as engineering checks: what the network carries, and where a run breaks it.

Limits (``[grid]``): the voltage band of the PCC and MV buses (``min_vm_pu`` / ``max_vm_pu``,
default 0.95–1.05 pu, ANSI C84.1 Range A at the service point), the band of the LV buses
(``min_lv_vm_pu`` / ``max_lv_vm_pu``, default 0.90–1.10 pu, IEC 60038 / EN 50160 LV supply:
these buses are the UPS inputs and the BESS inverter terminal; the double-conversion UPS
regulates the rack bus behind it), every transformer's loading (``max_trafo_loading_percent``,
pandapower's current-based loading) and every UPS's loading (``max_ups_loading_percent``,
|P_out| / S_ups).

:func:`network_limits` finds what the network *carries* within those limits, on the network
itself: a batch power flow with every feeder's load scaled from zero in proportion to its
closed-form capacity (:func:`feeder_p_max_mw`, at 1 pu) up to the first limit reached:

* ``feeder_capacity_mw``: the UPS-output power of all feeders together (site load + rack
  storage + UPS battery) at which a feeder transformer, a UPS or an LV voltage reaches its
  limit;
* ``site_capacity_mw``: the lossless site power (site load + all storage) at which a
  substation transformer or the PCC / MV voltage reaches its limit;
* ``bess_capacity_mw``: the BESS power at which its transformer reaches its limit (feeders
  loaded at their capacity, so the MV voltage is at its lowest).

Each keeps :data:`CAPACITY_MARGIN_FRAC` in reserve. The controllers and the optimizer keep the
storage power within these headrooms
(``grid.limit_storage``); :func:`electrical_compliance` and :func:`violation_events` check
the power flow of the run against the limits themselves, so a residual violation (a
capacity is an interpolation on one load distribution) is reported, never hidden. Reverse
flow (discharge beyond the load) counts against the same ratings; the model has no
no-export rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from facility.electrical.powerflow import run_power_flow
from facility.errors import PowerFlowError

__all__ = ["NetworkLimits", "network_limits", "storage_caps", "feeder_p_max_mw", "ups_output_for_input_mw",
           "limit_rows", "electrical_compliance", "violation_events", "violation_lines",
           "COMPLIANCE_ABS_TOL"]

#: Tolerance of the electrical compliance rows. [pu], [%]
COMPLIANCE_ABS_TOL = 1e-6
#: Load scale factors of the capacity sweep (relative to the closed-form capacities).
_SWEEP = np.concatenate([np.linspace(0.0, 0.8, 9), np.linspace(0.81, 1.3, 50), np.linspace(1.32, 2.0, 35)])
#: Share of each capacity kept in reserve: the capacity is found on one load distribution by
#: interpolation between sweep points, the run's distribution differs a little. [frac]
CAPACITY_MARGIN_FRAC = 0.005
#: Events listed per limit before they are only counted.
MAX_EVENTS_PER_LIMIT = 20


@dataclass(frozen=True)
class NetworkLimits:
    """What the network carries within its electrical limits (consumer frame, |P| bounds).

    Attributes
    ----------
    feeder_p_max_mw : numpy.ndarray, shape (F,)
        UPS-output active power each feeder carries at its limits (the shape of the storage
        split, :func:`facility.electrical.powerflow.storage_shares`); sums to
        ``feeder_capacity_mw``. [MW]
    feeder_capacity_mw : float
        Site load + rack storage + UPS battery at the UPS outputs, all feeders together. [MW]
    site_capacity_mw : float
        Lossless site power: site load + every storage. [MW]
    bess_capacity_mw : float
        BESS power its transformer carries (inf without a BESS). [MW]
    binding : dict of str
        Which limit sets each capacity (``feeder``, ``site``, ``bess``).
    """

    feeder_p_max_mw: np.ndarray
    feeder_capacity_mw: float
    site_capacity_mw: float
    bess_capacity_mw: float
    binding: dict

    def as_metrics(self) -> dict:
        """The finite capacities for ``metrics.json`` (``electrical``; none without a limit). [MW]"""
        out = {"feeder_capacity_mw": self.feeder_capacity_mw, "site_capacity_mw": self.site_capacity_mw,
               "bess_capacity_mw": self.bess_capacity_mw}
        return {k: float(v) for k, v in out.items() if math.isfinite(v)}


def ups_output_for_input_mw(p_in_mw: np.ndarray, sn_mva: np.ndarray, eff_rated_frac: float,
                            shares: tuple[float, float, float]) -> np.ndarray:
    """UPS output power whose AC input is ``p_in_mw`` (inverse of :func:`ups_input_mw`, P ≥ 0). [MW]

    Solves P_in = S x + L S (a0 + a1 x + a2 x²), x = P_out / S, L = 1/eff − 1, for x ≥ 0.
    """
    a0, a1, a2 = shares
    s = np.asarray(sn_mva, dtype=float)
    p = np.asarray(p_in_mw, dtype=float)
    loss = 1.0 / eff_rated_frac - 1.0
    qa, qb, qc = loss * a2 * s, (1.0 + loss * a1) * s, loss * a0 * s - p
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(qa > 0, (-qb + np.sqrt(np.maximum(qb * qb - 4 * qa * qc, 0.0))) / (2 * qa), -qc / qb)
    return np.maximum(x, 0.0) * s


def feeder_p_max_mw(fn) -> np.ndarray:
    """Closed-form UPS-output power each feeder carries at 1 pu. [MW]

    min(k_ups S_ups, P_out whose UPS input loads the feeder transformer to k_tr at the
    power factor of the rack loads), k = the loading limits / 100.
    """
    g = fn.grid
    k_tr = g.max_trafo_loading_percent / 100.0
    k_ups = g.max_ups_loading_percent / 100.0
    pf = 1.0 / math.sqrt(1.0 + fn.tan_phi ** 2)
    p_in_max = k_tr * fn.lv_trafo_sn_mva * pf
    p_tr = ups_output_for_input_mw(p_in_max, fn.ups_sn_mva, fn.ups_eff_rated_frac, fn.ups_shares)
    return np.minimum(k_ups * fn.ups_sn_mva, p_tr)


def _first_crossing(x: np.ndarray, ok: np.ndarray, value: np.ndarray | None = None,
                    limit: float | None = None) -> float | None:
    """Largest x before the first step that breaks (linear interpolation of ``value`` to
    ``limit`` inside the breaking interval); None if no step breaks; criteria already broken
    at the first point (no load) are ignored (None)."""
    if not ok[0]:
        return None
    bad = np.flatnonzero(~ok)
    if bad.size == 0:
        return None
    j = int(bad[0])
    if value is None or limit is None or value[j] == value[j - 1]:
        return float(x[j - 1])
    frac = (limit - value[j - 1]) / (value[j] - value[j - 1])
    return float(x[j - 1] + np.clip(frac, 0.0, 1.0) * (x[j] - x[j - 1]))


def _sweep(fn, p_feeder: np.ndarray, p_bess: np.ndarray | None):
    """Power flow of the sweep, shortened to its leading steps that converge (at least the
    first, no-load step)."""
    n = p_feeder.shape[0]
    while True:
        try:
            return run_power_flow(fn, p_feeder[:n], None if p_bess is None else {"bess": p_bess[:n]}), n
        except PowerFlowError:
            if n == 1:
                raise
            n = max(1, int(n * 0.8))


def network_limits(fn) -> NetworkLimits:
    """Capacities of a network within its ``[grid]`` limits (see the module docstring).

    Parameters
    ----------
    fn : facility.electrical.network.FacilityNetwork

    Returns
    -------
    NetworkLimits
        Infinite capacities when ``grid.enabled`` is false.
    """
    g = fn.grid
    p0 = feeder_p_max_mw(fn)
    if not fn.enabled:
        return NetworkLimits(p0, math.inf, math.inf, math.inf, {})
    k_tr = g.max_trafo_loading_percent
    k_ups = g.max_ups_loading_percent
    lam = _SWEEP
    res, n = _sweep(fn, lam[:, None] * p0[None, :], None)
    lam = lam[:n]
    feeder = {
        "feeder transformer loading": (res.lv_trafo_loading_percent <= k_tr, res.lv_trafo_loading_percent, k_tr),
        "UPS loading": (res.ups_loading_percent <= k_ups, res.ups_loading_percent, k_ups),
        "LV voltage": (res.vm_min_lv_pu >= g.min_lv_vm_pu, res.vm_min_lv_pu, g.min_lv_vm_pu),
    }
    site = {
        "substation loading": (res.sub_trafo_loading_percent <= k_tr, res.sub_trafo_loading_percent, k_tr),
        "MV voltage": (res.vm_min_mv_pu >= g.min_vm_pu, res.vm_min_mv_pu, g.min_vm_pu),
    }
    binding = {}

    def capacity(crit: dict, key: str) -> float:
        best, why = float(lam[-1]) if n < _SWEEP.size else math.inf, "power flow convergence"
        if n == _SWEEP.size:
            why = "none within 2x the ratings"
        for name, (ok, val, lim) in crit.items():
            x = _first_crossing(lam, ok, val, lim)
            if x is not None and x < best:
                best, why = x, name
        binding[key] = why
        return best

    lam_f = capacity(feeder, "feeder")
    lam_s = capacity(site, "site")
    keep = 1.0 - CAPACITY_MARGIN_FRAC
    p_max = p0 * (lam_f * keep if math.isfinite(lam_f) else 1.0)
    c_feeder = keep * lam_f * p0.sum() if math.isfinite(lam_f) else math.inf
    c_site = keep * lam_s * p0.sum() if math.isfinite(lam_s) else math.inf
    c_bess = math.inf
    if fn.has_bess and fn.bess_trafo_sn_mva:
        p_b_max = g.max_trafo_loading_percent / 100.0 * fn.bess_trafo_sn_mva
        lam_load = min(lam_f, lam_s, 1.0)
        mu = _SWEEP
        rb, nb = _sweep(fn, np.broadcast_to(lam_load * p0, (mu.size, p0.size)).copy(), mu * p_b_max)
        ld = rb.bess_trafo_loading_percent
        x = _first_crossing(mu[:nb], ld <= k_tr, ld, k_tr)
        if x is not None:
            c_bess, binding["bess"] = x * p_b_max, "BESS transformer loading"
        elif nb > 1 and ld[nb - 1] > 0:
            # the network around it gives out first: the BESS transformer's loading extrapolated
            c_bess = float(mu[nb - 1]) * p_b_max * k_tr / float(ld[nb - 1])
            binding["bess"] = "BESS transformer loading (extrapolated)"
        else:
            c_bess, binding["bess"] = p_b_max, "BESS transformer rating (at 1 pu)"
    return NetworkLimits(p_max, float(c_feeder), float(c_site), float(keep * c_bess), binding)


def storage_caps(grid, optimize, fn) -> dict:
    """What the storage dispatch may use of the network: ``max_feeder_p_mw``, ``max_site_p_mw``,
    ``max_bess_p_mw`` [MW] (None = unlimited), the keys of ``[optimize]``.

    The ``[optimize]`` values, and with ``grid.limit_storage`` (and a power flow) the smaller
    of those and the network's capacities (:func:`network_limits`).
    """
    caps = {k: getattr(optimize, k, None) for k in ("max_feeder_p_mw", "max_site_p_mw", "max_bess_p_mw")}
    if grid.limit_storage and fn.enabled:
        lim = fn.limits
        for k, v in (("max_feeder_p_mw", lim.feeder_capacity_mw), ("max_site_p_mw", lim.site_capacity_mw),
                     ("max_bess_p_mw", lim.bess_capacity_mw)):
            if math.isfinite(v):
                caps[k] = float(v) if caps[k] is None else min(float(caps[k]), float(v))
    return caps


# --------------------------------------------------------------------------- checks of a run
def limit_rows(grid, has_bess: bool = True) -> list[tuple[str, str, str, float, str]]:
    """The electrical limits as ``(row, PowerFlowResult field, sense, limit, label)``.

    ``sense`` is ``"min"`` (the field must stay at or above the limit) or ``"max"``; the BESS
    transformer row only with a BESS.
    """
    rows = [
        ("min_vm_pu", "vm_min_mv_pu", "min", grid.min_vm_pu, "PCC/MV voltage"),
        ("max_vm_pu", "vm_max_mv_pu", "max", grid.max_vm_pu, "PCC/MV voltage"),
        ("min_lv_vm_pu", "vm_min_lv_pu", "min", grid.min_lv_vm_pu, "LV voltage (UPS input)"),
        ("max_lv_vm_pu", "vm_max_lv_pu", "max", grid.max_lv_vm_pu, "LV voltage (UPS input)"),
        ("max_sub_trafo_loading_percent", "sub_trafo_loading_percent", "max", grid.max_trafo_loading_percent,
         "substation transformer loading"),
        ("max_lv_trafo_loading_percent", "lv_trafo_loading_percent", "max", grid.max_trafo_loading_percent,
         "feeder transformer loading"),
        ("max_bess_trafo_loading_percent", "bess_trafo_loading_percent", "max", grid.max_trafo_loading_percent,
         "BESS transformer loading"),
        ("max_ups_loading_percent", "ups_loading_percent", "max", grid.max_ups_loading_percent, "UPS loading"),
    ]
    return [r for r in rows if has_bess or r[0] != "max_bess_trafo_loading_percent"]


_GRID_KEY = {"min_vm_pu": "min_vm_pu", "max_vm_pu": "max_vm_pu", "min_lv_vm_pu": "min_lv_vm_pu",
             "max_lv_vm_pu": "max_lv_vm_pu", "max_ups_loading_percent": "max_ups_loading_percent"}


def _violated(series: np.ndarray, sense: str, limit: float) -> np.ndarray:
    if sense == "min":
        return series < limit - COMPLIANCE_ABS_TOL
    return series > limit + COMPLIANCE_ABS_TOL


def electrical_compliance(pf, grid, dt_s: float, has_bess: bool = True) -> dict:
    """The ``electrical_compliance`` block of ``metrics.json``.

    One bool per electrical limit (True = held on every step), ``compliant`` (all of them),
    and ``violation_s`` (time spent beyond each limit [s]). Separate from ``compliance``, which
    is about the utility spec at the PCC only. Without a power flow (``grid.enabled = false``)
    there is nothing to check: no rows, ``compliant`` true.
    """
    out: dict = {}
    dur: dict = {}
    if getattr(grid, "enabled", True):
        for row, field, sense, limit, _ in limit_rows(grid, has_bess):
            bad = _violated(np.asarray(getattr(pf, field)), sense, limit)
            out[row] = not bool(bad.any())
            dur[row] = float(np.count_nonzero(bad) * dt_s)
    out["compliant"] = all(v for k, v in out.items())
    out["violation_s"] = dur
    return out


def _grid_key(row: str) -> str:
    return _GRID_KEY.get(row, "max_trafo_loading_percent")


def violation_events(t_s: np.ndarray, pf, grid, dt_s: float) -> list[dict]:
    """One event per contiguous stretch beyond an electrical limit (the first
    :data:`MAX_EVENTS_PER_LIMIT` per limit, then one that counts the rest).

    Each event: ``t_s`` (start), ``end_s``, ``duration_s``, ``kind = "electrical_limit"``,
    ``limit`` (the compliance row), ``worst`` and ``worst_t_s``, ``limit_value`` and a
    ``detail`` sentence naming the grid key.
    """
    if not getattr(grid, "enabled", True):
        return []
    t = np.asarray(t_s, dtype=float)
    events = []
    for row, field, sense, limit, label in limit_rows(grid):
        x = np.asarray(getattr(pf, field), dtype=float)
        bad = _violated(x, sense, limit)
        if not bad.any():
            continue
        edges = np.diff(np.concatenate([[0], bad.astype(np.int8), [0]]))
        starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        unit = "pu" if row.endswith("_pu") else "%"
        for a, b in list(zip(starts, stops))[:MAX_EVENTS_PER_LIMIT]:
            seg = x[a:b]
            j = a + int(np.argmin(seg) if sense == "min" else np.argmax(seg))
            rel = "below" if sense == "min" else "above"
            events.append({
                "t_s": float(t[a]), "end_s": float(t[b - 1] + dt_s), "duration_s": float((b - a) * dt_s),
                "kind": "electrical_limit", "limit": row, "worst": float(x[j]), "worst_t_s": float(t[j]),
                "limit_value": float(limit),
                "detail": (f"{label} {rel} grid.{_grid_key(row)} = {limit:g} {unit} from t = {t[a]:.4g} s "
                           f"for {(b - a) * dt_s:.4g} s ({'lowest' if sense == 'min' else 'highest'} "
                           f"{x[j]:.4g} {unit} at t = {t[j]:.4g} s)")})
        if starts.size > MAX_EVENTS_PER_LIMIT:
            events.append({"t_s": float(t[starts[MAX_EVENTS_PER_LIMIT]]), "kind": "electrical_limit",
                           "limit": row, "detail": f"{starts.size - MAX_EVENTS_PER_LIMIT} further stretches "
                                                   f"of {label} beyond grid.{_grid_key(row)} (not listed)"})
    events.sort(key=lambda e: e["t_s"])
    return events


def violation_lines(metrics: dict, grid) -> list[str]:
    """One sentence per violated electrical limit, for the end-of-run warning and the report."""
    comp = metrics.get("electrical_compliance", {})
    el = metrics.get("electrical", {})
    dur = comp.get("violation_s", {})
    worst_key = {"min_vm_pu": "min_vm_mv_pu", "max_vm_pu": "max_vm_mv_pu", "min_lv_vm_pu": "min_vm_lv_pu",
                 "max_lv_vm_pu": "max_vm_lv_pu"}
    out = []
    for row, _, sense, limit, label in limit_rows(grid):
        if comp.get(row, True):
            continue
        unit = "pu" if row.endswith("_pu") else "%"
        worst = el.get(worst_key.get(row, row))
        w = f"{worst:.4g} {unit}" if isinstance(worst, (int, float)) else "?"
        out.append(f"{label} {w} {'<' if sense == 'min' else '>'} {limit:g} {unit} "
                   f"(grid.{_grid_key(row)}) for {dur.get(row, 0.0):.4g} s")
    return out
