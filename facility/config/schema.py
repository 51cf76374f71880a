"""Scenario schema: pydantic models with a unit, a range and a description on every field.

This is the single source of truth for scenario keys; ``docs/scenario-reference.md`` is
generated from it (:func:`facility.config.reference.render_reference`). Every model forbids
unknown keys, so a typo fails loudly. Cross-field physics checks live in
:mod:`facility.config.checks`.

The operation sections (``[controller]``, ``[monitor]``, ``[optimize]``) live in
:mod:`facility.config.operation`, the field helper and base model in
:mod:`facility.config.schema_base`; this module re-exports them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from facility.config.events import GridEventConfig, RideThroughSpec
from facility.config.grid_impact import GridImpactConfig
from facility.config.operation import ControllerConfig, MonitorConfig, OptimizeConfig
from facility.config.resolved import NotResolvedError
from facility.config.schema_base import F, StrictModel
from facility.config.technology import unit_configs

__all__ = [
    "F",
    "StrictModel",
    "TimeConfig",
    "JobConfig",
    "JobFailuresConfig",
    "GpuSmoothingConfig",
    "FireflyConfig",
    "PowerCapConfig",
    "SiteConfig",
    "StorageConfig",
    "RackStorageConfig",
    "UpsConfig",
    "BessConfig",
    "GridConfig",
    "SpecBand",
    "SpecConfig",
    "GridEventConfig",
    "RideThroughSpec",
    "ControllerConfig",
    "MonitorConfig",
    "OptimizeConfig",
    "GridImpactConfig",
    "Scenario",
    "STORAGE_NAMES",
]

STORAGE_NAMES = ("rack_storage", "ups", "bess")


# --------------------------------------------------------------------------- time
class TimeConfig(StrictModel):
    """Simulated horizon and the fine time step."""

    horizon_s: float = F(60.0, unit="s", gt=0, le=7 * 86400.0,
                         description="Length of the simulated horizon, starting at t = 0.")
    dt_s: float = F(0.01, unit="s", gt=0, le=3600.0,
                    description="Uniform fine time step. 10 ms resolves the 0.1-20 Hz band.")


# --------------------------------------------------------------------------- jobs
WorkloadKind = Literal["square", "stochastic", "trace"]
ArchetypeName = Literal["llm_pretrain", "llm_pretrain_h100", "finetune", "adapter_tuning"]


class JobFailuresConfig(StrictModel):
    """Unplanned interruptions of one job: a crash drops the whole job to idle, a restart
    reloads the last checkpoint and ramps back (docs/failures.md)."""

    rate_per_gpu_h: float | None = F(None, unit="1/GPU-h", ge=0, le=0.01, description=(
        "Rate of job-wide crashes per GPU-hour of running (a Poisson process drawn from the "
        "scenario seed; the job's rate is this times n_gpus). Meta's Llama 3 pre-training: 419 "
        "unexpected interruptions in 54 days on 16,384 H100 = 1.97e-5 per GPU-hour (The Llama 3 "
        "Herd of Models, 2024, sec. 3.3.4). None = no random crashes."))
    crash_times_s: list[float] = F([], unit="s", description=(
        "Declared crash times (ascending, while the job runs), instead of a rate."))
    crash_drop_s: float = F(1.0, unit="s", ge=0, le=60.0, description=(
        "Time the job's power takes to fall from its level to idle after a crash (linear); "
        "0 = within one step."))
    restart_after_s: float = F(600.0, unit="s", ge=0, le=86400.0, description=(
        "Time from a crash to the restart (detection, rescheduling, checkpoint reload at idle); "
        "the job's start ramp (ramp_s) follows. Must be at least crash_drop_s."))


class JobConfig(StrictModel):
    """One training job: which GPUs, how many, and the shape of its iterations."""

    name: str = F("job", description="Job name, unique within the scenario.", min_length=1)
    n_gpus: int = F(unit="GPU", gt=0, le=10_000_000, description="Number of GPUs the job uses.")
    gpu: str = F("h100", description="GPU model: a file name (without .toml) in models/gpus/.")
    workload: WorkloadKind = F("square", description=(
        "Waveform: 'square' (ideal synchronous iterations), 'stochastic' (jittered periods and "
        "duties, per-phase noise, after Ko & Zhu), 'trace' (replay of a measured CSV)."))
    archetype: ArchetypeName | None = F(None, description=(
        "Named preset (llm_pretrain, llm_pretrain_h100, finetune, adapter_tuning) supplying defaults "
        "for period_s, compute_frac, p_low_frac and the noise terms (llm_pretrain_h100 also "
        "p_high_frac and checkpoint_frac, calibrated on measured H100 traces); explicit keys override it."))
    period_s: float | None = F(None, unit="s", gt=0, le=3600.0,
                               description="Mean iteration period (compute + communication). Default 1.0 s or the archetype's.")
    compute_frac: float | None = F(None, unit="frac", gt=0, lt=1,
                                   description="Share of each iteration in the compute phase (duty D). Default 0.7 or the archetype's.")
    p_high_frac: float = F(1.0, unit="frac of TDP", gt=0, le=1.2,
                           description="GPU power in the compute phase as a fraction of TDP.")
    p_low_frac: float | None = F(None, unit="frac of TDP", ge=0, lt=1.2,
                                 description="GPU power in the communication phase as a fraction of TDP. Default 0.2 or the archetype's.")
    start_s: float = F(0.0, unit="s", ge=-1e9, le=1e9, description=(
        "Time the job starts (its start ramp begins). start_s <= 0 means the job is already "
        "running at t = 0."))
    stop_s: float | None = F(None, unit="s", ge=-1e9, le=1e9,
                             description="Time the job stops (its stop ramp begins); none = runs past the horizon.")
    ramp_s: float = F(0.0, unit="s", ge=0, le=3600.0,
                      description="Duration of the linear start and stop ramps between idle and the iteration waveform.")
    checkpoint_every_s: float | None = F(None, unit="s", gt=0, le=1e7,
                                         description="Interval between checkpoints; none = no checkpoints.")
    checkpoint_s: float = F(0.0, unit="s", ge=0, le=1e5,
                            description="Duration of each checkpoint, during which the GPUs sit near idle.")
    checkpoint_frac: float | None = F(None, unit="frac of TDP", ge=0, le=1,
                                      description="GPU power during checkpoints; none = the GPU's idle power.")
    jitter_frac: float | None = F(None, unit="frac", ge=0, le=0.5, description=(
        "Relative standard deviation of the iteration period (sigma_xi). Default: 0 for "
        "'square', 0.1 for 'stochastic'."))
    compute_frac_jitter: float | None = F(None, unit="frac", ge=0, le=0.3,
                                          description="Standard deviation of the per-iteration duty. Default: 0 for 'square', 0.03 for 'stochastic'.")
    noise_high_frac: float | None = F(None, unit="frac of TDP", ge=0, le=0.3,
                                      description="Intra-phase noise (std) in the compute phase. Default: 0 for 'square', 0.03 for 'stochastic'.")
    noise_low_frac: float | None = F(None, unit="frac of TDP", ge=0, le=0.3,
                                     description="Intra-phase noise (std) in the communication phase. Default: 0 for 'square', 0.02 for 'stochastic'.")
    drop_jitter_frac: float | None = F(None, unit="frac of TDP", ge=0, le=0.3,
                                       description="Std of the per-iteration depth of the communication-phase drop. Default: 0 for 'square', 0.03 for 'stochastic'.")
    gpus_per_rack: int | None = F(None, unit="GPU", gt=0, le=100_000,
                                  description="GPUs per rack; none = the GPU model's (GB200 NVL72: 72).")
    n_rack_groups: int | None = F(None, unit="-", gt=0, le=4096, description=(
        "Number of rack groups the job is split into (each a row of the load matrix and an LV "
        "load). Default: min(64, number of racks)."))
    phase_offset_s: float | None = F(None, unit="s", ge=0, le=10.0, description=(
        "Std of the per-rack-group phase offset (skew of the collective). Default: 0 for "
        "'square', 0.005 s for 'stochastic'."))
    straggler_frac: float | None = F(None, unit="frac", ge=0, le=1, description=(
        "Share of rack groups that are stragglers and start their compute phase late. "
        "Default: 0 for 'square', 0.05 for 'stochastic'."))
    straggler_delay_s: float = F(0.02, unit="s", ge=0, le=10.0,
                                 description="Extra delay of a straggler group's compute phase.")
    trace_file: str | None = F(None, description=(
        "CSV of a measured power trace for workload = 'trace' (relative paths resolve against "
        "the scenario file). Columns: a time column (t_s, timestamp, time) and a power column "
        "(p_gpu_w, power.draw [W], DCGM_FI_DEV_POWER_USAGE, ...)."))
    trace_scale: Literal["per_gpu", "per_node", "normalized"] = F("per_gpu", description=(
        "What the trace's power column(s) measure: one GPU [W] (several GPUs in one file are "
        "averaged per poll), one node [W] (divided by gpus_per_node; per-GPU rows or columns are "
        "summed, and must number gpus_per_node), or a fraction of TDP."))
    trace_sensor: Literal["auto", "instant", "average_1s"] = F("auto", description=(
        "The sensor behind the trace's power: 'instant' (nvidia-smi power.draw.instant, "
        "DCGM_FI_DEV_POWER_USAGE_INSTANT, facility record), 'average_1s' (NVML's 1-s average: "
        "power.draw and nvmlDeviceGetPowerUsage on Ampere and newer), or 'auto' (from the column "
        "name, the file's '# sensor:' line and the GPU model). An averaged trace cannot show "
        "content above ~0.5 Hz; validate warns when the spec has limits there."))
    gpus_per_node: int = F(8, unit="GPU", gt=0, le=1024,
                           description="GPUs per node, for trace_scale = 'per_node'.")
    trace_gpus_per_poll: int | None = F(None, unit="GPU", gt=0, le=1024, description=(
        "GPUs per poll of a trace file without a GPU id column (nvidia-smi --query-gpu="
        "timestamp,power.draw,... writes one row per GPU per poll, in a fixed GPU order); "
        "none = found from the file's timestamps and repeating memory.used / utilization.gpu "
        "values (an ambiguous file is refused and asks for this key)."))
    trace_drop_na: bool = F(False, description=(
        "Drop '[N/A]' power readings of the trace (each is filled from its own GPU's "
        "neighbouring polls; the count is reported in the events); false = refuse the file."))
    trace_loop: bool = F(True, description="Repeat the trace when it is shorter than the job's running time.")
    failures: JobFailuresConfig | None = F(None, description=(
        "Crashes and restarts of the job ([jobs.failures]); none = the job never fails."))

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not v.replace("_", "").replace("-", "").isalnum():
            raise ValueError("must contain only letters, digits, '_' and '-'")
        return v


# --------------------------------------------------------------------------- GPU controls
class GpuSmoothingConfig(StrictModel):
    """GB200-style GPU power smoothing: minimum power floor, programmed ramps, stop delay."""

    enabled: bool = F(False, description="Switch GPU power smoothing on.")
    floor_frac: float = F(0.0, unit="frac of TDP", ge=0, le=1,
                          description="Minimum power floor (MPF) held while a workload runs, as a fraction of TDP.")
    ramp_up_w_per_s: float | None = F(None, unit="W/s per GPU", gt=0, le=1e9,
                                      description="Programmed ramp-up rate of each GPU; none = unlimited.")
    ramp_down_w_per_s: float | None = F(None, unit="W/s per GPU", gt=0, le=1e9,
                                        description="Programmed ramp-down rate of each GPU; none = unlimited.")
    stop_delay_s: float = F(0.0, unit="s", ge=0, le=3600.0,
                            description="How long the floor is held after the workload stops before ramping down.")
    ramp_down_hysteresis_s: float = F(0.0, unit="s", ge=0, le=60.0,
                                      description="NVML RAMP_DOWN_HYSTERESIS: delay before a ramp-down starts after demand falls.")
    secondary_floor_frac: float | None = F(None, unit="frac of TDP", ge=0, le=1, description=(
        "NVML SECONDARY_POWER_FLOOR: floor applied during active workload periods while the "
        "activation moving average stays above the primary-floor activation point; none = off."))
    activation_window_s: float = F(0.0, unit="s", ge=0, le=60.0, description=(
        "NVML primary-floor activation window (window multiplier x unit): the moving average "
        "that switches between secondary and primary floor; 0 = no secondary floor."))
    activation_offset_frac: float = F(0.0, unit="frac of TDP", ge=0, le=1, description=(
        "NVML PRIMARY_FLOOR_ACT_OFFSET: the primary floor engages when the activation moving "
        "average falls below secondary floor + this offset."))


class FireflyConfig(StrictModel):
    """Software 'firefly' secondary load that fills communication phases."""

    enabled: bool = F(False, description="Switch the firefly secondary load on.")
    trigger_frac: float = F(0.5, unit="frac of TDP", ge=0, le=1,
                            description="Launch the secondary load when GPU power falls below this fraction of TDP.")
    target_frac: float = F(0.8, unit="frac of TDP", ge=0, le=1.0,
                           description="GPU power the secondary load fills up to.")
    latency_s: float = F(0.05, unit="s", ge=0, le=10.0,
                         description="Telemetry + launch latency before the fill-in starts (paper: 1-100 ms).")
    backoff_every_s: float = F(0.0, unit="s", ge=0, le=60.0,
                               description="Period of the back-off that re-reads the counters; 0 = no back-off.")
    backoff_s: float = F(0.0, unit="s", ge=0, le=10.0,
                         description="Duration of each back-off (secondary load paused).")
    contention_frac: float = F(0.03, unit="frac", ge=0, le=0.5,
                               description="Slowdown of the primary job's compute while the secondary load overlaps it (paper: < 5 % with MPS).")


class PowerCapConfig(StrictModel):
    """Static GPU power cap (or the equivalent frequency cap)."""

    enabled: bool = F(False, description="Switch the power cap on.")
    cap_frac: float = F(1.0, unit="frac of TDP", gt=0, le=1.0,
                        description="Power cap as a fraction of TDP; compute phases above it are clipped and stretched.")
    perf_exponent: float = F(0.5, unit="-", ge=0, le=3.0, description=(
        "Throughput ~ (power ratio)^perf_exponent in the compute phase (clock/power "
        "sub-linearity): a cap to fraction c stretches compute by c^-perf_exponent."))


# --------------------------------------------------------------------------- site
class SiteConfig(StrictModel):
    """Site aggregation: non-GPU IT power and cooling."""

    non_gpu_frac: float = F(0.3, unit="frac of GPU power", ge=0, le=5.0,
                            description="Non-GPU server power (CPUs, NICs, fans, PSU losses) as a fraction of GPU power.")
    pue: float = F(1.2, unit="-", ge=1.0, le=3.0,
                   description="Power usage effectiveness: site power / IT power on average.")
    cooling_tau_s: float = F(0.0, unit="s", ge=0, le=3600.0, description=(
        "Time constant of the first-order lag of cooling power behind IT power. 0 (default) = "
        "cooling follows IT power instantly, so p_site = p_gpu (1 + non_gpu_frac) pue exactly; "
        "about 30 s is realistic (chillers and fans do not follow 1 Hz swings)."))
    base_load_mw: float = F(0.0, unit="MW", ge=0, le=10_000.0,
                            description="Constant site load outside the GPU servers (offices, storage, network core).")
    cooling_vm_exponent: float = F(2.0, unit="-", ge=0, le=3.0, description=(
        "Voltage exponent np of the cooling load (not on the UPS) during [[grid_events]]: "
        "P = P0 (V / 1 pu)^np; 2 = constant impedance (default), 1 = constant current, 0 = "
        "constant power (the exponential static load model, IEEE Task Force on Load "
        "Representation, 1993)."))
    cooling_dropout_vm_pu: float | None = F(None, unit="pu", gt=0, lt=1.0, description=(
        "Voltage below which the cooling motors' contactors drop out during [[grid_events]] (the "
        "cooling load is then 0); none = no dropout. AC contactors are reported to drop out at "
        "about 0.5-0.7 pu (unverified here)."))
    cooling_restart_s: float = F(10.0, unit="s", ge=0, le=3600.0, description=(
        "Time after the voltage returns above cooling_dropout_vm_pu before dropped-out cooling "
        "draws again (restart sequencing; 10 s is an assumption, unverified)."))


# --------------------------------------------------------------------------- storage
class StorageConfig(StrictModel):
    """Common fields of rack-level storage, the UPS battery and the substation BESS."""

    #: where each key filled from ``technology`` came from (set by the loader, for
    #: ``scenario.resolved.toml``; not a scenario key)
    _defaults_from: dict = PrivateAttr(default_factory=dict)

    enabled: bool = F(False, description="Include this storage.")
    p_rated_mw: float | None = F(None, unit="MW", ge=0, le=100_000.0,
                                 description="Rated charge/discharge power (fixed when extendable = false).")
    e_rated_mwh: float | None = F(None, unit="MWh", ge=0, le=1e6,
                                  description="Rated usable energy (fixed when extendable = false).")
    extendable: bool = F(False, description="Let the optimizer choose p_rated_mw and e_rated_mwh within [min_*, max_*].")
    min_p_rated_mw: float = F(0.0, unit="MW", ge=0, le=100_000.0, description="Lower bound of p_rated_mw when extendable.")
    max_p_rated_mw: float | None = F(None, unit="MW", ge=0, le=100_000.0, description="Upper bound of p_rated_mw when extendable.")
    min_e_rated_mwh: float = F(0.0, unit="MWh", ge=0, le=1e6, description="Lower bound of e_rated_mwh when extendable.")
    max_e_rated_mwh: float | None = F(None, unit="MWh", ge=0, le=1e6, description="Upper bound of e_rated_mwh when extendable.")
    eff_charge_frac: float = F(0.95, unit="frac", ge=0.5, le=1, description="Charging efficiency.")
    eff_discharge_frac: float = F(0.95, unit="frac", ge=0.5, le=1, description="Discharging efficiency.")
    min_soc_frac: float = F(0.1, unit="frac", ge=0, le=1, description="Lowest allowed state of charge.")
    max_soc_frac: float = F(0.9, unit="frac", ge=0, le=1, description="Highest allowed state of charge.")
    initial_soc_frac: float = F(0.5, unit="frac", ge=0, le=1, description="State of charge at t = 0.")
    terminal_soc: Literal["at_least_initial", "equal_initial", "free"] = F(
        "at_least_initial", description="End-of-horizon SoC policy (default: no free energy from storage).")
    self_discharge_frac_per_h: float = F(0.0, unit="frac/h", ge=0, le=1, description="Self-discharge per hour as a fraction of stored energy.")
    response_s: float = F(0.0, unit="s", ge=0, le=60.0, description="Response time of the converter (first-order lag of the delivered power).")
    max_ramp_mw_per_s: float | None = F(None, unit="MW/s", gt=0, le=1e6, description="Ramp limit of the converter; none = unlimited.")
    cost_usd_per_kw: float = F(0.0, unit="USD/kW", ge=0, le=1e5, description="Capital cost per kW of p_rated_mw.")
    cost_usd_per_kwh: float = F(0.0, unit="USD/kWh", ge=0, le=1e5, description="Capital cost per kWh of e_rated_mwh.")
    degradation_usd_per_mwh: float = F(0.0, unit="USD/MWh", ge=0, le=1e6, description=(
        "Degradation cost per MWh of discharge throughput. With a technology (or cycle_life) and "
        "not set here: 1000 cost_usd_per_kwh / (cycle_life x cycle_depth_frac), the energy part's "
        "replacement spread over its rated throughput."))
    technology: str | None = F(None, description=(
        "Storage technology: a file name (without .toml) in models/storage/ or the path of a .toml "
        "file; fills every key of this section it does not set (costs, fixed O&M, efficiencies, "
        "self-discharge, duration bounds, cycle and calendar life). See docs/storage.md."))
    technologies: list[str] | None = F(None, description=(
        "Candidate technologies (names in models/storage/) for the optimizer to choose among "
        "(hybrid storage): one extendable unit per candidate at this section's bus, named "
        "<section>.<technology> in sizing.json. Needs extendable = true, or fixed unit ratings "
        "(unit_p_rated_mw, unit_e_rated_mwh); not with technology. Two candidates with the same "
        "name (a file of your own named like a bundled one) are refused, as is ups.technologies "
        "with [[grid_events]] (the UPS transfer model runs one battery)."))
    unit_p_rated_mw: dict[str, Annotated[float, Field(ge=0, le=100_000.0)]] | None = F(None, unit="MW", description=(
        "Fixed hybrid storage: the power rating of each unit, by technology name (every name in "
        "technologies), e.g. {supercap = 9.0, lfp_1h = 2.0}; with extendable = false. p_rated_mw "
        "is then their sum. facility size writes the sized units here in scenario.resolved.toml."))
    unit_e_rated_mwh: dict[str, Annotated[float, Field(ge=0, le=1e6)]] | None = F(None, unit="MWh", description=(
        "Fixed hybrid storage: the energy rating of each unit, by technology name (as "
        "unit_p_rated_mw); e_rated_mwh is then their sum."))
    min_duration_h: float | None = F(None, unit="h", gt=0, le=1000.0, description=(
        "Shortest duration E/P (the highest C-rate, 1/min_duration_h): an LP row "
        "e_rated >= min_duration_h x p_rated when extendable, a check on fixed ratings; none = no bound."))
    max_duration_h: float | None = F(None, unit="h", gt=0, le=1000.0, description=(
        "Longest duration E/P: an LP row e_rated <= max_duration_h x p_rated when extendable, a "
        "check on fixed ratings; none = no bound."))
    fixed_om_usd_per_kw_year: float = F(0.0, unit="USD/kW-yr", ge=0, le=1e4, description=(
        "Fixed operation and maintenance cost per kW of p_rated_mw and year (added to the capex "
        "per kW in the objective, for the horizon's share of a year)."))
    fixed_om_usd_per_kwh_year: float = F(0.0, unit="USD/kWh-yr", ge=0, le=1e4, description=(
        "Fixed operation and maintenance cost per kWh of e_rated_mwh and year (added to the capex "
        "per kWh in the objective, for the horizon's share of a year; NREL ATB 2024 splits LFP's "
        "fixed O&M into a per-kW and a per-kWh part)."))
    cycle_life: float | None = F(None, unit="cycles", gt=0, le=1e9, description=(
        "Equivalent full cycles at cycle_depth_frac to end of life; metrics report the cycles per "
        "year and the years to end of life. None = not reported."))
    cycle_depth_frac: float = F(1.0, unit="frac", gt=0, le=1, description="Depth of discharge at which cycle_life is rated.")
    calendar_life_years: float | None = F(None, unit="yr", gt=0, le=100.0, description=(
        "Calendar life: the years to end of life are at most this. None = not bounded."))
    cost_year: int | None = F(None, unit="yr", ge=1990, le=2100, description="Currency year of the costs (informational).")

    @model_validator(mode="before")
    @classmethod
    def _unit_sums(cls, data: Any) -> Any:
        """A fixed hybrid's p_rated_mw / e_rated_mwh default to the sums of its units'."""
        if isinstance(data, dict):
            for k, tot in (("unit_p_rated_mw", "p_rated_mw"), ("unit_e_rated_mwh", "e_rated_mwh")):
                v = data.get(k)
                if isinstance(v, dict) and data.get(tot) is None and all(
                        isinstance(x, (int, float)) for x in v.values()):
                    data = {**data, tot: float(sum(v.values()))}
        return data


class RackStorageConfig(StorageConfig):
    """Rack-level DC storage behind the rack PSUs (capacitor/battery block, ms response)."""


class UpsConfig(StorageConfig):
    """Double-conversion UPS with its battery, between the MV/LV transformer and the racks."""

    reserve_frac: float = F(0.0, unit="frac", ge=0, le=1, description=(
        "Share of e_rated_mwh kept for ride-through; smoothing may not discharge below it "
        "(added to min_soc_frac)."))
    eff_ups_frac: float = F(0.97, unit="frac", ge=0.5, le=1, description="Double-conversion efficiency of the UPS at rated load.")
    transfer_vm_pu: float | None = F(None, unit="pu", ge=0, le=1.0, description=(
        "Input voltage below which the UPS transfers its load to the battery (after "
        "transfer_delay_s) during [[grid_events]]; none = the grid.ups_type's value."))
    transfer_delay_s: float | None = F(None, unit="s", ge=0, le=60.0, description=(
        "Time the input voltage must stay below transfer_vm_pu before the UPS transfers; a shorter "
        "sag is ridden through on the grid; none = the grid.ups_type's value."))
    retransfer_vm_pu: float | None = F(None, unit="pu", gt=0, le=1.0, description=(
        "Input voltage above which the UPS returns its load to the grid (after "
        "retransfer_delay_s); none = the grid.ups_type's value."))
    retransfer_delay_s: float | None = F(None, unit="s", ge=0, le=3600.0, description=(
        "Time the input voltage must stay above retransfer_vm_pu before the walk-in starts; "
        "none = the grid.ups_type's value."))
    walk_in_s: float | None = F(None, unit="s", ge=0, le=600.0, description=(
        "Walk-in ramp of the rectifier after retransfer: the grid's share of the load rises "
        "linearly from 0 to 1 over this time, the battery carries the rest; none = the "
        "grid.ups_type's value."))
    max_input_current_pu: float | None = F(None, unit="pu", gt=0, le=3.0, description=(
        "Rectifier input current limit in pu of the UPS rating at 1 pu voltage: at voltage V it "
        "draws at most max_input_current_pu * V * ups_sn_mva, the battery supplies the rest; "
        "none = the grid.ups_type's value."))
    recharge_frac: float | None = F(None, unit="frac of p_rated_mw", gt=0, le=1.0, description=(
        "Charger power after a grid event, as a share of p_rated_mw, until the energy the event "
        "took is back; none = the grid.ups_type's value."))


class BessConfig(StorageConfig):
    """Substation battery on the MV bus through its own transformer."""


# --------------------------------------------------------------------------- grid
class GridConfig(StrictModel):
    """Utility connection and the facility's electrical network."""

    vn_kv: float = F(230.0, unit="kV", ge=1.0, le=1200.0, description="Nominal voltage of the utility connection (HV side).")
    sc_mva: float = F(10_000.0, unit="MVA", gt=0, le=1e6, description="Short-circuit power of the utility at the PCC.")
    rx_ratio: float = F(0.1, unit="-", ge=0, le=10.0, description="R/X ratio of the utility's source impedance.")
    vm_pu: float = F(1.0, unit="pu", ge=0.8, le=1.2, description="Voltage set point of the utility source.")
    mv_kv: float = F(34.5, unit="kV", ge=0.4, le=230.0, description="Nominal voltage of the site's MV bus.")
    lv_kv: float = F(0.48, unit="kV", ge=0.1, le=35.0, description="Nominal voltage of the rack LV buses.")
    trafo_sn_mva: float | None = F(None, unit="MVA", gt=0, le=1e5, description=(
        "Rating of each substation transformer; none = sized to 1.25 x peak site power / n_trafos."))
    n_trafos: int = F(1, unit="-", ge=1, le=20, description="Number of parallel substation transformers.")
    trafo_vk_percent: float = F(12.0, unit="%", gt=0, le=40.0, description="Short-circuit voltage of the substation transformer.")
    trafo_vkr_percent: float = F(0.3, unit="%", ge=0, le=10.0, description="Real part of the short-circuit voltage.")
    trafo_pfe_kw: float | None = F(None, unit="kW", ge=0, le=1e5, description="Iron losses per substation transformer; none = 0.05 % of the rating.")
    trafo_i0_percent: float = F(0.05, unit="%", ge=0, le=5.0, description="No-load current of the substation transformer.")
    trafo_tap_pos: int = F(0, unit="step", ge=-20, le=20, description="Tap position of the substation transformer.")
    trafo_tap_step_percent: float = F(1.25, unit="%", ge=0, le=5.0, description="Voltage change per tap step.")
    n_feeders: int | None = F(None, unit="-", ge=1, le=256, description=(
        "Number of MV feeders / LV rack-group buses the racks are spread over; none = one per "
        "job, at most 8."))
    lv_trafo_sn_mva: float | None = F(None, unit="MVA", gt=0, le=1e4, description="Rating of each MV/LV transformer; none = 1.25 x the feeder's peak.")
    lv_trafo_vk_percent: float = F(6.0, unit="%", gt=0, le=30.0, description="Short-circuit voltage of the MV/LV transformers.")
    lv_trafo_vkr_percent: float = F(0.8, unit="%", ge=0, le=10.0, description="Real part of it.")
    trafo_type: str | None = F(None, description=(
        "Substation transformer type: a file name (without .toml) in models/trafos/ supplying "
        "sn_mva, vk_percent, vkr_percent, pfe_kw, i0_percent and tap_step_percent; the "
        "scenario may then not set those trafo_* keys to other values. None = the trafo_* keys."))
    lv_trafo_type: str | None = F(None, description=(
        "MV/LV (feeder) transformer type in models/trafos/, supplying lv_trafo_sn_mva, "
        "lv_trafo_vk_percent and lv_trafo_vkr_percent (plus its pfe_kw, i0_percent). None = the lv_trafo_* keys."))
    ups_type: str = F("double_conversion", description=(
        "UPS type in models/ups/: the shape of the efficiency curve over load (no-load, "
        "proportional and quadratic shares of the rated loss); 'none' = no UPS conversion losses."))
    ups_sn_mva: float | None = F(None, unit="MVA", gt=0, le=1e4, description=(
        "Rating of each feeder's UPS (its efficiency curve is over output / rating); none = "
        "1.25 x the feeder's peak."))
    bess_trafo_sn_mva: float | None = F(None, unit="MVA", gt=0, le=1e5, description=(
        "Rating of the BESS transformer (MV / lv_kv); none = 1.25 x bess.p_rated_mw (or "
        "max_p_rated_mw when extendable)."))
    power_factor: float = F(0.98, unit="-", gt=0, le=1.0, description="Power factor of the rack loads (lagging).")
    min_vm_pu: float = F(0.95, unit="pu", ge=0.5, le=1.0, description=(
        "Lowest allowed voltage of the PCC and MV buses (default: ANSI C84.1 Range A, -5 %); an "
        "electrical compliance row."))
    max_vm_pu: float = F(1.05, unit="pu", ge=1.0, le=1.5, description=(
        "Highest allowed voltage of the PCC and MV buses (default: ANSI C84.1 Range A, +5 %); an "
        "electrical compliance row."))
    min_lv_vm_pu: float = F(0.9, unit="pu", ge=0.5, le=1.0, description=(
        "Lowest allowed voltage of the LV buses: the UPS inputs and the BESS bus (default: IEC 60038 "
        "/ EN 50160 LV supply, -10 %; a double-conversion UPS regulates its output); an electrical "
        "compliance row."))
    max_lv_vm_pu: float = F(1.1, unit="pu", ge=1.0, le=1.5, description=(
        "Highest allowed voltage of the LV buses (default: IEC 60038 / EN 50160, +10 %); an "
        "electrical compliance row."))
    max_trafo_loading_percent: float = F(100.0, unit="%", gt=0, le=300.0, description=(
        "Largest allowed loading of every transformer (substation, feeder MV/LV, BESS; pandapower's "
        "current-based loading); above 100 % = a planned overload. An electrical compliance row."))
    max_ups_loading_percent: float = F(100.0, unit="%", gt=0, le=300.0, description=(
        "Largest allowed UPS loading |P_out| / ups_sn_mva of every feeder's UPS; an electrical "
        "compliance row."))
    limit_storage: bool = F(True, description=(
        "Controllers and the optimizer keep storage power within what the network carries at these "
        "limits (rack storage and UPS battery: the feeders' headroom; all storage: the substation's; "
        "BESS: its transformer); false = they ignore the network (to study a violation)."))
    enabled: bool = F(True, description="Run the electrical power flow; false = PCC power equals site power plus storage.")

    @model_validator(mode="after")
    def _bands_ordered(self) -> "GridConfig":
        for lo, hi in (("min_vm_pu", "max_vm_pu"), ("min_lv_vm_pu", "max_lv_vm_pu")):
            if getattr(self, lo) >= getattr(self, hi):
                raise ValueError(f"grid.{lo} = {getattr(self, lo):g} pu must be below grid.{hi} = "
                                 f"{getattr(self, hi):g} pu")
        return self


# --------------------------------------------------------------------------- spec
class SpecBand(StrictModel):
    """One spectral band limit: largest single-sided FFT bin amplitude in [min_hz, max_hz]."""

    name: str = F(description="Band name, used in metric and compliance keys.", min_length=1)
    min_hz: float = F(unit="Hz", gt=0, le=1e4, description="Lower edge of the band.")
    max_hz: float = F(unit="Hz", gt=0, le=1e4, description="Upper edge of the band.")
    max_peak_mw: float = F(unit="MW", gt=0, le=1e5, description="Largest allowed FFT-bin amplitude in the band.")


class SpecConfig(StrictModel):
    """Utility limits on the PCC power. Every limit that is set becomes a compliance row."""

    base: str | None = F(None, description="Name of a spec in models/specs/ to start from; keys given here override it.")
    max_ramp_up_mw_per_s: float | None = F(None, unit="MW/s", gt=0, le=1e6,
                                           description="Largest rise of P within any ramp_window_s, divided by ramp_window_s.")
    max_ramp_down_mw_per_s: float | None = F(None, unit="MW/s", gt=0, le=1e6,
                                             description="Largest fall of P within any ramp_window_s, divided by ramp_window_s.")
    max_ramp_mw_per_min: float | None = F(None, unit="MW/min", gt=0, le=1e6,
                                          description="Largest rise or fall of P within any 60 s window.")
    ramp_window_s: float = F(1.0, unit="s", gt=0, le=3600.0, description="Window tau of the per-second ramp metric.")
    window_s: float = F(5.0, unit="s", gt=0, le=86400.0, description="Rolling window of the swing limit.")
    max_window_swing_mw: float | None = F(None, unit="MW", gt=0, le=1e6,
                                          description="Largest max - min of P over any window_s.")
    band_min_hz: float = F(0.1, unit="Hz", gt=0, le=1e4, description="Lower edge of the critical frequency band.")
    band_max_hz: float = F(20.0, unit="Hz", gt=0, le=1e4, description="Upper edge of the critical frequency band.")
    max_band_energy_frac: float | None = F(None, unit="frac", gt=0, le=1,
                                           description="Largest share of the AC energy of P inside the band.")
    max_band_peak_mw: float | None = F(None, unit="MW", gt=0, le=1e6,
                                       description="Largest single-sided FFT-bin amplitude inside the band.")
    max_dynamic_range_mw: float | None = F(None, unit="MW", gt=0, le=1e6,
                                           description="Largest max - min of P over the whole horizon (the paper's dynamic power range).")
    bands: list[SpecBand] = F([], description="Further per-band FFT-bin limits (e.g. LIPA: 0.1-5 Hz and 5-55 Hz).")
    ride_through: RideThroughSpec | None = F(None, description=(
        "Voltage ride-through curve and recovery (ERCOT NOGRR282); judged on runs with [[grid_events]]."))

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"base": data}
        return data


# --------------------------------------------------------------------------- scenario
class Scenario(StrictModel):
    """A complete scenario: what runs, on what, under which limits, with which mitigations."""

    #: the library entries the scenario names, as objects (:mod:`facility.config.resolved`);
    #: attached by the loader, not a scenario key
    _library: Any = PrivateAttr(default=None)

    schema_version: Literal[1] = F(1, description="Version of the scenario schema.")
    name: str = F("scenario", description="Scenario name.", min_length=1)
    description: str = F("", description="Free text.")
    seed: int = F(0, unit="-", ge=0, le=2**32 - 1, description="Seed of every random draw.")
    time: TimeConfig = F(TimeConfig(), description="Horizon and time step.")
    jobs: list[JobConfig] = F(description="Training jobs on the site.", min_length=1)
    gpu_smoothing: GpuSmoothingConfig = F(GpuSmoothingConfig(), description="GPU power smoothing.")
    firefly: FireflyConfig = F(FireflyConfig(), description="Firefly secondary load.")
    power_cap: PowerCapConfig = F(PowerCapConfig(), description="GPU power cap.")
    site: SiteConfig = F(SiteConfig(), description="Site aggregation.")
    rack_storage: RackStorageConfig = F(RackStorageConfig(), description="Rack-level storage.")
    ups: UpsConfig = F(UpsConfig(), description="UPS battery.")
    bess: BessConfig = F(BessConfig(), description="Substation battery.")
    grid: GridConfig = F(GridConfig(), description="Electrical network.")
    spec: SpecConfig = F(SpecConfig(), description="Utility limits (a table, or the name of a spec in models/specs/).")
    controller: ControllerConfig = F(ControllerConfig(), description="Storage controller.")
    monitor: MonitorConfig = F(MonitorConfig(), description="FFT-bin monitor backstop.")
    optimize: OptimizeConfig = F(OptimizeConfig(), description="Sizing / dispatch optimization.")
    grid_events: list[GridEventConfig] = F([], max_length=1000, description=(
        "Voltage sags at the PCC (UPS transfer, cooling load response, ride-through rows)."))
    grid_impact: GridImpactConfig = F(GridImpactConfig(), description=(
        "Turbine-generator shaft torque and electromechanical-mode response to the PCC power "
        "(docs/grid_impact.md)."))

    @field_validator("jobs")
    @classmethod
    def _unique_job_names(cls, jobs: list) -> list:
        first: dict[str, int] = {}
        for i, j in enumerate(jobs):
            if j.name in first:
                raise ValueError(f"jobs.{i}.name = {j.name!r} repeats jobs.{first[j.name]}.name; job names "
                                 f"must be unique")
            first[j.name] = i
        return jobs

    @property
    def library(self):
        """The library entries this scenario names (:class:`facility.config.resolved.Library`).

        Raises
        ------
        facility.config.resolved.NotResolvedError
            The scenario was built in code and not resolved
            (:func:`facility.scenario.resolve`).
        """
        if self._library is None:
            raise NotResolvedError(
                f"scenario {self.name!r} is not resolved: load it with "
                "facility.scenario.load_scenario, or call facility.scenario.resolve(scenario)")
        return self._library

    def storages(self) -> dict[str, StorageConfig]:
        """Enabled storages by name (``rack_storage``, ``ups``, ``bess``), in that order."""
        return {n: getattr(self, n) for n in STORAGE_NAMES if getattr(self, n).enabled}

    def storage_units(self) -> dict[str, StorageConfig]:
        """Enabled storage units: one per section, or for a hybrid section (``technologies``)
        one per technology, ``<section>.<technology>``
        (:func:`facility.config.technology.unit_configs`), in section order."""
        return {u: c for n, cfg in self.storages().items() for u, c in unit_configs(n, cfg).items()}
