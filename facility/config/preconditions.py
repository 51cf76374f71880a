"""What validates must run: the preconditions of every stage, checked before anything runs.

:mod:`facility.config.checks` holds the physics checks of the scenario as written; this module
adds the preconditions that the stages of a run (:func:`facility.run.orchestrator.run_scenario`) would
otherwise only find while running, after allocating their arrays:

=================== =========================================================================
stage               precondition (refused at validation, the message names key, value, unit)
=================== =========================================================================
load generator      resolved iteration shape (archetype / workload defaults filled in):
                    ``p_low_frac <= p_high_frac``; every phase resolved by ``dt_s``: period
                    >= 2 steps, compute phase ``compute_frac * period_s`` and communication
                    phase ``(1 - compute_frac) * period_s`` >= 1 step, a checkpoint and the
                    running time between checkpoints >= 1 step; ``n_rack_groups`` <= racks;
                    rack groups x steps and iterations drawn bounded
                    (:mod:`facility.workload.checks`). A start/stop ramp shorter than a step
                    is a warning (it acts as a step change).
storage             ``initial_soc_frac`` >= ``min_soc_frac + reserve_frac`` (UPS)
controller          ``sample_s`` >= half a step; filter with several storages:
                    ``slow_cutoff_hz < cutoff_hz``; co-design ``codesign_release_margin_frac
                    >= codesign_soc_margin_frac``; MPC ``horizon_s >= replan_s`` and
                    ``replan_s`` >= half a step.
monitor             a spectral limit to watch (``spec.max_band_peak_mw`` or ``spec.bands``),
                    ``every_s`` >= half a step
power flow          every feeder's upper-bound peak within 2x of its MV/LV transformer
optimizer           LP size (steps x storages x window limits) <= :data:`MAX_LP_VARIABLES`
=================== =========================================================================

Each ``check_*`` returns a list of problems, like the checks of :mod:`facility.config.checks`,
so they are reported all at once. This module holds the preconditions that need only the
configuration; those that need a domain live with it: the load generator's
(:func:`facility.workload.checks.check_job_timing`) and the feeders'
(:func:`facility.workload.checks.check_feeders`), the controller's
(:func:`facility.control.checks.check_controller_run`). :func:`facility.scenario.resolve` runs
them all, in the order of the table, on a scenario its consistency checks found nothing in.

May import: :mod:`facility.config` and :mod:`facility.errors` only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from facility.config.schema import Scenario

__all__ = [
    "MAX_LP_VARIABLES",
    "n_steps",
    "lp_size",
    "check_storage_run",
    "check_monitor",
    "check_sizes",
]

#: Largest LP the optimizer builds (variables, before any exact reduction).
MAX_LP_VARIABLES = 50_000_000

def n_steps(s: "Scenario") -> int:
    """Number of fine steps T of the run (as :func:`facility.workload.timeline.time_grid`)."""
    return max(1, int(math.ceil(s.time.horizon_s / s.time.dt_s - 1e-6)))


def check_storage_run(s: "Scenario") -> list[str]:
    """Storage parameters as the simulation resolves them (UPS reserve added to min SoC)."""
    out = []
    for name, st in s.storages().items():
        reserve = float(getattr(st, "reserve_frac", 0.0))
        if reserve and st.min_soc_frac + reserve < st.max_soc_frac and \
                st.initial_soc_frac < st.min_soc_frac + reserve - 1e-12:
            out.append(f"{name}.initial_soc_frac = {st.initial_soc_frac:g} [frac] is below "
                       f"{name}.min_soc_frac + {name}.reserve_frac = {st.min_soc_frac + reserve:g}; "
                       f"allowed: {st.min_soc_frac + reserve:g} ≤ initial_soc_frac ≤ {st.max_soc_frac:g}")
    return out


def check_monitor(s: "Scenario") -> list[str]:
    """The FFT-bin monitor needs a spectral limit to watch."""
    m, dt = s.monitor, s.time.dt_s
    if not m.enabled:
        return []
    out = []
    if s.spec.max_band_peak_mw is None and not s.spec.bands:
        out.append("monitor.enabled = true needs a spectral limit to watch: set spec.max_band_peak_mw "
                   "[MW] or add spec.bands")
    if m.every_s < 0.5 * dt:
        out.append(f"monitor.every_s = {m.every_s:g} s is shorter than half of time.dt_s = {dt:g} s; "
                   f"allowed: every_s ≥ {dt:g} s")
    return out


def lp_size(s: "Scenario") -> int:
    """Variables of the largest LP a run of ``s`` may build (0 when it builds none): per step
    and storage charge, discharge, energy and rating terms, plus two auxiliaries per step and
    window limit (the O(T) sliding-window rows of :mod:`facility.optimize.model.windows`)."""
    sto = s.storage_units()   # a hybrid section: one unit per candidate technology
    sizing = any(st.extendable for st in sto.values())
    if not sto or not (sizing or s.controller.kind in ("optimal", "mpc")):
        return 0
    sp = s.spec
    n_win = sum(v is not None for v in (sp.max_ramp_up_mw_per_s, sp.max_ramp_down_mw_per_s,
                                         sp.max_ramp_mw_per_min, sp.max_window_swing_mw,
                                         sp.max_dynamic_range_mw))
    T = n_steps(s)
    if s.controller.kind == "mpc" and not sizing:
        # (none = automatic: at most 600 s, on steps of at least horizon / 400)
        horizon = s.controller.horizon_s or 600.0
        mpc_dt = s.controller.mpc_dt_s or max(s.time.dt_s, 0.1, horizon / 400.0)
        T = max(1, int(round(horizon / mpc_dt)))
    return T * (3 * len(sto) + 2 * n_win + 1)


def check_sizes(s: "Scenario") -> list[str]:
    """The optimizer's LP bounded before it is built."""
    n = lp_size(s)
    if n > MAX_LP_VARIABLES:
        return [f"the optimizer's LP would have about {n:.3g} variables ({n_steps(s):,} steps of "
                f"time.dt_s = {s.time.dt_s:g} s x {len(s.storages())} storage(s) and the window limits), "
                f"above the limit of {MAX_LP_VARIABLES:.3g}; use a larger time.dt_s, a shorter "
                f"time.horizon_s, or fewer extendable storages"]
    return []
