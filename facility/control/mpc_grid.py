"""The MPC's time grids: its step, the coarser step of its level plans, and its horizon.

A plan held over MPC steps meets a window limit exactly only where the step divides the
limit's window, so every step chosen here divides every window of the spec's limits (and
preferably ``replan_s``: the re-plans then start on one grid, and the PCC history the LP sees
in block means holds the earlier plans' steps exactly). docs/control.md, *grid and horizon*
and *the level grid*. Layer: control (imports only facility.errors).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from facility.errors import ScenarioError

__all__ = ["MpcGrid", "choose_grid", "divides", "given_step_problems", "MAX_AUTO_HORIZON_S", "AUTO_STEPS"]

#: Longest MPC horizon chosen automatically. [s]
MAX_AUTO_HORIZON_S = 600.0
#: MPC steps the automatic ``mpc_dt_s`` aims at. [steps]
AUTO_STEPS = 400


def divides(step_s: float, windows: list) -> bool:
    """Whether ``step_s`` divides every window (to 1e-6 relative)."""
    return all(abs(w / step_s - round(w / step_s)) < 1e-6 * max(1.0, w / step_s) for w in windows)


@dataclass(frozen=True)
class MpcGrid:
    """The MPC's grids.

    Attributes
    ----------
    r : int
        Simulation steps per MPC step.
    mpc_dt : float
        MPC step. [s]
    k_level : int
        MPC steps per step of a level plan.
    horizon_s : float
        Horizon. [s]
    n_h : int
        MPC steps in the horizon.
    """

    r: int
    mpc_dt: float
    k_level: int
    horizon_s: float
    n_h: int


def _first_dividing(candidates, step: float, windows: list, replan_s: float) -> int | None:
    """The first of ``candidates`` (multiples of ``step``) that divides every window and
    ``replan_s`` too (the re-plans then start on one grid, and the PCC history the LP sees in
    block means has the steps of the plans before it exactly: a block straddling two plans
    would hide a step's edge from the window limits), else the first that divides every
    window; None when none does. Without windows, the first candidate."""
    pref = windows + [replan_s] if windows else windows
    return next((m for m in candidates if divides(m * step, pref)), None) \
        or next((m for m in candidates if divides(m * step, windows)), None)


def _windows(spec) -> tuple[list, list]:
    """Windows of the spec's set limits, and the step cap each puts on the MPC step. [s]"""
    windows, cap = [], [math.inf]
    if spec.max_ramp_up_mw_per_s is not None or spec.max_ramp_down_mw_per_s is not None:
        windows.append(spec.ramp_window_s)
        cap.append(spec.ramp_window_s / 2.0)
    if spec.max_window_swing_mw is not None:
        windows.append(spec.window_s)
        cap.append(spec.window_s / 4.0)
    if spec.max_ramp_mw_per_min is not None:
        windows.append(60.0)
        cap.append(60.0 / 8.0)
    return windows, cap


def _shown(windows: list) -> str:
    return ", ".join(f"{w:g} s" for w in windows)


def given_step_problems(ctrl, dt: float, spec) -> list[str]:
    """What :func:`choose_grid` refuses in a given ``mpc_dt_s`` / ``mpc_level_dt_s`` on this
    spec, found before the run (``facility validate`` reports the same; empty: nothing).

    A given ``mpc_dt_s`` is taken as ``max(1, round(mpc_dt_s / dt))`` simulation steps, which
    must divide every window of the spec's limits. A given ``mpc_level_dt_s`` is taken as a
    whole number of MPC steps that must divide every window; with ``mpc_dt_s`` unset the
    automatic step is chosen to divide ``mpc_level_dt_s`` (:func:`choose_grid`), so it must
    itself divide every window and be a whole number of ``dt`` steps.
    """
    windows, _ = _windows(spec)
    out = []
    step = None
    if ctrl.mpc_dt_s is not None:
        r = max(1, int(round(ctrl.mpc_dt_s / dt)))
        step = r * dt
        if not divides(step, windows):
            as_steps = "" if abs(step - ctrl.mpc_dt_s) <= 1e-9 * step else \
                f" (taken as {r} step(s) of time.dt_s = {dt:g} s: {step:g} s)"
            out.append(f"controller.mpc_dt_s = {ctrl.mpc_dt_s:g} s{as_steps} must divide every window of the "
                       f"spec's limits ({_shown(windows)}): a plan held over MPC steps meets a window limit "
                       f"exactly only then")
    level = ctrl.mpc_level_dt_s
    if level is not None and windows:
        if step is not None:
            k = max(1, int(round(level / step)))
            if not divides(k * step, windows) and not out:
                out.append(f"controller.mpc_level_dt_s = {level:g} s (taken as {k} MPC step(s) of "
                           f"controller.mpc_dt_s: {k * step:g} s) must divide every window of the spec's limits "
                           f"({_shown(windows)})")
        else:
            k = max(1, int(round(level / dt)))
            if not divides(level, windows) or abs(k * dt - level) > 1e-6 * level:
                out.append(f"controller.mpc_level_dt_s = {level:g} s must divide every window of the spec's "
                           f"limits ({_shown(windows)}) and be a whole number of time.dt_s = {dt:g} s steps")
    return out


def _horizon_s(ctrl, spec, schedule, rate: float, p_rated_total_mw: float) -> float:
    """``controller.horizon_s``, or: long enough to ramp the schedule's largest change at the
    allowed rate and to make room in storage for the energy it leaves to it, 30–600 s."""
    if ctrl.horizon_s is not None:
        horizon = ctrl.horizon_s
    else:
        span = 0.0
        if schedule is not None and schedule.size:
            span = float(schedule.max() - schedule.min())
        need = span / rate if np.isfinite(rate) and rate > 0 else 0.0
        if span > 0 and p_rated_total_mw > 0 and np.isfinite(rate) and rate > 0:
            # and long enough to make room in storage, at full power, for the energy the
            # ramp-limited change leaves to it (span^2 / (2 rate))
            need += span ** 2 / (2.0 * rate) / p_rated_total_mw
        horizon = float(np.clip(need + 2 * spec.window_s, 30.0, MAX_AUTO_HORIZON_S))
    return max(horizon, ctrl.replan_s)


def _level_steps(ctrl, step: float, windows: list, cap_s: float) -> int:
    """MPC steps per step of a level plan (``controller.mpc_level_dt_s``; auto: the longest
    multiple of the MPC step up to ``cap_s`` that divides every window, and preferably
    ``replan_s``; 1 when ``mpc_dt_s`` is set or there is no window)."""
    if ctrl.mpc_level_dt_s is not None:
        k = max(1, int(round(ctrl.mpc_level_dt_s / step)))
        if not divides(k * step, windows):
            raise ScenarioError(
                f"controller.mpc_level_dt_s = {ctrl.mpc_level_dt_s:g} s must divide every "
                f"window of the spec's limits ({_shown(windows)})")
        return k
    if ctrl.mpc_dt_s is not None or not windows:
        return 1
    k_max = max(1, int(np.floor(cap_s / step + 1e-9)))
    return _first_dividing(range(k_max, 0, -1), step, windows, ctrl.replan_s) or 1


def choose_grid(ctrl, dt: float, spec, schedule, rate: float, p_rated_total_mw: float) -> MpcGrid:
    """The MPC's step, level step and horizon: given, or chosen from the spec and the schedule.

    Parameters
    ----------
    ctrl : ControllerConfig
    dt : float
        Simulation step. [s]
    spec : SpecConfig
        The MPC's spec (its window limits).
    schedule : numpy.ndarray or None
        Declared schedule level. [MW]
    rate : float
        Fastest steady PCC change the limits allow. [MW/s]
    p_rated_total_mw : float
        Sum of the storages' power ratings. [MW]
    """
    horizon = _horizon_s(ctrl, spec, schedule, rate, p_rated_total_mw)
    windows, cap = _windows(spec)
    bad = given_step_problems(ctrl, dt, spec)
    if bad:
        raise ScenarioError("; ".join(bad))
    if ctrl.mpc_dt_s is not None:
        r = max(1, int(round(ctrl.mpc_dt_s / dt)))
    else:
        target = min(max(dt, 0.1, horizon / AUTO_STEPS), min(cap))
        # the shortest multiple of dt_s from the target up to the caps that divides every
        # window, else the longest below it
        m0 = max(1, int(np.ceil(target / dt - 1e-9)))
        # no window limit (a spec with only band limits, or none): nothing caps the step;
        # the target step (horizon / AUTO_STEPS, at least 0.1 s) is taken as it is
        m_cap = m0 if not windows else max(m0, int(np.floor(min(cap) / dt + 1e-9)))
        # a given level step is a whole number of MPC steps: the step divides it too
        fit = windows + [ctrl.mpc_level_dt_s] if windows and ctrl.mpc_level_dt_s is not None else windows
        r = _first_dividing(range(m0, m_cap + 1), dt, fit, ctrl.replan_s) \
            or next((m for m in range(m0, 0, -1) if divides(m * dt, fit)), 1)
    mpc_dt = r * dt
    if ctrl.horizon_s is not None and ctrl.horizon_s + 1e-9 < ctrl.replan_s:
        raise ScenarioError(f"controller.horizon_s = {ctrl.horizon_s:g} s must be at least "
                            f"replan_s = {ctrl.replan_s:g} s")
    return MpcGrid(r=r, mpc_dt=mpc_dt, k_level=_level_steps(ctrl, mpc_dt, windows, min(cap)),
                   horizon_s=horizon, n_h=max(1, int(round(horizon / mpc_dt))))
