"""The PCC power of a load and a storage plan through the network, for the loss-aware sizing.

:func:`pcc_power_mw` runs the time-series power flow (:func:`facility.electrical.powerflow.run_power_flow`)
on the distinct steps only and maps the result back, so that equal inputs give bit-identical PCC
powers: a load that is constant on groups of steps or repeats exactly keeps that structure in
the loss-inclusive PCC power (the sizing LP's exact coarsening and periodic reduction rely on
it). :func:`pcc_gain` is the incremental PCC power per MW of one storage (or of the site load):
1 plus the incremental losses between that point and the PCC.
"""

from __future__ import annotations

import numpy as np

from facility.electrical.network import FacilityNetwork
from facility.electrical.powerflow import run_power_flow

__all__ = ["pcc_power_mw", "pcc_gain", "scale_feeders", "flat_gain", "referred_load_mw", "perturbation_mw"]

_STORAGES = ("rack_storage", "ups", "bess")


def scale_feeders(p_feeder_mw: np.ndarray, p_site_mw: np.ndarray) -> np.ndarray:
    """Per-feeder power whose sum is ``p_site_mw``, split as ``p_feeder_mw`` splits its own sum
    (equal shares where that sum is zero). [MW]

    Parameters
    ----------
    p_feeder_mw : numpy.ndarray (T, F)
        Site power per feeder. [MW]
    p_site_mw : numpy.ndarray (T,)
        New site power. [MW]
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    if p.ndim == 1:
        p = p[:, None]
    tot = p.sum(axis=1)
    share = np.full_like(p, 1.0 / p.shape[1])
    nz = np.abs(tot) > 1e-12
    share[nz] = p[nz] / tot[nz, None]
    return share * np.asarray(p_site_mw, dtype=float)[:, None]


def pcc_power_mw(net: FacilityNetwork, p_feeder_mw: np.ndarray,
                 p_storage_mw: dict | None = None) -> np.ndarray:
    """PCC power of every step (losses included), each distinct step solved once. [MW]

    Parameters
    ----------
    net : FacilityNetwork
    p_feeder_mw : numpy.ndarray (T, F)
        Site power per feeder (consumer frame). [MW]
    p_storage_mw : dict of str to numpy.ndarray (T,), optional
        ``rack_storage``, ``ups``, ``bess`` powers, + = charging. [MW]

    Returns
    -------
    numpy.ndarray (T,)
        ``p_pcc_mw`` of :func:`facility.electrical.powerflow.run_power_flow`; steps with equal inputs get
        equal values.
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    if p.ndim == 1:
        p = p[:, None]
    st = {k: np.broadcast_to(np.asarray(v, dtype=float), (p.shape[0],))
          for k, v in (p_storage_mw or {}).items() if k in _STORAGES}
    cols = [p] + [v[:, None] for v in st.values()]
    x = np.ascontiguousarray(np.hstack(cols))
    uniq, inv = np.unique(x, axis=0, return_inverse=True)
    inv = np.asarray(inv).ravel()
    f = p.shape[1]
    st_u = {k: uniq[:, f + i] for i, k in enumerate(st)}
    pf = run_power_flow(net, uniq[:, :f], st_u or None)
    return np.asarray(pf.p_pcc_mw, dtype=float)[inv]


def pcc_gain(net: FacilityNetwork, p_feeder_mw: np.ndarray, p_storage_mw: dict | None,
             at: str | None, delta_mw: float) -> np.ndarray:
    """Incremental PCC power per MW at one point of the network, per step. [MW/MW]

    .. math::  g_t = \\frac{P^{pcc}_t(x + \\delta e) - P^{pcc}_t(x)}{\\delta}

    a one-sided difference: 1 + the incremental losses between that point and the PCC (UPS
    conversion, feeder and substation transformers for storage behind the UPSs; BESS and
    substation transformers for the BESS).

    Parameters
    ----------
    at : str or None
        The storage whose power is perturbed (``rack_storage``, ``ups``, ``bess``); None = the
        site load (every feeder in proportion).
    delta_mw : float
        Perturbation. [MW]
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    st = dict(p_storage_mw or {})
    base = pcc_power_mw(net, p, st)
    if at is None:
        tot = p.sum(axis=1) if p.ndim == 2 else p
        up = pcc_power_mw(net, scale_feeders(p, tot + delta_mw), st)
    else:
        st2 = dict(st)
        st2[at] = np.asarray(st.get(at, 0.0), dtype=float) + delta_mw
        up = pcc_power_mw(net, p, st2)
    return (up - base) / delta_mw



def perturbation_mw(load_mw: np.ndarray) -> float:
    """The perturbation of a slope's one-sided difference: 1e-4 of the peak load, at least
    1 kW. [MW]"""
    return max(1e-3, 1e-4 * float(np.max(np.abs(load_mw), initial=0.0)))


def flat_gain(net: FacilityNetwork, p_feeder_mw: np.ndarray, at: str | None,
              max_abs_mw: float = np.inf) -> tuple[dict, float]:
    r"""The flat plan at one storage and the PCC power's slope there.

    The flat plan :math:`s_t = \mathrm{clip}(\bar L - L_t, \pm S)` (what a storage of reach
    S = ``max_abs_mw`` [MW] flattening the load runs) is a function of the load alone; g is
    the mean of :func:`pcc_gain` along it (a perturbation of 1e-4 of the peak load, at least
    1 kW).

    Returns
    -------
    (dict, float)
        ``{at: s (T,)}`` (empty for ``at`` None: the slope is the site load's) [MW] and g [MW/MW].
    """
    p = np.asarray(p_feeder_mw, dtype=float)
    load = p.sum(axis=1) if p.ndim == 2 else p
    s0 = {at: np.clip(float(np.mean(load)) - load, -max_abs_mw, max_abs_mw)} if at is not None else {}
    g = float(np.mean(pcc_gain(net, p, s0, at, perturbation_mw(load))))
    if not np.isfinite(g) or g <= 0:
        g = 1.0
    return s0, g


def referred_load_mw(net: FacilityNetwork, p_feeder_mw: np.ndarray, at: str,
                     max_abs_mw: float = np.inf) -> tuple[np.ndarray, float]:
    r"""The site load as a closed-loop storage controller at the PCC sees it, and its slope.

    A site controller meters the PCC and knows its own storages' power: the load it flattens
    is the PCC power without storage (UPS conversion and transformer losses included, which
    swing with the load) in units of storage power,

    .. math::  \tilde L_t = P^{pcc}_t(L, s = 0) / g

    with g the slope at the flat plan of storage ``at`` of reach ``max_abs_mw`` [MW]
    (:func:`flat_gain`). Flattening :math:`\tilde L + s` then flattens the PCC power up to the
    variation of g.

    Returns
    -------
    (numpy.ndarray (T,), float)
        :math:`\tilde L` [MW] and g [MW/MW].
    """
    _, g = flat_gain(net, p_feeder_mw, at, max_abs_mw)
    return pcc_power_mw(net, p_feeder_mw, None) / g, g
