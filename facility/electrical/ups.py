"""Double-conversion UPS as an efficiency (loss) model over its load fraction.

The UPS sits between the LV side of each feeder's MV/LV transformer and the rack bus. Its
inverter regulates the rack bus, so the AC network sees only its input power:

    P_in = P_out + P_loss(x),   x = |P_out| / S_rated,
    P_loss(x) = L * S_rated * (a0 + a1 * x + a2 * x^2),   L = 1 / eff_rated - 1,

with P_out = rack load + rack storage + UPS battery charging [MW] and (a0, a1, a2) the loss
shares of the UPS type (``models/ups/``). At rated load the efficiency P_out / P_in equals
``eff_rated`` exactly; at part load the no-load share lowers it, as on real UPS curves.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ups_loss_mw", "ups_input_mw", "ups_efficiency_frac"]


def ups_loss_mw(p_out_mw: np.ndarray, sn_mva: np.ndarray | float, eff_rated_frac: float,
                shares: tuple[float, float, float]) -> np.ndarray:
    """Conversion losses of a UPS. [MW]

    Parameters
    ----------
    p_out_mw : numpy.ndarray
        UPS output power (load side, consumer frame; negative = feeding back). [MW]
    sn_mva : numpy.ndarray or float
        UPS rating, broadcast against ``p_out_mw``. [MVA]
    eff_rated_frac : float
        Efficiency at rated output. [frac]
    shares : tuple of float
        (no-load, linear, quadratic) shares of the rated loss.

    Returns
    -------
    numpy.ndarray
        P_loss = (1/eff - 1) * S * (a0 + a1 x + a2 x^2), x = |P_out| / S; always >= 0. [MW]
    """
    a0, a1, a2 = shares
    sn = np.asarray(sn_mva, dtype=float)
    x = np.abs(p_out_mw) / sn
    return (1.0 / eff_rated_frac - 1.0) * sn * (a0 + x * (a1 + a2 * x))


def ups_input_mw(p_out_mw: np.ndarray, sn_mva: np.ndarray | float, eff_rated_frac: float,
                 shares: tuple[float, float, float]) -> np.ndarray:
    """AC input power of a UPS: P_in = P_out + P_loss. [MW]"""
    return p_out_mw + ups_loss_mw(p_out_mw, sn_mva, eff_rated_frac, shares)


def ups_efficiency_frac(load_frac: np.ndarray, eff_rated_frac: float,
                        shares: tuple[float, float, float]) -> np.ndarray:
    """Efficiency P_out / P_in over the load fraction x = P_out / S_rated (x > 0). [frac]"""
    x = np.asarray(load_frac, dtype=float)
    return x / (x + ups_loss_mw(x, 1.0, eff_rated_frac, shares))
