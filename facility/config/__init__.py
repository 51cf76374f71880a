"""Scenario configuration: schema (pydantic), libraries (``models/``), loading and checks."""

from facility.config.checks import check_scenario
from facility.config.plausibility import estimate_peak_site_mw
from facility.config.library import GpuModel, list_gpus, list_specs, load_gpu
from facility.config.load import (
    apply_overrides,
    dump_scenario_toml,
    load_scenario,
    scenario_from_dict,
)
from facility.config.schema import (
    STORAGE_NAMES,
    BessConfig,
    ControllerConfig,
    FireflyConfig,
    GpuSmoothingConfig,
    GridConfig,
    JobConfig,
    MonitorConfig,
    OptimizeConfig,
    PowerCapConfig,
    RackStorageConfig,
    Scenario,
    SiteConfig,
    SpecBand,
    SpecConfig,
    StorageConfig,
    TimeConfig,
    UpsConfig,
)

__all__ = [
    "STORAGE_NAMES", "BessConfig", "ControllerConfig", "FireflyConfig", "GpuModel",
    "GpuSmoothingConfig", "GridConfig", "JobConfig", "MonitorConfig", "OptimizeConfig",
    "PowerCapConfig", "RackStorageConfig", "Scenario", "SiteConfig", "SpecBand", "SpecConfig",
    "StorageConfig", "TimeConfig", "UpsConfig", "apply_overrides", "check_scenario",
    "dump_scenario_toml", "estimate_peak_site_mw", "list_gpus", "list_specs", "load_gpu",
    "load_scenario", "scenario_from_dict",
]
