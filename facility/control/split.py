r"""Split one storage power command between a fast and a slow unit of a hybrid section.

A hybrid storage section (``technologies = ["supercap", "lfp_1h"]``) has a fast unit (high
power per energy: supercapacitor, flywheel) and a slow one (battery). The slow unit follows a
first-order low-pass of the command, the fast unit takes the rest (the high-frequency part):

.. math::  p^{slow}_t = \mathrm{LP}_\tau(p)_t,\qquad p^{fast}_t = p_t - p^{slow}_t

with the exact discretization of 1 / (1 + s τ): y_t = y_{t-1} + a (p_t - y_{t-1}),
a = 1 - exp(-Δt / τ) (y_{-1} = p_0: no transient at t = 0). A step of A MW gives the fast
unit A e^{-t/τ}, whose energy is A τ: :func:`crossover_tau_s` picks τ = usable energy / power
rating of the fast unit, so a step of its full rating stays within its energy. The fast part
beyond the fast unit's rating goes back to the slow unit (:func:`split_command`).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

__all__ = ["lowpass_split", "crossover_tau_s", "split_command"]


def lowpass_split(p_mw: np.ndarray, dt_s: float, tau_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Slow (low-pass) and fast (the rest) parts of a power command.

    Parameters
    ----------
    p_mw : numpy.ndarray (T,)
        Storage power command, consumer frame (+ = charging). [MW]
    dt_s : float
        Step. [s]
    tau_s : float
        Time constant of the low-pass; 0 = all to the slow unit. [s]

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``p_slow_mw``, ``p_fast_mw`` (sum = p_mw). [MW]
    """
    p = np.asarray(p_mw, dtype=float)
    if p.size == 0 or tau_s <= 0:
        return p.copy(), np.zeros_like(p)
    a = -np.expm1(-dt_s / tau_s)
    slow, _ = lfilter([a], [1.0, a - 1.0], p, zi=[(1.0 - a) * p[0]])
    return slow, p - slow


def crossover_tau_s(p_fast_rated_mw: float, e_fast_usable_mwh: float) -> float:
    """Time constant that keeps a full-rating step within the fast unit's usable energy:
    τ = E_usable / P_rated (A τ = E for a step of A = P_rated). [s]

    Examples
    --------
    >>> crossover_tau_s(10.0, 10.0 * 30 / 3600)   # 30 s of storage at rating
    30.0
    """
    if p_fast_rated_mw <= 0:
        return 0.0
    return 3600.0 * e_fast_usable_mwh / p_fast_rated_mw


def split_command(p_mw: np.ndarray, dt_s: float, p_fast_rated_mw: float,
                  e_fast_usable_mwh: float) -> tuple[np.ndarray, np.ndarray]:
    """The slow and fast units' commands: low-pass at :func:`crossover_tau_s`, the fast part
    clipped to the fast unit's rating and the excess given to the slow unit. [MW]"""
    slow, fast = lowpass_split(p_mw, dt_s, crossover_tau_s(p_fast_rated_mw, e_fast_usable_mwh))
    clipped = np.clip(fast, -p_fast_rated_mw, p_fast_rated_mw)
    return slow + (fast - clipped), clipped
