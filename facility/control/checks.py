"""The checks of a scenario that need the control loop: the controller's preconditions
(sampling, filter cut-offs, co-design hysteresis, the MPC's horizon and its time grid).

Returns a list of problems (strings naming key, unit and range), like the checks of
:mod:`facility.config.checks`; :func:`facility.scenario.resolve` runs it with the others.

May import: :mod:`facility.config`, :mod:`facility.errors` and :mod:`facility.control`.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

from facility.control.mpc_grid import given_step_problems

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = ["check_controller_run"]

log = logging.getLogger(__name__)


def check_controller_run(s: "Scenario") -> list[str]:
    """Controller timing and filter/co-design/MPC parameters, as the control loop needs them."""
    c = s.controller
    dt = s.time.dt_s
    sto = s.storage_units()
    out = []
    kind = c.kind
    if kind == "none" and any(st.extendable for st in sto.values()):
        # what run and size verify a design under (facility.sizing.verification_controller)
        kind = "mpc"
    if kind == "none" or not sto:
        return out
    if c.sample_s is not None:
        if c.sample_s < 0.5 * dt:
            out.append(f"controller.sample_s = {c.sample_s:g} s is shorter than half of time.dt_s = "
                       f"{dt:g} s; allowed: sample_s ≥ {dt:g} s (or none = every step)")
        elif abs(round(c.sample_s / dt) * dt - c.sample_s) > 1e-6 * c.sample_s:
            log.warning("controller.sample_s = %g s is not a whole number of time.dt_s = %g s steps; "
                        "the controller samples every %d steps (%g s)", c.sample_s, dt,
                        round(c.sample_s / dt), round(c.sample_s / dt) * dt)
    if kind == "filter" and len(sto) > 1:
        fc = c.cutoff_hz if c.cutoff_hz is not None else 1.0 / (2 * math.pi * c.window_s)
        fcs = c.slow_cutoff_hz if c.slow_cutoff_hz is not None else fc / 10.0
        if fcs >= fc:
            out.append(f"controller.slow_cutoff_hz = {fcs:g} Hz must be below controller.cutoff_hz = "
                       f"{fc:g} Hz{'' if c.cutoff_hz is not None else ' (1 / (2 pi controller.window_s))'}")
    gpu_on = s.gpu_smoothing.enabled or s.firefly.enabled or s.power_cap.enabled
    if c.codesign and gpu_on:
        margin = c.codesign_soc_margin_frac
        rel = 2 * margin if c.codesign_release_margin_frac is None else c.codesign_release_margin_frac
        if rel < margin:
            out.append(f"controller.codesign_release_margin_frac = {rel:g} must be at least "
                       f"controller.codesign_soc_margin_frac = {margin:g} [frac] (hysteresis)")
    if kind == "mpc" and c.horizon_s is not None and c.horizon_s + 1e-9 < c.replan_s:
        out.append(f"controller.horizon_s = {c.horizon_s:g} s must be at least controller.replan_s = "
                   f"{c.replan_s:g} s")
    if kind == "mpc":
        # the MPC's grid refuses these at the run (facility.control.mpc_grid.choose_grid); with
        # controller.kind = 'none' an extendable design is verified under the MPC
        why = "" if c.kind == "mpc" else (" (controller.kind = 'none' with an extendable storage: run and "
                                          "size verify the design under the MPC)")
        out.extend(p + why for p in given_step_problems(c, dt, s.spec))
    if kind == "mpc" and c.replan_s < 0.5 * dt:
        out.append(f"controller.replan_s = {c.replan_s:g} s is shorter than half of time.dt_s = {dt:g} s; "
                   f"allowed: replan_s ≥ {dt:g} s")
    return out
