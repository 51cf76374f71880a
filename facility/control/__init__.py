"""Closed-loop storage control, the GPU co-design and the FFT-bin monitor.

:func:`run_control` runs the configured controller (``none``, ``moving_average``, ``filter``,
``mpc``, ``optimal``, ``ramp_limit``) step by step on what it measures, with the fast guard
(:mod:`facility.control.guard`: the spec's windows and ramps against the measured PCC
history) under every deployable one, advances every storage's SoC with the
shared bookkeeping of :mod:`facility.storage` (saturating, never an impossible SoC), switches
the drawn load to the GPU-engaged site power when a storage nears a SoC bound (the paper's
co-design, §IV-D) and runs the spectral monitor backstop (§IV-E). See docs/control.md.

The names below load on first use (PEP 562): ``facility validate`` runs the controller's
preconditions (:mod:`facility.control.checks`), which must not wait for the control loop's
numba kernels and the MPC's optimizer.
"""

from facility import lazy_face

_WHERE = {
    "run_control": "run",
    "ControlResult": "result",
    "MonitorPolicy": "monitor",
    "BandLimit": "monitor",
    "band_limits": "monitor",
    "band_peaks_mw": "monitor",
}

__all__ = list(_WHERE)


__getattr__, __dir__ = lazy_face(__name__, _WHERE)
