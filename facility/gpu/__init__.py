"""GPU-side mitigations: power smoothing (floor, ramps, stop delay), firefly, power cap.

Pure functions over ``(G, T)`` arrays of per-GPU power (one row per rack group):
:func:`apply_power_smoothing`, :func:`apply_firefly`, :func:`apply_power_cap`; and the
scenario-level chain :func:`apply_gpu_controls` returning a :class:`GpuControlResult`.
See ``docs/gpu_controls.md`` for the semantics and the NVML parameter mapping.
"""

from facility.gpu.controls import GpuControlResult, apply_gpu_controls
from facility.gpu.firefly import apply_firefly, run_firefly
from facility.gpu.power_cap import apply_power_cap
from facility.gpu.smoothing import apply_power_smoothing

__all__ = [
    "GpuControlResult",
    "apply_gpu_controls",
    "apply_power_smoothing",
    "apply_firefly",
    "run_firefly",
    "apply_power_cap",
]
