"""What the closed loop returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ControlResult"]


@dataclass
class ControlResult:
    """Outcome of :func:`facility.control.run_control`.

    Attributes
    ----------
    p_storage_mw : dict of str to numpy.ndarray (T,)
        Delivered power of each storage, consumer frame (> 0 charging). [MW]
    soc_frac : dict of str to numpy.ndarray (T,)
        SoC of each storage at the END of each step (before step 0: initial_soc_frac). [frac]
    p_load_mw : numpy.ndarray (T,)
        Site power actually drawn: the plain or GPU-engaged site power (blended while the
        co-design switches), after the monitor's throttle and shedding. [MW]
    p_pcc_mw : numpy.ndarray (T,)
        Lossless PCC power, p_load_mw + sum of storage powers. [MW]
    gpu_engaged : numpy.ndarray of bool (T,)
        True where the co-design had GPU controls (partly) engaged (engaged_weight > 0).
    engaged_weight : numpy.ndarray (T,)
        Blend weight w of the GPU-engaged site power in the drawn load (0 plain, 1 engaged). [frac]
    events : list of dict
        Time-ordered events: ``t_s`` [s], ``kind`` (``codesign_engage``, ``codesign_release``,
        ``storage_saturated``, ``monitor_throttle``, ``monitor_shed``, ``monitor_release``,
        ``mpc_slack``, ``mpc_fallback``), ``detail`` (text), plus kind-specific numbers.
    saturation : dict of str to float or None
        Time of the first step in which each storage saturated (power or SoC limit). [s]
    traces : dict of str to StorageTrace
        Full per-storage traces (power, SoC, energy, saturation flags and limit codes).
    info : dict
        Counters: ``kind``, ``n_saturated_steps`` per storage, ``n_codesign_engagements``,
        ``engaged_frac``, ``n_replans``, ``mpc_solve_s``, ``monitor_evaluations``,
        ``monitor_shed_mwh``, ``events_dropped``.
    """

    p_storage_mw: dict
    soc_frac: dict
    p_load_mw: np.ndarray
    p_pcc_mw: np.ndarray
    gpu_engaged: np.ndarray
    engaged_weight: np.ndarray
    events: list
    saturation: dict
    traces: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    _p_base_mw: np.ndarray | None = field(default=None, repr=False)

    def feeder_power_mw(self, p_feeder_mw: np.ndarray,
                        p_feeder_engaged_mw: np.ndarray | None = None) -> np.ndarray:
        """Per-feeder site power consistent with :attr:`p_load_mw`.

        Blends the plain and GPU-engaged feeder powers with :attr:`engaged_weight` and scales
        every step by the monitor's response (drawn / blended site power).

        Parameters
        ----------
        p_feeder_mw : numpy.ndarray (T, F)
            Feeder powers of the plain site power passed as ``p_site_mw``. [MW]
        p_feeder_engaged_mw : numpy.ndarray (T, F), optional
            Feeder powers of the GPU-engaged site power. [MW]
        """
        p = np.asarray(p_feeder_mw, dtype=float)
        w = self.engaged_weight
        if p_feeder_engaged_mw is not None and np.any(w > 0):
            p = p + w[:, None] * (np.asarray(p_feeder_engaged_mw, dtype=float) - p)
        if self._p_base_mw is not None:
            base = self._p_base_mw
            scale = np.divide(self.p_load_mw, base, out=np.ones_like(base), where=np.abs(base) > 1e-12)
            if np.any(scale != 1.0):
                p = p * scale[:, None]
        return p

