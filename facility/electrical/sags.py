"""Voltage sags at the PCC and the site's response: UPS transfer to its battery, cooling load.

Pure functions over numpy arrays (no pandapower); :mod:`facility.electrical.grid_events` applies
them to a run. The model, per step of length dt (docs/grid_events.md):

* **Voltage.** ``vm(t)`` is the retained voltage the ``[[grid_events]]`` impose at the PCC
  (rectangular sags or recorded traces; overlapping events take the lowest voltage), passed in
  pu to every UPS input and cooling bus (transformers pass a sag through in pu).
* **UPS (IT load).** A double-conversion UPS (IEC 62040-3 class VFI) transfers its load to the
  battery once ``vm`` has stayed below ``transfer_vm_pu`` for longer than ``transfer_delay_s``;
  a shorter sag is ridden through on the grid. It returns to the grid after ``vm`` has stayed
  at or above ``retransfer_vm_pu`` for ``retransfer_delay_s``, with a walk-in: the grid's share
  of the load rises linearly from 0 to 1 over ``walk_in_s``. While on the grid, the rectifier
  draws at most ``max_input_current_pu * vm * S_ups`` per feeder (its current limit); the
  battery supplies what the grid share does not.
* **Battery.** It supplies that need within its power rating and down to its ride-through
  floor (``min_soc_frac``); what it cannot supply is IT load lost. After the need ends it
  recharges at ``recharge_frac * p_rated_mw`` until the energy the event took is back; the
  smoothing controller's discharges are held off meanwhile.
* **Cooling (not on the UPS).** The exponential static load model P = P0 (V/1 pu)^np (np = 2:
  constant impedance), and optionally contactor dropout: below ``cooling_dropout_vm_pu`` the
  cooling load is 0 until ``cooling_restart_s`` after the voltage is back above it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["UpsSagSettings", "sag_voltage_pu", "time_true_s", "time_since_true_s", "ups_grid_share",
           "ups_need_mw", "battery_support", "cooling_response", "BatterySupport"]


@dataclass(frozen=True)
class UpsSagSettings:
    """A UPS's behaviour in a sag (the ``[ups]`` keys over its ``grid.ups_type``'s values).

    Attributes
    ----------
    transfer_vm_pu, retransfer_vm_pu : float
        Transfer below / return at or above this input voltage. [pu]
    transfer_delay_s, retransfer_delay_s : float
        Time below / above the threshold before the transfer / the walk-in. [s]
    walk_in_s : float
        Walk-in ramp of the grid's share after retransfer. [s]
    max_input_current_pu : float
        Rectifier input current limit, pu of the rating at 1 pu voltage. [pu]
    recharge_frac : float
        Charger power after an event, share of the battery's rated power. [frac]
    """

    transfer_vm_pu: float = 0.85
    transfer_delay_s: float = 0.005
    retransfer_vm_pu: float = 0.9
    retransfer_delay_s: float = 10.0
    walk_in_s: float = 10.0
    max_input_current_pu: float = 1.2
    recharge_frac: float = 0.1

    @classmethod
    def resolve(cls, ups_cfg, ups_type) -> "UpsSagSettings":
        """The scenario's ``[ups]`` keys where set, the UPS type's values otherwise."""
        names = cls.__dataclass_fields__
        return cls(**{n: (getattr(ups_cfg, n) if getattr(ups_cfg, n, None) is not None else getattr(ups_type, n))
                      for n in names})


def sag_voltage_pu(t_s: np.ndarray, events, traces: dict | None = None) -> np.ndarray:
    """Retained PCC voltage of the grid events at each step (1 pu outside them). [pu]

    Parameters
    ----------
    t_s : numpy.ndarray
        Step times. [s]
    events : sequence of GridEventConfig
        Rectangular sags (``start_s``, ``duration_s``, ``depth_pu``) or traced ones.
    traces : dict, optional
        ``{event index: (t_s [s] from the event's start, vm_pu [pu])}`` of the traced events.

    Returns
    -------
    numpy.ndarray
        The lowest voltage any event imposes at each step. [pu]
    """
    t = np.asarray(t_s, dtype=float)
    vm = np.ones_like(t)
    for i, ev in enumerate(events):
        if ev.trace_file is None:
            inside = (t >= ev.start_s - 1e-12) & (t < ev.start_s + ev.duration_s - 1e-12)
            vm = np.where(inside, np.minimum(vm, ev.depth_pu), vm)
        else:
            tt, vv = (traces or {})[i]
            rel = t - ev.start_s
            v = np.interp(rel, tt, vv, left=1.0, right=1.0)
            vm = np.minimum(vm, v)
    return vm


def time_true_s(mask: np.ndarray, dt_s: float) -> np.ndarray:
    """How long ``mask`` has been true without a break, up to and including each step. [s]

    ``n * dt_s`` at the n-th step of a run of true steps, 0 where false.
    """
    m = np.asarray(mask, dtype=bool)
    idx = np.arange(m.size)
    last_false = np.maximum.accumulate(np.where(~m, idx, -1))
    return np.where(m, (idx - last_false) * dt_s, 0.0)


def time_since_true_s(mask: np.ndarray, dt_s: float) -> np.ndarray:
    """Time since ``mask`` was last true (0 at a true step, inf before the first). [s]"""
    m = np.asarray(mask, dtype=bool)
    idx = np.arange(m.size)
    last_true = np.maximum.accumulate(np.where(m, idx, -1))
    return np.where(last_true >= 0, (idx - last_true) * dt_s, np.inf)


def ups_grid_share(vm_pu: np.ndarray, dt_s: float, s: UpsSagSettings) -> tuple[np.ndarray, np.ndarray, list]:
    """Share of the IT load the UPS may take from the grid at each step (transfer and walk-in).

    Parameters
    ----------
    vm_pu : numpy.ndarray, shape (T,)
        UPS input voltage. [pu]
    dt_s : float
        Time step. [s]
    s : UpsSagSettings

    Returns
    -------
    share : numpy.ndarray, shape (T,)
        1 on the grid, 0 on the battery, rising over ``walk_in_s`` after a retransfer. [frac]
    on_battery : numpy.ndarray of bool, shape (T,)
        Transferred (between the transfer and the start of the walk-in).
    transfers : list of (int, int)
        ``(transfer step, retransfer step)``; the retransfer step is T when the horizon ends first.
    """
    vm = np.asarray(vm_pu, dtype=float)
    n = vm.size
    eps = 1e-9 * dt_s
    low_s = time_true_s(vm < s.transfer_vm_pu, dt_s)
    trigger = np.flatnonzero(low_s > s.transfer_delay_s + eps)
    # retransfer once the voltage has stayed at or above retransfer_vm_pu for retransfer_delay_s
    # (the step the delay is over; a zero delay = the first step back)
    good_s = time_true_s(vm >= s.retransfer_vm_pu, dt_s)
    ready = np.flatnonzero(good_s >= max(s.retransfer_delay_s, dt_s) - eps)
    share = np.ones(n)
    on_battery = np.zeros(n, dtype=bool)
    transfers = []
    k = 0
    while True:
        i = int(np.searchsorted(trigger, k))
        if i >= trigger.size:
            break
        a = int(trigger[i])
        j = int(np.searchsorted(ready, a))
        b = min(int(ready[j]) + 1, n) if j < ready.size else n  # first step of the walk-in
        on_battery[a:b] = True
        share[a:b] = 0.0
        transfers.append((a, b))
        if b < n and s.walk_in_s > 0:
            t_rel = (np.arange(b, n) - b + 1) * dt_s
            share[b:] = np.minimum(share[b:], np.clip(t_rel / s.walk_in_s, 0.0, 1.0))
        k = b
    # a new transfer during a walk-in restarts from 0: the loop above resumes at its own trigger
    return share, on_battery, transfers


def ups_need_mw(p_it_feeder_mw: np.ndarray, vm_pu: np.ndarray, share: np.ndarray,
                ups_sn_mva: np.ndarray, max_input_current_pu: float) -> tuple[np.ndarray, np.ndarray]:
    """What the grid gives each feeder's UPS and what its battery must supply. [MW]

    Parameters
    ----------
    p_it_feeder_mw : numpy.ndarray, shape (T, F)
        IT load behind each feeder's UPS. [MW]
    vm_pu : numpy.ndarray, shape (T,)
        UPS input voltage. [pu]
    share : numpy.ndarray, shape (T,)
        Grid share from :func:`ups_grid_share`. [frac]
    ups_sn_mva : numpy.ndarray, shape (F,)
        UPS ratings. [MVA]
    max_input_current_pu : float
        Rectifier current limit. [pu]

    Returns
    -------
    grid_mw, need_mw : numpy.ndarray, shape (T, F)
        ``grid = min(share * P_it, I_max * vm * S)``, ``need = P_it - grid`` (>= 0). [MW]
    """
    p = np.asarray(p_it_feeder_mw, dtype=float)
    cap = max_input_current_pu * np.asarray(vm_pu, dtype=float)[:, None] * np.asarray(ups_sn_mva, dtype=float)[None, :]
    grid = np.minimum(np.maximum(p, 0.0) * np.asarray(share, dtype=float)[:, None], cap)
    grid = np.where(p < 0, p, grid)
    return grid, p - grid


@dataclass
class BatterySupport:
    """Result of :func:`battery_support`; arrays of shape (T,).

    Attributes
    ----------
    p_mw : numpy.ndarray
        Battery power, consumer frame (discharge < 0). [MW]
    soc_frac : numpy.ndarray
        Battery state of charge. [frac]
    supplied_mw, lost_mw : numpy.ndarray
        Need met by the battery / not met (IT load lost). [MW]
    empty_steps : list of int
        First step of each need window at which the battery hit its floor.
    """

    p_mw: np.ndarray
    soc_frac: np.ndarray
    supplied_mw: np.ndarray
    lost_mw: np.ndarray
    empty_steps: list


def _stored_rate(p: np.ndarray, eta_c: float, eta_d: float) -> np.ndarray:
    """Power into the stored energy: eta_c p when charging, p / eta_d when discharging. [MW]"""
    return np.where(p >= 0, p * eta_c, p / eta_d)


def _power_for_rate(r: np.ndarray, eta_c: float, eta_d: float) -> np.ndarray:
    """Inverse of :func:`_stored_rate`. [MW]"""
    return np.where(r >= 0, r / eta_c, r * eta_d)


def battery_support(need_mw: np.ndarray, dt_s: float, *, p_rated_mw: float, e_rated_mwh: float,
                    eff_charge_frac: float, eff_discharge_frac: float, floor_soc_frac: float,
                    recharge_frac: float, p_ctl_mw: np.ndarray | None = None,
                    soc_ctl_frac: np.ndarray | None = None, initial_soc_frac: float = 1.0,
                    max_recharge_mw: np.ndarray | None = None) -> BatterySupport:
    """The UPS battery through the need windows, over the controller's own trajectory.

    Inside a window (need > 0) the battery discharges ``min(need, p_rated_mw)`` until its
    energy reaches ``floor_soc_frac``; the rest is lost load. Between windows it follows the
    controller (``p_ctl_mw``), plus a recharge of ``recharge_frac * p_rated_mw`` (within
    ``p_rated_mw``) and with the controller's discharges held off, until the energy deficit
    against the controller's trajectory is back to 0.

    Parameters
    ----------
    need_mw : numpy.ndarray, shape (T,)
        Power the battery should supply (>= 0). [MW]
    dt_s : float
        Time step. [s]
    p_rated_mw, e_rated_mwh : float
        Ratings (0 = no battery: every need is lost). [MW], [MWh]
    eff_charge_frac, eff_discharge_frac : float
        Efficiencies. [frac]
    floor_soc_frac : float
        SoC at which the battery is empty for ride-through. [frac]
    recharge_frac : float
        Charger power after a window, share of p_rated_mw. [frac]
    p_ctl_mw, soc_ctl_frac : numpy.ndarray, optional
        The smoothing controller's battery power and SoC without events (default: idle, full
        at ``initial_soc_frac``). [MW], [frac]
    initial_soc_frac : float
        SoC without a controller trajectory. [frac]
    max_recharge_mw : numpy.ndarray, shape (T,), optional
        Largest recharge the network takes at each step (its headroom); none = unlimited. [MW]

    Returns
    -------
    BatterySupport
    """
    need = np.maximum(np.asarray(need_mw, dtype=float), 0.0)
    n = need.size
    h = dt_s / 3600.0
    p_ctl = np.zeros(n) if p_ctl_mw is None else np.asarray(p_ctl_mw, dtype=float)
    soc_ctl = np.full(n, initial_soc_frac) if soc_ctl_frac is None else np.asarray(soc_ctl_frac, dtype=float)
    p_new = p_ctl.copy()
    supplied = np.zeros(n)
    empty_steps: list[int] = []
    has_battery = p_rated_mw > 0 and e_rated_mwh > 0
    eta_c, eta_d = eff_charge_frac, eff_discharge_frac
    rate_ctl = _stored_rate(p_ctl, eta_c, eta_d)
    tol = 1e-12 * max(1.0, float(need.max()) if n else 1.0)
    active = need > tol
    starts = np.flatnonzero(active & ~np.r_[False, active[:-1]])
    ends = np.flatnonzero(active & ~np.r_[active[1:], False]) + 1
    deficit = 0.0  # stored energy below the controller's trajectory [MWh]
    cursor = 0
    for a, b in zip(list(starts) + [n], list(ends) + [n]):
        if has_battery and deficit > 0 and cursor < a:  # recharge in the gap [cursor, a)
            deficit = _recharge(p_new, p_ctl, rate_ctl, cursor, a, deficit, h, p_rated_mw,
                                recharge_frac, eta_c, eta_d,
                                None if max_recharge_mw is None else np.asarray(max_recharge_mw)[cursor:a])
        if a >= n:
            break
        # energy down to the floor at the window's start
        soc_before = (soc_ctl[a - 1] if a > 0 else (initial_soc_frac if soc_ctl_frac is None else soc_ctl[0]))
        avail = max(0.0, (soc_before - floor_soc_frac) * e_rated_mwh - deficit) if has_battery else 0.0
        d = np.minimum(need[a:b], p_rated_mw if has_battery else 0.0)
        used = np.cumsum(d / eta_d * h)
        over = np.flatnonzero(used > avail + 1e-15)
        if over.size:
            k = int(over[0])
            prev = used[k - 1] if k > 0 else 0.0
            d[k] = max(0.0, (avail - prev) * eta_d / h)
            d[k + 1:] = 0.0
            if has_battery:
                empty_steps.append(a + k)
        supplied[a:b] = d
        p_new[a:b] = -d
        # deficit: the window's stored-energy change against the controller's
        deficit += float(np.sum(rate_ctl[a:b] - _stored_rate(p_new[a:b], eta_c, eta_d)) * h)
        cursor = b
    delta = np.cumsum((_stored_rate(p_new, eta_c, eta_d) - rate_ctl) * h)
    soc = soc_ctl + (delta / e_rated_mwh if has_battery else 0.0)
    return BatterySupport(p_mw=p_new, soc_frac=soc, supplied_mw=supplied, lost_mw=need - supplied,
                          empty_steps=empty_steps)


def _recharge(p_new, p_ctl, rate_ctl, a, b, deficit, h, p_rated, recharge_frac, eta_c, eta_d,
              headroom=None) -> float:
    """Recharge over steps [a, b) until ``deficit`` [MWh] is back; edits ``p_new``; returns the rest."""
    base = np.maximum(p_ctl[a:b], 0.0)  # the controller's discharges held off
    x = np.minimum(recharge_frac * p_rated, p_rated - base)
    if headroom is not None:
        x = np.minimum(x, headroom)
    x = np.clip(x, 0.0, None)
    gain = (_stored_rate(base + x, eta_c, eta_d) - rate_ctl[a:b]) * h  # >= 0 [MWh]
    cum = np.cumsum(gain)
    k = int(np.searchsorted(cum, deficit))
    if k >= cum.size:  # not back before the next window / the horizon
        p_new[a:b] = base + x
        return deficit - (float(cum[-1]) if cum.size else 0.0)
    p_new[a:a + k] = base[:k] + x[:k]
    part = deficit - (float(cum[k - 1]) if k > 0 else 0.0)
    p_new[a + k] = _power_for_rate(np.array(rate_ctl[a + k] + part / h), eta_c, eta_d)
    return 0.0


def cooling_response(p_cool_mw: np.ndarray, vm_pu: np.ndarray, dt_s: float, exponent: float,
                     dropout_vm_pu: float | None, restart_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Cooling power (not on the UPS) under the sag voltage. [MW]

    Parameters
    ----------
    p_cool_mw : numpy.ndarray, shape (T,) or (T, F)
        Cooling power at 1 pu. [MW]
    vm_pu : numpy.ndarray, shape (T,)
        Voltage at the cooling loads. [pu]
    dt_s : float
        Time step. [s]
    exponent : float
        np of P = P0 vm^np (2 = constant impedance). [-]
    dropout_vm_pu : float or None
        Contactor dropout voltage; none = no dropout. [pu]
    restart_s : float
        Time after the voltage is back above the dropout voltage before the cooling restarts. [s]

    Returns
    -------
    p_mw : numpy.ndarray
        Cooling power drawn. [MW]
    tripped : numpy.ndarray of bool, shape (T,)
        Cooling dropped out.
    """
    vm = np.asarray(vm_pu, dtype=float)
    scale = np.power(np.maximum(vm, 0.0), exponent)
    tripped = np.zeros(vm.size, dtype=bool)
    if dropout_vm_pu is not None:
        since = time_since_true_s(vm < dropout_vm_pu, dt_s)
        tripped = since < restart_s + dt_s * (1 - 1e-9)  # the low steps and restart_s after them
        scale = np.where(tripped, 0.0, scale)
    p = np.asarray(p_cool_mw, dtype=float)
    return p * (scale[:, None] if p.ndim == 2 else scale), tripped
