"""The co-simulation of a fixed design: storage ratings known, one run from the load generator
to the metrics.

Rooms: :mod:`~facility.cosim.design` (the chain, :func:`simulate_design`),
:mod:`~facility.cosim.blocks` (the metrics blocks of one run) and :mod:`~facility.cosim.results`
(:class:`Results`). The package sits below both orchestrators (:mod:`facility.sizing` verifies
its designs here, :mod:`facility.run` runs a fixed design here) and imports neither.
"""

from facility.cosim.design import (feeder_peaks, generate_trace, gpu_controls_active, network_caps,
                                   simulate_design, with_network_caps)
from facility.cosim.results import Results

__all__ = ["Results", "simulate_design", "generate_trace", "gpu_controls_active", "network_caps",
           "with_network_caps", "feeder_peaks"]
