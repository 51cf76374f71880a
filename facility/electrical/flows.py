"""Per-step summaries of a solved network: voltages, transformer flows, losses, PCC power (numba).

For a branch with from/to voltages V_f, V_t and admittances (y_ff, y_ft, y_tf, y_tt) from
pandapower's Yf / Yt matrices:

    S_f = V_f conj(y_ff V_f + y_ft V_t),   S_t = V_t conj(y_tf V_f + y_tt V_t)
    loss = Re(S_f + S_t)                               (series and magnetizing losses) [MW]
    loading = max(|S_f| / |V_f|, |S_t| / |V_t|) / S_rated * 100      (pandapower's) [%]

The PCC power is the power leaving the utility's source impedance into the PCC bus:
S_pcc = -V_pcc conj(y_tf V_source + y_tt V_pcc).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["summarize_steps", "ROWS"]


#: Rows of :func:`summarize_steps`' output.
ROWS = ("vm_min_pu", "vm_max_pu", "vm_pcc_pu", "sub_trafo_loading_percent", "lv_trafo_loading_percent",
        "network_losses_mw", "p_pcc_mw", "q_pcc_mvar", "bess_trafo_loading_percent",
        "vm_min_mv_pu", "vm_max_mv_pu", "vm_min_lv_pu", "vm_max_lv_pu")


@njit(cache=True)
def summarize_steps(v_l, v_slack, br_f, br_t, br_y, br_sn_mva, br_group, k_pcc, pcc_ytf, pcc_ytt,
                    bus_lv):  # pragma: no cover
    """Reduce the (T, L) non-slack voltages of T steps to per-step summaries.

    Parameters
    ----------
    v_l : numpy.ndarray of complex, shape (T, L)
        Voltages of the non-slack buses. [pu]
    v_slack : complex
        Voltage of the slack (source) bus. [pu]
    br_f, br_t : numpy.ndarray of int, shape (B,)
        Column in ``v_l`` of each transformer's from/to bus, -1 = the slack.
    br_y : numpy.ndarray of complex, shape (B, 4)
        y_ff, y_ft, y_tf, y_tt. [pu on 1 MVA]
    br_sn_mva : numpy.ndarray, shape (B,)
        Rating (times parallel units). [MVA]
    br_group : numpy.ndarray of int, shape (B,)
        0 = substation, 1 = feeder MV/LV, 2 = other (BESS).
    k_pcc : int
        Column of the PCC bus in ``v_l``.
    pcc_ytf, pcc_ytt : complex
        To-side admittances of the source impedance (from = slack, to = PCC).
    bus_lv : numpy.ndarray of bool, shape (L,)
        True for the LV-level buses (feeder LV buses, BESS bus), False for PCC and MV.

    Returns
    -------
    out : numpy.ndarray, shape (13, T)
        Rows (:data:`ROWS`): vm_min_pu, vm_max_pu (all buses), vm_pcc_pu, substation loading
        [%], max feeder MV/LV loading [%], network losses [MW], P_pcc [MW], Q_pcc [Mvar], BESS
        transformer loading [%], min / max voltage of the PCC and MV buses, min / max voltage
        of the LV buses [pu] (a class without buses reads 1 pu).
    """
    t_n, l_n = v_l.shape
    b_n = br_f.size
    out = np.empty((13, t_n))
    for t in range(t_n):
        vmin = np.inf
        vmax = -np.inf
        vmin_c = np.array([np.inf, np.inf])
        vmax_c = np.array([-np.inf, -np.inf])
        for j in range(l_n):
            a = v_l[t, j].real ** 2 + v_l[t, j].imag ** 2
            if a < vmin:
                vmin = a
            if a > vmax:
                vmax = a
            c = 1 if bus_lv[j] else 0
            if a < vmin_c[c]:
                vmin_c[c] = a
            if a > vmax_c[c]:
                vmax_c[c] = a
        ld_sub = 0.0
        ld_lv = 0.0
        ld_bess = 0.0
        loss = 0.0
        for b in range(b_n):
            vf = v_slack if br_f[b] < 0 else v_l[t, br_f[b]]
            vt = v_slack if br_t[b] < 0 else v_l[t, br_t[b]]
            sf = vf * np.conj(br_y[b, 0] * vf + br_y[b, 1] * vt)
            st = vt * np.conj(br_y[b, 2] * vf + br_y[b, 3] * vt)
            loss += sf.real + st.real
            lf = (sf.real ** 2 + sf.imag ** 2) / (vf.real ** 2 + vf.imag ** 2)
            lt = (st.real ** 2 + st.imag ** 2) / (vt.real ** 2 + vt.imag ** 2)
            ld = np.sqrt(max(lf, lt)) / br_sn_mva[b] * 100.0
            if br_group[b] == 0 and ld > ld_sub:
                ld_sub = ld
            elif br_group[b] == 1 and ld > ld_lv:
                ld_lv = ld
            elif br_group[b] == 2 and ld > ld_bess:
                ld_bess = ld
        vp = v_l[t, k_pcc]
        sp = -vp * np.conj(pcc_ytf * v_slack + pcc_ytt * vp)
        out[0, t] = np.sqrt(vmin)
        out[1, t] = np.sqrt(vmax)
        out[2, t] = np.sqrt(vp.real ** 2 + vp.imag ** 2)  # same rounding as vm_min / vm_max
        out[3, t] = ld_sub
        out[4, t] = ld_lv
        out[5, t] = loss
        out[6, t] = sp.real
        out[7, t] = sp.imag
        out[8, t] = ld_bess
        for c in range(2):
            out[9 + 2 * c, t] = np.sqrt(vmin_c[c]) if vmin_c[c] < np.inf else 1.0
            out[10 + 2 * c, t] = np.sqrt(vmax_c[c]) if vmax_c[c] > -np.inf else 1.0
    return out
