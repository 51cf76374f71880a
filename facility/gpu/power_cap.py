"""Static GPU power cap (or the equivalent clock cap) and the compute time it costs.

A cap ``P_cap = cap_frac x TDP`` clips the GPU's power: ``p = min(d, P_cap)``. In compute
phases clipped this way the GPU runs at a lower clock; its throughput is taken as
``(P_cap / d) ** perf_exponent`` of the uncapped one (dynamic power ~ f V^2 with voltage
scaling makes throughput sub-linear in power; ``perf_exponent`` = 0.5 is a common fit, 1 is
the pessimistic linear case). A compute step of length ``dt`` therefore needs
``dt (d / P_cap) ** perf_exponent``: lost time ``sum(((d / P_cap) ** e - 1) dt)`` over capped
compute steps. The trace keeps the nominal schedule (see docs/gpu_controls.md).
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["apply_power_cap"]


@nb.njit(cache=True, nogil=True)
def _cap_kernel(p_w, compute, cap_w, exponent, out, extra):
    n_g, n_t = p_w.shape
    for g in range(n_g):
        cap = cap_w[g]
        x = 0.0
        for k in range(n_t):
            d = p_w[g, k]
            if d > cap:
                out[g, k] = cap
                if compute[g, k]:
                    x += (d / cap) ** exponent - 1.0
            else:
                out[g, k] = d
        extra[g] = x


def apply_power_cap(p_w, compute, dt_s, cap_w, perf_exponent=0.5):
    """Clip GPU power at a cap and account the stretched compute phases.

    Parameters
    ----------
    p_w : numpy.ndarray, shape (G, T)
        Demanded power of one GPU of each group. [W per GPU]
    compute : numpy.ndarray of bool, shape (G, T)
        Compute phases (the only ones whose clipping costs time).
    dt_s : float
        Time step. [s]
    cap_w : float or array_like, shape (G,)
        Power cap. [W per GPU]
    perf_exponent : float
        Throughput ~ power ** perf_exponent under the cap. [-]

    Returns
    -------
    p_w : numpy.ndarray, shape (G, T)
        Capped power. [W per GPU]
    extra_s : numpy.ndarray, shape (G,)
        Compute time lost to the cap, ``sum(((d / P_cap) ** e - 1) dt)``. [s]
    """
    p_w = np.ascontiguousarray(p_w, dtype=float)
    if p_w.ndim != 2:
        raise ValueError(f"p_w must be 2-D (groups, steps), got shape {p_w.shape}")
    compute = np.ascontiguousarray(compute, dtype=np.bool_)
    if compute.shape != p_w.shape:
        raise ValueError(f"compute has shape {compute.shape}, expected {p_w.shape}")
    n_g = p_w.shape[0]
    cap = np.ascontiguousarray(np.broadcast_to(np.asarray(cap_w, dtype=float), (n_g,)))
    if np.any(~(cap > 0)):
        raise ValueError(f"cap_w must be > 0 W, got {cap.min():g}")
    if perf_exponent < 0:
        raise ValueError(f"perf_exponent = {perf_exponent:g} must be ≥ 0")
    out = np.empty_like(p_w)
    extra = np.zeros(n_g)
    _cap_kernel(p_w, compute, cap, float(perf_exponent), out, extra)
    return out, extra * dt_s
