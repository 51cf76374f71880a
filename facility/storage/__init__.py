"""Storage models: parameters, the one SoC bookkeeping routine, metrics and invariants.

Rack-level DC storage, the UPS battery and the substation BESS share one model
(:class:`StorageParams` + :func:`simulate_soc`); they differ in their numbers: the rack store
responds in milliseconds, the UPS keeps a ride-through reserve (folded into ``min_soc_frac``)
and sits behind a double conversion (``eff_ups_frac``), the BESS has an inverter lag
(``response_s``), a ramp limit and self-discharge.
"""

from facility.storage.invariants import assert_storage_invariants, storage_invariants
from facility.storage.metrics import (
    discharge_throughput_mwh,
    storage_metrics,
    storage_metrics_from_series,
)
from facility.storage.params import StorageParams
from facility.storage.soc import LIMIT_NAMES, StorageTrace, simulate_soc, storage_step, storage_step_bounded

__all__ = [
    "StorageParams",
    "StorageTrace",
    "simulate_soc",
    "storage_step",
    "storage_step_bounded",
    "storage_metrics",
    "storage_metrics_from_series",
    "discharge_throughput_mwh",
    "storage_invariants",
    "assert_storage_invariants",
    "LIMIT_NAMES",
]
