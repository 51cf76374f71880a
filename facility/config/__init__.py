"""Scenario configuration: schema (pydantic), its own libraries (``models/``: GPU models,
utility specs, storage technologies), loading and the checks that need only these.

The ground of the package: it imports no other facility package but :mod:`facility.errors`.
:func:`load_scenario` and :func:`scenario_from_dict` here check a scenario against the schema
and the configuration's checks only; the layers take :mod:`facility.scenario`'s, which add
every domain's checks (trace files, grid types, grid events, grid impact, the load generator's
and the controller's preconditions) and the domain library entries (``scenario.library``).
"""

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
