"""Batch AC power flow over many time steps at once (pure numpy, no pandapower).

All buses but the slack carry constant-power (PQ) loads. With the slack voltage V_S fixed,
the non-slack voltages V_L satisfy

    Y_LL V_L + Y_LS V_S = I_inj,   I_inj,k = -conj(S_k / V_k)      (S_k: load, consumer frame)

**Z-bus fixed point** (implicit Z-bus Gauss, the method of distribution-grid solvers): with
Z = Y_LL^-1 and the no-load voltages V0 = -Z Y_LS V_S, iterate only on the loaded buses K

    V_K <- V0_K - Z_KK conj(S_K / V_K)

for all T steps of a chunk at once, one (T, K) x (K, K) product per sweep. After a sweep the
state V_new carries exactly the injection computed from V_old, so its power mismatch is

    |dS_k| = |S_k| |V_new,k - V_old,k| / |V_old,k|                 [MVA, 1 MVA base]

which is the convergence test (default 1e-10 MVA). The contraction factor is about
|Z S| / |V|^2 (0.1-0.3 for this network at rated load), so it converges in 10-25 sweeps.
:func:`solve_zbus_warm` runs the same sweeps step by step in numba, starting each step from
the previous step's solution (consecutive steps of a load profile are close, so most steps
need a few sweeps); it is the one :func:`facility.electrical.powerflow.run_power_flow` uses. When all
loaded buses hang off one common bus (the MV bus: feeders and BESS), Z_KK = diag(d) + u u^T
exactly (:func:`star_split`), and :func:`solve_zbus_warm_star` does a sweep in O(K) instead
of O(K^2).
Steps that do not converge within ``max_iter`` sweeps go to a batched **Newton-Raphson** in
polar coordinates (pypower's dS/dV Jacobians, one dense solve per step); steps that still fail
are reported as not converged.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["solve_zbus", "solve_zbus_warm", "solve_zbus_warm_star", "star_split", "solve_newton",
           "ZBUS_MAX_ITER", "NEWTON_MAX_ITER"]

ZBUS_MAX_ITER = 60
NEWTON_MAX_ITER = 30


def solve_zbus(s_k: np.ndarray, z_kk: np.ndarray, v0_k: np.ndarray, tol_mva: float = 1e-10,
               max_iter: int = ZBUS_MAX_ITER) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Z-bus fixed-point power flow of T steps on the loaded buses K.

    Parameters
    ----------
    s_k : numpy.ndarray of complex, shape (T, K)
        Load at each loaded bus (consumer frame, P + jQ). [MVA on the solver base]
    z_kk : numpy.ndarray of complex, shape (K, K)
        Rows/columns K of Y_LL^-1. [pu]
    v0_k : numpy.ndarray of complex, shape (K,)
        No-load voltages of the loaded buses. [pu]
    tol_mva : float
        Largest allowed power mismatch per bus. [MVA]
    max_iter : int
        Largest number of sweeps.

    Returns
    -------
    v_k : numpy.ndarray of complex, shape (T, K)
        Voltages of the loaded buses. [pu]
    i_k : numpy.ndarray of complex, shape (T, K)
        Load currents conj(S/V) that produced ``v_k`` (for the other buses: V0 - Z_LK i_k). [pu]
    mismatch_mva : numpy.ndarray, shape (T,)
        Largest power mismatch of each step (NaN where the iteration blew up). [MVA]
    n_iter : int
        Sweeps done.
    """
    zt = np.ascontiguousarray(z_kk.T)
    v = np.broadcast_to(v0_k, s_k.shape).copy()
    abs_s = np.abs(s_k)
    mis = np.full(s_k.shape[0], np.inf)
    i_k = np.zeros_like(s_k)
    n = 0
    with np.errstate(all="ignore"):
        for n in range(1, max_iter + 1):
            i_k = np.conj(s_k / v)
            v_new = v0_k - i_k @ zt
            d = np.abs(v_new - v)
            d *= abs_s
            d /= np.abs(v)
            mis = d.max(axis=1)
            v = v_new
            worst = mis.max()
            if worst <= tol_mva:  # NaN compares False: keeps iterating, then reported
                break
    return v, i_k, mis, n


def solve_newton(s_l: np.ndarray, y_ll: np.ndarray, i_slack_l: np.ndarray, v_init: np.ndarray,
                 tol_mva: float = 1e-10, max_iter: int = NEWTON_MAX_ITER) -> tuple[np.ndarray, np.ndarray]:
    """Newton-Raphson (polar) power flow of a few steps on all non-slack buses L.

    Solves F(V) = V * conj(Y_LL V + i_slack_l) + S_L = 0 for each step with the Jacobian
    dS/dVa = j diag(V) conj(diag(I) - Y diag(V)), dS/dVm = diag(V) conj(Y diag(V/|V|)) +
    diag(conj(I)) diag(V/|V|).

    Parameters
    ----------
    s_l : numpy.ndarray of complex, shape (T, L)
        Loads at every non-slack bus (zero where none). [MVA]
    y_ll : numpy.ndarray of complex, shape (L, L)
        Admittance among non-slack buses. [pu]
    i_slack_l : numpy.ndarray of complex, shape (L,)
        Y_LS V_S, the current the slack drives into each bus. [pu]
    v_init : numpy.ndarray of complex, shape (T, L)
        Start voltages. [pu]

    Returns
    -------
    v_l : numpy.ndarray of complex, shape (T, L)
    mismatch_mva : numpy.ndarray, shape (T,)
        Largest mismatch of each step (NaN if it diverged). [MVA]
    """
    t, n_l = s_l.shape
    v = np.where(np.isfinite(v_init) & (np.abs(v_init) > 0.3), v_init, 1.0 + 0j).astype(complex)
    va, vm = np.angle(v), np.abs(v)
    mis = np.full(t, np.inf)
    eye = np.eye(n_l, dtype=bool)
    with np.errstate(all="ignore"):
        for _ in range(max_iter + 1):
            v = vm * np.exp(1j * va)
            i = v @ y_ll.T + i_slack_l
            f = v * np.conj(i) + s_l
            mis = np.abs(f).max(axis=1)
            if not np.any(mis > tol_mva) or not np.all(np.isfinite(mis)):
                break
            e = v / vm
            d_vm = v[:, :, None] * np.conj(y_ll[None] * e[:, None, :])
            d_vm[:, eye] += np.conj(i) * e
            d_va = -v[:, :, None] * np.conj(y_ll[None] * v[:, None, :])
            d_va[:, eye] += v * np.conj(i)
            d_va *= 1j
            jac = np.block([[d_va.real, d_vm.real], [d_va.imag, d_vm.imag]])
            rhs = -np.concatenate([f.real, f.imag], axis=1)
            try:
                dx = np.linalg.solve(jac, rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:
                mis[:] = np.nan
                break
            va = va + dx[:, :n_l]
            vm = vm + dx[:, n_l:]
    return v, mis


@njit(cache=True)
def solve_zbus_warm(s_k, z_kk, v0_k, tol_mva, max_iter):  # pragma: no cover - numba
    """Z-bus fixed point step by step, warm-started from the previous step (numba).

    Same arguments and returns as :func:`solve_zbus`, except that ``n_iter`` is an int array
    (T,) of sweeps per step. A step that blows up (non-finite voltage) restarts the next one
    from ``v0_k``.
    """
    t_n, k_n = s_k.shape
    v_out = np.empty((t_n, k_n), dtype=np.complex128)
    i_out = np.empty((t_n, k_n), dtype=np.complex128)
    mis_out = np.empty(t_n)
    it_out = np.zeros(t_n, dtype=np.int64)
    v = v0_k.copy()
    cur = np.empty(k_n, dtype=np.complex128)
    v_new = np.empty(k_n, dtype=np.complex128)
    s2 = np.empty(k_n)
    vv = np.empty(k_n)
    tol2 = tol_mva * tol_mva
    for t in range(t_n):
        m = np.inf
        for c in range(k_n):
            s2[c] = s_k[t, c].real ** 2 + s_k[t, c].imag ** 2
        for it in range(max_iter):
            for c in range(k_n):  # conj(S / V) = conj(S) V / |V|^2
                vv[c] = v[c].real ** 2 + v[c].imag ** 2
                cur[c] = np.conj(s_k[t, c]) * v[c] / vv[c]
            m = 0.0
            for r in range(k_n):
                acc = v0_k[r]
                for c in range(k_n):
                    acc -= z_kk[r, c] * cur[c]
                dv = acc - v[r]
                d = (dv.real ** 2 + dv.imag ** 2) * s2[r] / vv[r]  # squared mismatch
                if d != d:
                    d = np.inf
                if d > m:
                    m = d
                v_new[r] = acc
            for r in range(k_n):
                v[r] = v_new[r]
            it_out[t] = it + 1
            if m <= tol2:
                break
        m = np.sqrt(m)
        for r in range(k_n):
            v_out[t, r] = v[r]
            i_out[t, r] = cur[r]
        mis_out[t] = m
        if not m < np.inf:
            for r in range(k_n):
                v[r] = v0_k[r]
    return v_out, i_out, mis_out, it_out


def star_split(z_kk: np.ndarray, rtol: float = 1e-11) -> tuple[np.ndarray, np.ndarray] | None:
    """Write Z_KK as diag(d) + u u^T when the loaded buses branch off one common bus.

    For buses i != j behind a common node c, Z_ij = t_i t_j Z_cc (t: voltage transfer ratio
    from c to the bus), a rank-one matrix off the diagonal. With u_0 = sqrt(Z_01 Z_02 / Z_12),
    u_i = Z_0i / u_0 and d_i = Z_ii - u_i^2.

    Returns
    -------
    (d, u) : tuple of numpy.ndarray (K,), or None
        None when K < 3 or the off-diagonal part is not rank one within ``rtol``.
    """
    k = z_kk.shape[0]
    if k < 3 or z_kk[1, 2] == 0 or z_kk[0, 1] == 0:
        return None
    u = np.empty(k, dtype=complex)
    u[0] = np.sqrt(z_kk[0, 1] * z_kk[0, 2] / z_kk[1, 2])
    u[1:] = z_kk[0, 1:] / u[0]
    d = np.diag(z_kk) - u * u
    err = np.abs(z_kk - np.diag(d) - np.outer(u, u)).max()
    return (d, u) if err <= rtol * np.abs(z_kk).max() else None


@njit(cache=True)
def solve_zbus_warm_star(s_k, d, u, v0_k, tol_mva, max_iter):  # pragma: no cover - numba
    """:func:`solve_zbus_warm` for Z_KK = diag(d) + u u^T: one sweep is O(K)."""
    t_n, k_n = s_k.shape
    v_out = np.empty((t_n, k_n), dtype=np.complex128)
    i_out = np.empty((t_n, k_n), dtype=np.complex128)
    mis_out = np.empty(t_n)
    it_out = np.zeros(t_n, dtype=np.int64)
    v = v0_k.copy()
    cur = np.empty(k_n, dtype=np.complex128)
    s2 = np.empty(k_n)
    vv = np.empty(k_n)
    tol2 = tol_mva * tol_mva
    for t in range(t_n):
        m = np.inf
        for c in range(k_n):
            s2[c] = s_k[t, c].real ** 2 + s_k[t, c].imag ** 2
        for it in range(max_iter):
            sig = 0j
            for c in range(k_n):
                vv[c] = v[c].real ** 2 + v[c].imag ** 2
                cur[c] = np.conj(s_k[t, c]) * v[c] / vv[c]
                sig += u[c] * cur[c]
            m = 0.0
            for r in range(k_n):
                acc = v0_k[r] - d[r] * cur[r] - u[r] * sig
                dv = acc - v[r]
                dd = (dv.real ** 2 + dv.imag ** 2) * s2[r] / vv[r]
                if dd != dd:
                    dd = np.inf
                if dd > m:
                    m = dd
                v[r] = acc  # cur and sig hold the old state: a Jacobi sweep like the dense one
            it_out[t] = it + 1
            if m <= tol2:
                break
        m = np.sqrt(m)
        for r in range(k_n):
            v_out[t, r] = v[r]
            i_out[t, r] = cur[r]
        mis_out[t] = m
        if not m < np.inf:
            for r in range(k_n):
                v[r] = v0_k[r]
    return v_out, i_out, mis_out, it_out
