"""``facility size``: the storage an unannounced load step needs, as a floor of the design.

A job crash drops a whole job to idle within about a second, and its restart ramps it back;
nobody announces either (docs/failures.md). A causal controller learns of the step from the
measured load, and the PCC must then keep the spec's window and ramp limits *from its own
history*: the storage takes the difference between the PCC and the load until the PCC has
caught up. How much storage that takes does not depend on the controller's cleverness, only
on the spec, so it is a floor of every deployable design, as the UPS ride-through floor
(:mod:`facility.sizing.ups`) is of the UPS battery.

**One window limit.** Let the limit be *at most L MW between the highest and lowest PCC
power within any w seconds* (``max_window_swing_mw``; a per-minute ramp is the same with
w = 60 s and L = ``max_ramp_mw_per_min``, a per-second ramp with w = ``ramp_window_s`` and
L = rate × w). After a step down of the load by ΔP at t = 0 from a steady P0, any compliant
PCC path satisfies ``P(t) >= max(P on [t - w, t)) - L``; the *greedy* path that sits on that
bound at every instant is the lowest one (by induction every compliant path stays above it),
so it leaves the least to the storage. It is a staircase: P drops by L at once, holds for w
(until P0 has left the window), drops by L again, and so on until it reaches the load:

    P(t) = max(P0 - L (floor(t / w) + 1), P0 - ΔP).

The storage charges ``s(t) = P(t) - (P0 - ΔP) = ΔP - L (k + 1)`` on ``[k w, (k + 1) w)``:

* power  ``P_min = ΔP - L`` (the first instant: no controller can do with less),
* energy ``E_step = w Σ_{j=1..m} (ΔP - j L) = w (m ΔP - L m (m + 1) / 2)``, m = ⌊ΔP / L⌋;
  for ΔP a multiple of L that is ``ΔP (ΔP - L) w / (2 L)``. A rate-limited setpoint at the
  mean rate L / w after a first jump of L would leave the triangle ``(ΔP - L)^2 w / (2 L)``
  (the issue's "about"), but that path breaks the window (the jump plus the ramp within one
  window exceed L); the staircase is the least that holds it, larger by about
  ``(ΔP - L) w / 2``.

Hand case (docs/control.md): ΔP = 40 MW, L = 10 MW, w = 5 s: P_min = 30 MW, m = 4,
E_step = 5 (30 + 20 + 10 + 0) = 300 MW s = 0.0833 MWh (the triangle: 225 MW s).

**Several limits** (a window and a per-minute ramp): the greedy path sits on the highest of
their bounds (:func:`facility.control.crash.descent`, the rule of the fast guard); the floor
takes it numerically on the scenario's step, with the crash's fall time
(``crash_drop_s``) and the restart's ramp (``ramp_s``) as they are. The binding limit (the
smallest L gives the power; the energies interact) comes out of that one path.

The fast guard under a deployable controller holds ``(1 - controller.guard_margin_frac)`` of
each limit (losses, measurement error): the floor takes L at that share where the guard is on.

**The design floor.** Each unannounced event: every job with ``[jobs.failures]`` (declared
crash times or a drawn rate) can crash (the job's iteration-mean power above idle, with the
non-GPU share and PUE: :func:`facility.control.crash.crash_drop_mw`; ``controller.
crash_reserve_mw`` overrides ΔP where set) and then restart (the same ΔP back over
``ramp_s``). The crash stores ``E_c = η_c ∫ s⁺ dt``; the restart draws ``E_d = ∫ s⁻ dt / η_d``.
The event finds the storage at the controller's SoC target s* (``controller.soc_target_frac``,
else ``initial_soc_frac``: where every run starts and where the SoC recovery pulls it back
between events), so the crash needs its charging room above s*, the restart its energy
below:

    p_rated >= max(P_min over the events),
    e_rated >= max(E_c / (max_soc_frac - s*), E_d / (s* - min_soc_frac)),

at least ``(E_c + E_d) / (max_soc_frac - min_soc_frac)`` (the s* that balances them).

The floor is the total of the extendable storages (:func:`floored_design` raises a design to
it): the controller's SoC recovery and the spec's normal operation come on top, which the
verification run and the resize search (:mod:`facility.sizing.resize`) judge.

Imports: :mod:`facility.control.crash` (the crash's drop, the window limits on a grid and
the greedy descent) and :mod:`facility.errors`; no other sizing module, never
:mod:`facility.cosim` nor :mod:`facility.run`.
"""

from __future__ import annotations

import math

import numpy as np

from facility.control.crash import crash_drop_mw, descent, window_limits
from facility.errors import InfeasibleError

__all__ = ["within_duration", "staircase_step", "greedy_step", "unannounced_steps", "step_floor", "floored_design"]

#: Longest grid the numeric floor walks (steps per event). [-]
MAX_STEPS = 20000


def staircase_step(dp_mw: float, limit_mw: float, window_s: float) -> tuple[float, float]:
    """Power and energy a storage needs for an instant step ΔP under one window limit.

    The PCC falls the rolling-window staircase (L at once, then L every w seconds), the
    storage takes the rest: ``P_min = max(ΔP - L, 0)``,
    ``E = w Σ_{j=1..⌊ΔP/L⌋} (ΔP - j L)`` (lossless; module docstring).

    Parameters
    ----------
    dp_mw : float
        The step of the load. [MW]
    limit_mw : float
        L: the most the PCC may move within any window. [MW]
    window_s : float
        w: the window. [s]

    Returns
    -------
    (p_mw, e_mw_s) : tuple of float
        Storage power [MW] and energy [MW s].
    """
    dp, lim, w = float(abs(dp_mw)), float(limit_mw), float(window_s)
    if lim <= 0 or w <= 0:
        raise ValueError(f"limit_mw = {lim:g} MW and window_s = {w:g} s must be positive")
    if dp <= lim:
        return 0.0, 0.0
    m = math.floor(dp / lim + 1e-12)
    return dp - lim, w * (m * dp - lim * m * (m + 1) / 2.0)


def greedy_step(shape_mw: np.ndarray, p_before_mw: float, limits: list, dt_s: float) -> np.ndarray:
    """The storage power along the fastest compliant PCC path after an unannounced change of
    the load (the fast guard's rule, :func:`facility.control.crash.descent`), charging positive.

    Parameters
    ----------
    shape_mw : numpy.ndarray
        The load from the event on (its first sample the first one that differs). [MW]
    p_before_mw : float
        The steady PCC power before it (the history). [MW]
    limits : list of (int, float, float)
        :func:`facility.control.crash.window_limits` on the grid ``dt_s``.
    dt_s : float
        Grid step. [s]
    """
    n_max = max([n for n, _, _ in limits], default=1)
    s, _ = descent(np.full(n_max, float(p_before_mw)), np.asarray(shape_mw, dtype=float), limits, dt_s)
    return s


def _spec_limits(spec) -> list[tuple[float, float]]:
    """The spec's window limits as ``(w_s, L_mw)`` (both directions' smaller L)."""
    out = []
    if spec.max_ramp_mw_per_min is not None:
        out.append((60.0, float(spec.max_ramp_mw_per_min)))
    if spec.max_window_swing_mw is not None:
        out.append((float(spec.window_s), float(spec.max_window_swing_mw)))
    rates = [r for r in (spec.max_ramp_up_mw_per_s, spec.max_ramp_down_mw_per_s) if r is not None]
    if rates:
        out.append((float(spec.ramp_window_s), float(min(rates)) * float(spec.ramp_window_s)))
    return out


def unannounced_steps(scenario) -> list[dict]:
    """The load steps nobody announces: per job with ``[jobs.failures]``, its crash and its
    restart (where one comes within the horizon and before the job stops).

    Returns
    -------
    list of dict
        ``job``, ``kind`` ("crash" | "restart"), ``dp_mw`` (the site-level step, ΔP) [MW],
        ``duration_s`` (the crash's fall, the restart's ramp) [s].
    """
    reserve = scenario.controller.crash_reserve_mw
    out = []
    for job in scenario.jobs:
        f = job.failures
        if f is None or job.workload == "trace":
            continue
        dp = crash_drop_mw(scenario.model_copy(update={"jobs": [job]})) if reserve is None else float(reserve)
        if dp <= 0:
            continue
        out.append({"job": job.name, "kind": "crash", "dp_mw": dp, "duration_s": float(f.crash_drop_s)})
        end = min(scenario.time.horizon_s, job.stop_s if job.stop_s is not None else math.inf)
        restarts = (f.rate_per_gpu_h is not None
                    or any(t + f.restart_after_s < end for t in f.crash_times_s))
        if restarts:
            out.append({"job": job.name, "kind": "restart", "dp_mw": dp, "duration_s": float(job.ramp_s)})
    return out


def _event_need(ev: dict, spec, dt_s: float, margin_frac: float = 0.0) -> tuple[float, float]:
    """``(p_mw, e_mw_s)``: the storage power and (lossless) energy one event needs under all
    the spec's window limits, each held at ``(1 - margin_frac)`` (the greedy path on a grid
    of ``dt_s``)."""
    keep = 1.0 - float(margin_frac)
    lims = [(w, keep * lim) for w, lim in _spec_limits(spec)]
    dp = ev["dp_mw"]
    # long enough for the slowest limit's staircase after the event's own fall or ramp
    span_s = ev["duration_s"] + max((math.ceil(dp / lim) + 1) * w for w, lim in lims)
    dt = max(float(dt_s), span_s / MAX_STEPS)
    n = int(math.ceil(span_s / dt)) + 1
    t = np.arange(1, n + 1) * dt
    frac = np.clip(t / ev["duration_s"], 0.0, 1.0) if ev["duration_s"] > 0 else np.ones(n)
    if ev["kind"] == "crash":
        shape, before = dp * (1.0 - frac), dp
    else:
        shape, before = dp * frac, 0.0
    rows = [(n, keep * dn, keep * up) for n, dn, up in window_limits(spec, dt)]
    s = greedy_step(shape, before, rows, dt)
    return float(np.max(np.abs(s), initial=0.0)), float(np.sum(np.abs(s)) * dt)


def step_floor(scenario) -> dict | None:
    """The storage ratings the largest unannounced step needs (module docstring).

    Parameters
    ----------
    scenario : Scenario
        ``jobs[*].failures``, ``controller.crash_reserve_mw``, ``spec`` (its window and ramp
        limits), the extendable storages' efficiencies and SoC bounds.

    Returns
    -------
    dict or None
        None where no job fails unannounced, the spec has no window or ramp limit, or no
        storage is extendable; else ``p_mw_min`` [MW] and ``e_mwh_min`` [MWh] (the floor of
        the extendable storages' total), ``e_charge_mwh`` (the crash's stored energy, with
        η_c) and ``e_discharge_mwh`` (the restart's drawn energy, with 1/η_d) [MWh],
        ``soc_window_frac``, ``soc_room_up_frac`` and ``soc_room_down_frac`` (above and below
        the SoC target) [frac], ``guard_margin_frac`` [frac] and ``events`` (each with its
        ``p_mw``, ``e_mw_s``).
    """
    units = {n: c for n, c in scenario.storage_units().items() if c.extendable}
    lims = _spec_limits(scenario.spec)
    events = unannounced_steps(scenario)
    if not units or not lims or not events:
        return None
    # the extendable storages act as one: the worst efficiencies, the narrowest SoC window
    eta_c = min(c.eff_charge_frac for c in units.values())
    eta_d = min(c.eff_discharge_frac for c in units.values())
    window = min(c.max_soc_frac - c.min_soc_frac for c in units.values())
    target = scenario.controller.soc_target_frac
    room_up = min(c.max_soc_frac - (c.initial_soc_frac if target is None else target) for c in units.values())
    room_dn = min((c.initial_soc_frac if target is None else target) - c.min_soc_frac for c in units.values())
    e_c = e_d = p_min = 0.0
    ctrl = scenario.controller
    margin = ctrl.guard_margin_frac if getattr(ctrl, "guard", False) else 0.0
    for ev in events:
        p, e = _event_need(ev, scenario.spec, scenario.time.dt_s, margin)
        ev.update(p_mw=p, e_mw_s=e)
        p_min = max(p_min, p)
        if ev["kind"] == "crash":
            e_c = max(e_c, eta_c * e / 3600.0)
        else:
            e_d = max(e_d, e / eta_d / 3600.0)
    if p_min <= 0 and e_c + e_d <= 0:
        return None
    e_min = max((e_c + e_d) / max(window, 1e-9), e_c / max(room_up, 1e-9) if e_c > 0 else 0.0,
                e_d / max(room_dn, 1e-9) if e_d > 0 else 0.0)
    return {"p_mw_min": float(p_min), "e_mwh_min": float(e_min),
            "soc_room_up_frac": float(room_up), "soc_room_down_frac": float(room_dn),
            "e_charge_mwh": float(e_c), "e_discharge_mwh": float(e_d), "soc_window_frac": float(window),
            "guard_margin_frac": float(margin),
            "events": events}


def within_duration(p: float, e: float, duration_h: tuple, bound: tuple) -> tuple[float, float]:
    """``(p, e)`` moved into the storage's duration bounds d_min ≤ E/P ≤ d_max by growing the
    rating that is short (E to d_min·P, P to E/d_max), within the ``max_*`` bounds (where
    E is capped, P comes down to E/d_min). [MW], [MWh]"""
    d_min, d_max = duration_h
    if d_min:
        e = min(max(e, d_min * p), bound[1])
    if d_max:
        p = min(max(p, e / d_max), bound[0])
    if d_min and e < d_min * p:
        p = e / d_min
    return p, e


def floored_design(point: dict, floor: dict | None, bounds: dict, durations: dict | None = None) -> dict:
    """A design raised to the step floor: where the extendable storages' total power (energy)
    is below the floor, every unit's power (energy) grows by the same factor (a design with
    none puts it on the last unit, the substation BESS where there is one), within each
    unit's ``max_*`` bounds and duration bounds; never lowered.

    Parameters
    ----------
    point : dict
        ``{unit: (p_rated_mw, e_rated_mwh)}``. [MW], [MWh]
    floor : dict or None
        :func:`step_floor`.
    bounds : dict
        ``{unit: (max_p_rated_mw, max_e_rated_mwh)}`` (inf where unbounded). [MW], [MWh]
    durations : dict, optional
        ``{unit: (min_duration_h, max_duration_h)}``.

    Raises
    ------
    InfeasibleError
        The floor is above the units' ``max_*`` bounds together.
    """
    if floor is None or not point:
        return dict(point)
    out = {n: list(v) for n, v in point.items()}
    for i, key, need, unit in ((0, "p_rated_mw", floor["p_mw_min"], "MW"),
                               (1, "e_rated_mwh", floor["e_mwh_min"], "MWh")):
        cap = sum(bounds[n][i] for n in out)
        if need > cap * (1 + 1e-9):
            raise InfeasibleError(
                f"the largest unannounced step (a job crash or restart of {max(e['dp_mw'] for e in floor['events']):.4g} "
                f"MW) needs {key} >= {need:.4g} {unit} of storage in all to keep the spec's limits, above the "
                f"extendable storages' max_{key} = {cap:.4g} {unit} together; raise it",
                {"step_floor": floor})
        have = sum(v[i] for v in out.values())
        if have >= need * (1 - 1e-12):
            continue
        if have <= 0:
            out["bess" if "bess" in out else list(out)[-1]][i] = need
        else:
            f = need / have
            for v in out.values():
                v[i] *= f
        # what a unit's bound cuts off goes to the units with room left
        for _ in range(len(out)):
            over = sum(max(v[i] - bounds[n][i], 0.0) for n, v in out.items())
            for n, v in out.items():
                v[i] = min(v[i], bounds[n][i])
            room = {n: bounds[n][i] - v[i] for n, v in out.items() if bounds[n][i] - v[i] > 0}
            if over <= 0 or not room:
                break
            tot = sum(room.values()) if all(math.isfinite(r) for r in room.values()) else math.inf
            for n, r in room.items():
                out[n][i] += over * (r / tot if math.isfinite(tot) else 1.0 / len(room))
    return {n: within_duration(p, e, (durations or {}).get(n, (None, None)), bounds[n])
            for n, (p, e) in out.items()}
