"""Scenario schema, the operation sections: how the site's storage is controlled in time
(``[controller]``), the FFT-bin monitor that backs it up (``[monitor]``) and the sizing and
dispatch optimizer (``[optimize]``). Part of :mod:`facility.config.schema` (which re-exports
them); the same rules hold: a unit, a range and a description on every field, unknown keys
are errors.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from facility.config.schema_base import F, StrictModel

__all__ = ["ControllerConfig", "MonitorConfig", "OptimizeConfig"]


# --------------------------------------------------------------------------- control
ControllerKind = Literal["none", "moving_average", "filter", "mpc", "optimal", "ramp_limit"]


class ControllerConfig(StrictModel):
    """Closed-loop storage controller."""

    kind: ControllerKind = F("none", description=(
        "Controller: none, moving_average, filter, mpc, optimal (perfect foresight), ramp_limit "
        "(rate-limited grid set-point toward the load's level)."))
    window_s: float = F(10.0, unit="s", gt=0, le=86400.0,
                        description="Moving-average window (moving_average) or low-pass time constant (filter).")
    cutoff_hz: float | None = F(None, unit="Hz", gt=0, le=100.0,
                                description="Crossover frequency of the filter controller; none = 1 / (2 pi window_s).")
    soc_gain_per_s: float = F(0.002, unit="1/s", ge=0, le=10.0,
                              description="Gain of the SoC recovery term (pulls SoC back to its set point).")
    soc_target_frac: float | None = F(None, unit="frac", ge=0, le=1,
                                      description="SoC set point for recovery; none = initial_soc_frac.")
    measurement_delay_s: float = F(0.0, unit="s", ge=0, le=60.0, description="Delay of the power measurement the controller sees.")
    sample_s: float | None = F(None, unit="s", gt=0, le=3600.0, description="Controller sampling period; none = every step.")
    horizon_s: float | None = F(None, unit="s", gt=0, le=86400.0, description=(
        "MPC prediction horizon; none = long enough to ramp the largest change of the declared "
        "schedule at the spec's allowed rate, half before and half after it, and to make room "
        "in storage at full power for the energy that change leaves to it (span / rate + "
        "span^2 / (2 rate) / sum of p_rated + 2 x spec.window_s), between 30 and 600 s."))
    replan_s: float = F(5.0, unit="s", gt=0, le=86400.0, description="MPC re-planning interval.")
    mpc_reuse_max: int = F(4, unit="-", ge=0, le=1000, description=(
        "MPC: re-plans in a row that may keep the plan in force (shifted, no LP solve) where it "
        "still holds: it was a plain plan, and the new forecast, the PCC measured since and "
        "each storage's energy agree with it within 2 % of the smallest window allowance "
        "(of the rating for the energy); 0 = every re-plan solves."))
    mpc_dt_s: float | None = F(None, unit="s", gt=0, le=3600.0, description=(
        "MPC time step (rounded to a multiple of dt_s); it must divide every window of the "
        "spec's limits (ramp_window_s, window_s, 60 s under a per-minute limit), else validate "
        "refuses it (exit 2). None = max(dt_s, 0.1 s, horizon / 400), "
        "at most half the ramp window, a quarter of the swing window and 7.5 s under a "
        "per-minute limit."))
    mpc_level_dt_s: float | None = F(None, unit="s", gt=0, le=3600.0, description=(
        "MPC step of the plans made on a level forecast (a jittered load whose iterations "
        "do not follow the nominal waveform: the plan sees no ripple, so it needs no fine "
        "grid); the plan is held over each of these steps. Rounded to a multiple of the MPC "
        "step; it must divide every window of the spec's limits (with mpc_dt_s unset: it must "
        "also be a multiple of dt_s, and the MPC step is chosen to divide it), else validate "
        "refuses it (exit 2); none = the longest multiple of the MPC step up to the caps of mpc_dt_s that "
        "divides every window of the spec's limits (the MPC step when mpc_dt_s is set or "
        "the spec has no window limit)."))
    forecast: Literal["perfect", "persistence", "periodic"] = F("periodic", description=(
        "Forecast the MPC plans on: periodic = the load level over whole iteration periods "
        "(period detected from the last windows) moved ahead by the declared schedule; "
        "persistence = the last MPC step held; perfect = the load it will draw."))
    forecast_schedule: bool = F(True, description=(
        "Let the periodic forecast use the declared schedule (job start/stop ramps, "
        "checkpoints) to move the measured level ahead."))
    level_window_s: float = F(10.0, unit="s", gt=0, le=3600.0, description=(
        "Longest window the MPC averages the measured load level over (whole iteration "
        "periods)."))
    mpc_crossover_s: float = F(60.0, unit="s", gt=0, le=86400.0, description=(
        "Load changes faster than this go to storage, slower ones to the grid at the allowed "
        "rate: sets the MPC's price on PCC variation against the storages' loss price."))
    mpc_deadline_s: float | None = F(None, unit="s", gt=0, le=3600.0, description=(
        "A re-plan that takes longer (wall time) is dropped and the filter controller runs "
        "the interval; none = replan_s (a live plan must be ready before the next one). Also "
        "the solver's time limit."))
    mpc_reserve_factor: float = F(1.25, unit="-", ge=0, le=10.0, description=(
        "Each storage's planning SoC window is narrowed on both sides by this times the "
        "energy excursion of its share of the iteration ripple."))
    crash_reserve_mw: float | None = F(None, unit="MW", ge=0, le=1e5, description=(
        "MPC: the largest load drop nobody announces (a job crash: the job's level minus its "
        "idle level) that the storages must absorb while the PCC falls at the allowed rate; "
        "the SoC target is kept eta_c dP^2 / (2 rho) below the top of the planning window "
        "(rho: the spec's allowed rate with the MPC's margin). 0 = no reserve; none = the "
        "largest such drop of a job with [jobs.failures] (iteration-mean power above idle, "
        "with the non-GPU share and PUE), 0 without failures."))
    codesign: bool = F(True, description="Engage GPU controls when storage nears a SoC bound (the paper's co-design).")
    codesign_soc_margin_frac: float = F(0.05, unit="frac", ge=0, le=0.5, description="SoC distance to a bound at which GPU controls engage.")
    codesign_release_margin_frac: float | None = F(None, unit="frac", ge=0, le=0.5, description=(
        "SoC distance to every bound at which GPU controls release again (hysteresis); "
        "none = 2 x codesign_soc_margin_frac."))
    codesign_hold_s: float = F(5.0, unit="s", ge=0, le=3600.0,
                               description="Shortest engagement of the GPU controls before they may release.")
    codesign_blend_s: float | None = F(None, unit="s", ge=0, le=600.0, description=(
        "Time over which the drawn load moves linearly between the plain and the GPU-engaged "
        "site power when the co-design engages or releases; none = derived from the spec: the "
        "mean drawn power moves at half the rate the ramp and window limits allow; 0 = switch "
        "at once."))
    slow_cutoff_hz: float | None = F(None, unit="Hz", gt=0, le=100.0, description=(
        "Lower crossover of the filter controller: slow storages (UPS, BESS) take the band "
        "between slow_cutoff_hz and cutoff_hz; none = cutoff_hz / 10."))
    forecast_period_s: float | None = F(None, unit="s", gt=0, le=86400.0, description=(
        "Period the 'periodic' MPC forecast repeats; none = estimated from the measured "
        "history (autocorrelation)."))
    reservoir_gain_per_s: float | None = F(None, unit="1/s", ge=0, le=10.0, description=(
        "With several storages (moving_average, filter): gain of the fast storage's SoC "
        "recovery fed by the slow storages (UPS, BESS) instead of the grid; none = "
        "1 / (4 window_s); 0 = off (the fast storage recovers from the grid with "
        "soc_gain_per_s)."))
    mpc_limit_margin_frac: float | None = F(None, unit="frac", ge=0, lt=1, description=(
        "The MPC plans against the spec's ramp, window-swing and dynamic-range limits scaled "
        "by (1 - mpc_limit_margin_frac), leaving room for forecast and execution errors "
        "(an LP uses every MW a limit allows); none = optimize.limit_margin_frac where that is "
        "set (a design sized with that margin is exact for plans at it; `facility size` sets "
        "it), else 0.3."))
    warm_start: bool = F(True, description=(
        "Start the controller as if it had been running before t = 0 on the same load (the "
        "load before t = 0 is taken to repeat the first window): its moving average, filters "
        "and MPC history start from the first window instead of from nothing. false = cold "
        "start: the controller knows nothing before its first measurement, and a job already "
        "swinging at t = 0 produces a start-up transient."))
    report_regret: bool = F(False, description=(
        "Also run the 'optimal' (perfect-foresight) controller on the same site and report "
        "how far this run is from it (metrics 'regret': energy overhead, limit margins, "
        "storage throughput). One LP over the whole horizon: slow on long, fine horizons."))
    guard: bool = F(True, description=(
        "Fast guard under the deployable controllers (moving_average, filter, mpc, ramp_limit): "
        "each step the PCC set-point is clipped to what the spec's rolling windows and ramp "
        "limits allow after the measured PCC history, and the storage takes the difference; "
        "a storage that saturates meanwhile is reported as a guard breach (docs/control.md)."))
    guard_margin_frac: float = F(0.1, unit="frac", ge=0, lt=1, description=(
        "The guard holds (1 - guard_margin_frac) of each window and ramp limit, leaving the "
        "rest for the network losses between storage and PCC and for measurement error."))
    max_ramp_mw_per_s: float | None = F(None, unit="MW/s", gt=0, le=1e6, description=(
        "ramp_limit: largest rate of change of the grid set-point; none = (1 - "
        "guard_margin_frac) x the fastest steady change the spec's ramp and window limits "
        "allow (min of the ramp limits, max_window_swing_mw / window_s, max_ramp_mw_per_min / "
        "60); unlimited where the spec sets none (the set-point then is the load's level)."))
    soc_band_frac: float = F(0.05, unit="frac", ge=0, le=0.5, description=(
        "ramp_limit: half-width of the SoC band around the SoC target (soc_target_frac, else "
        "initial_soc_frac) inside which the controller does no SoC recovery."))
    soc_recovery_s: float = F(120.0, unit="s", gt=0, le=86400.0, description=(
        "ramp_limit: time constant of the SoC recovery toward the band: a storage outside it "
        "adds (band edge - SoC) x e_rated / soc_recovery_s to the grid set-point's target."))
    target_ramp_mw_per_s: float | None = F(None, unit="MW/s", gt=0, le=1e6, description=(
        "Largest rate of change of the grid target of the moving_average and filter "
        "controllers (trades a gentler start-up transient for storage energy); none = "
        "unlimited."))


class MonitorConfig(StrictModel):
    """FFT-bin monitor backstop on the PCC power."""

    enabled: bool = F(False, description="Switch the spectral monitor on.")
    window_s: float = F(10.0, unit="s", gt=0, le=3600.0, description="Length of the sliding FFT window.")
    every_s: float = F(1.0, unit="s", gt=0, le=3600.0, description="How often the spectrum is evaluated.")
    throttle_frac: float = F(0.1, unit="frac", ge=0, le=1, description="Soft response: share of the swing removed by load shaping.")
    shed_after_s: float = F(10.0, unit="s", ge=0, le=3600.0, description="Escalate to shedding when a violation persists this long.")
    shed_frac: float = F(0.5, unit="frac", ge=0, le=1,
                         description="Shedding: share of the site load disconnected while the shedding tier is active.")
    release_after_s: float | None = F(None, unit="s", ge=0, le=3600.0, description=(
        "Step the response down one tier after the spectrum has been within its limits this "
        "long; none = window_s."))
    release_frac: float = F(0.8, unit="frac", gt=0, le=1, description=(
        "A window counts as within limits for release when every band peak is below "
        "release_frac x its limit (hysteresis)."))


#: Annuity lifetime of a storage whose scenario sets no optimize.lifetime_years and whose
#: technology gives no calendar life. [year]
DEFAULT_LIFETIME_YEARS = 15.0


class OptimizeConfig(StrictModel):
    """Economics and options of the sizing / dispatch optimization."""

    @property
    def lifetime_or_default_years(self) -> float:
        """``lifetime_years``, or :data:`DEFAULT_LIFETIME_YEARS` where it is not set. [year]"""
        return DEFAULT_LIFETIME_YEARS if self.lifetime_years is None else float(self.lifetime_years)

    lifetime_years: float | None = F(None, unit="year", gt=0, le=100.0, description=(
        "Economic lifetime of storage for the capex annuity; none = each storage's "
        "calendar_life_years (from its technology), 15 years where none is known."))
    discount_rate_frac: float = F(0.07, unit="frac/year", ge=0, le=1, description="Discount rate of the annuity.")
    annualize: bool = F(True, description=(
        "Objective: the annualized cost (true: capex annuity scaled to the horizon beside the "
        "horizon's energy, degradation and slowdown, i.e. USD/yr x horizon / 1 yr, the cost "
        "facility size reports), or the horizon-only form (false: the full capex charged once "
        "against one horizon's energy)."))
    energy_price_usd_per_mwh: float = F(60.0, unit="USD/MWh", ge=0, le=1e5, description="Price of energy lost in conversion or burned.")
    solver: str = F("highs", description=(
        "Solver: 'highs' (the LP matrix passed to HiGHS directly) or 'appsi_highs' (a Pyomo model, "
        "HiGHS through APPSI); case is ignored."))
    time_limit_s: float = F(600.0, unit="s", gt=0, le=86400.0, description="Solver time limit.")
    mip_rel_gap: float = F(1e-6, unit="frac", ge=0, le=1, description="Relative optimality tolerance (LP: unused).")
    coarsen: bool = F(True, description=(
        "Solve on a coarser step where that is exact (same optimum): the load is constant on groups of "
        "g steps, every window limit spans a multiple of g steps, no storage has self-discharge or a "
        "converter ramp limit; false = always on time.dt_s."))
    periodic: bool | None = F(None, description=(
        "Periodic steady-state reduction where the load repeats exactly (a few periods stand for "
        "many, bracketed by a proven lower bound): none = tried once on horizons of >= 2000 steps "
        "when it at least halves the LP, the full LP when its gap is above max_gap_frac; "
        "true = tried on any horizon, widening the explicit margin until the gap is met, else the "
        "best bracket with a warning stating its gap; false = never (always the full LP)."))
    max_gap_frac: float = F(1e-3, unit="frac", ge=0, le=0.1, description=(
        "Largest proven relative gap (upper minus lower bound) to the full LP's optimum that the "
        "periodic reduction or the interior-point strategy (long loads that do not repeat) may "
        "leave; the periodic reduction runs the full LP when its gap is wider, the interior-point "
        "strategy repairs its plan or solves its relaxation while time is left, else the verified "
        "plan is returned with a warning stating its gap and why."))
    milp_bound_s: float = F(0.0, unit="s", ge=0, le=86400.0, description=(
        "Opt-in: where the proven gap stays above max_gap_frac because the LP charges and discharges "
        "one storage at once (gap_reason 'complementarity'), spend up to this long on branch and "
        "bound (HiGHS) with a binary on each step where the LP with the forced directions still "
        "does, for a tighter lower bound (and its plan, where cheaper); 0 = off. Minutes at a few "
        "thousand steps (sizing_start_ramp: 2.0 % -> 0.21 % in 33 s); not tried above 12,000 steps."))
    allow_slack: bool = F(False, description="Solve with penalized slacks instead of hard limits (diagnosis mode).")
    limit_margin_frac: float = F(0.0, unit="frac", ge=0, lt=1, description=(
        "Tighten every window / dynamic-range / band peak limit by this share in the optimizer: "
        "room left for a controller's forecast and execution errors (the MPC's default margin) or "
        "for what the model leaves out. facility size sizes through the network's losses itself "
        "(loss_tol_frac) and raises this only as a last resort (max_verify_runs)."))
    loss_tol_frac: float = F(1e-3, unit="frac", gt=0, le=0.05, description=(
        "facility size: the loss-aware sizing (the LP on the PCC power through the network, "
        "sequential LP) stops when the LP's PCC power and the power flow's agree within this "
        "share of the smallest spec limit (as MW over its window); the LP holds every limit at "
        "(1 - 2 x loss_tol_frac) of its value, so a converged plan meets them through the network."))
    max_loss_rounds: int = F(5, unit="-", ge=1, le=20, description=(
        "facility size: largest number of rounds (LP solves) of the loss-aware sizing."))
    max_resize_runs: int = F(8, unit="-", ge=1, le=30, description=(
        "facility size with a deployable controller (not 'optimal'): largest number of "
        "verification runs of the bracketed search that grows the foresight design's ratings "
        "until that controller keeps the site compliant."))
    max_verify_runs: int = F(5, unit="-", ge=1, le=20, description=(
        "facility size: largest number of size-and-verify rounds of the last resort: where the "
        "verification run of a converged loss-aware design still breaks a limit the LP sized for, "
        "the LP is solved again with the limit_margin_frac the excess calls for (reported in "
        "sizing.json as margin_loop). 1 = no such round."))
    max_feeder_p_mw: float | None = F(None, unit="MW", gt=0, le=1e6, description=(
        "Largest active power of site load + rack storage + UPS battery at the UPS outputs, all "
        "feeders together (|P| <= this); none = no such row in the LP. facility run/size set it to "
        "the network's capacity (metrics: electrical.feeder_capacity_mw) when grid.limit_storage is "
        "true, or to the smaller of the two when it is set here."))
    max_site_p_mw: float | None = F(None, unit="MW", gt=0, le=1e6, description=(
        "Largest lossless site power: site load + every storage (|P| <= this), e.g. the substation "
        "or an interconnection limit; none = no such row. facility run/size set it from the network "
        "(electrical.site_capacity_mw) as for max_feeder_p_mw."))
    max_bess_p_mw: float | None = F(None, unit="MW", gt=0, le=1e6, description=(
        "Largest BESS charge / discharge power its connection carries; none = p_rated_mw only. "
        "facility run/size set it from the BESS transformer (electrical.bess_capacity_mw) as for "
        "max_feeder_p_mw."))
    levers: list[Literal["storage", "floor", "burn", "cap"]] = F(["storage"], description=(
        "Which mitigations the optimizer decides (docs/formulation.md, GPU levers): 'storage' "
        "(the ratings of the extendable storages), 'floor' (the GPU power floor per job, within "
        "the GPU's programmable range), 'burn' (power burned per job and step within the GPUs' "
        "headroom, realized as a dummy load), 'cap' (a static GPU power cap per job, its "
        "slowdown priced at slowdown_usd_per_gpu_h). Default storage only; any GPU lever needs "
        "annualize = true."), min_length=1)
    slowdown_usd_per_gpu_h: float = F(2.5, unit="USD/GPU-h", ge=0, le=1e4, description=(
        "Value of lost training time: what one GPU-hour of extra running time costs (the cap "
        "lever's slowdown). Default 2.5 USD/GPU-h, the on-demand rental of an H100 SXM at "
        "specialty clouds in early 2026 (2.49-3.99 USD/GPU-h, e.g. pricegpu.pages.dev 'H100 vs "
        "A100 cloud pricing'; 2.50-3.50 at specialty providers, mercatus-ai.com 'cloud GPU "
        "pricing 2026'); Blackwell GPUs rent higher."))

    @field_validator("levers")
    @classmethod
    def _levers_unique(cls, v: list) -> list:
        if len(set(v)) != len(v):
            raise ValueError(f"repeated entries in {v}; allowed: storage, floor, burn, cap, each once")
        return v

    @field_validator("solver")
    @classmethod
    def _solver_known(cls, v: str) -> str:
        if v.lower() not in ("highs", "appsi_highs"):
            raise ValueError("unknown solver; allowed: 'highs' or 'appsi_highs'")
        return v
