"""Closed-loop storage control, the GPU co-design and the FFT-bin monitor.

:func:`run_control` runs the configured controller (``none``, ``moving_average``, ``filter``,
``mpc``, ``optimal``, ``ramp_limit``) step by step on what it measures, with the fast guard
(:mod:`facility.control.guard`: the spec's windows and ramps against the measured PCC
history) under every deployable one, advances every storage's SoC with the
shared bookkeeping of :mod:`facility.storage` (saturating, never an impossible SoC), switches
the drawn load to the GPU-engaged site power when a storage nears a SoC bound (the paper's
co-design, §IV-D) and runs the spectral monitor backstop (§IV-E). See docs/control.md.
"""

from facility.control.monitor import BandLimit, MonitorPolicy, band_limits, band_peaks_mw
from facility.control.result import ControlResult
from facility.control.run import run_control

__all__ = ["run_control", "ControlResult", "MonitorPolicy", "BandLimit", "band_limits",
           "band_peaks_mw"]
