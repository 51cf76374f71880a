"""Linearized DAE → state space → pole-residue modes (pure numpy / scipy; no ANDES).

A power-system model linearized at its operating point is the descriptor system

.. math::

    T\\,\\dot x = f_x x + f_y y + b_f u, \\qquad 0 = g_x x + g_y y + b_g u, \\qquad
    z = c_x x + c_y y,

x the states (T their time constants), y the algebraic variables (bus voltages and angles,
machine currents, ...), u the input (a load's power), z the outputs. States with T = 0 obey
0 = f and are moved to the algebraic part. Eliminating y:

.. math::

    A = T^{-1}(f_x - f_y g_y^{-1} g_x),\\quad B = T^{-1}(b_f - f_y g_y^{-1} b_g),\\quad
    C = c_x - c_y g_y^{-1} g_x,\\quad D = -c_y g_y^{-1} b_g,

and with A = V Λ V⁻¹ the transfer function is the pole-residue sum
H(s) = D + Σ_i r_i / (s − λ_i), r_i = (C v_i)(w_i B), w_i the i-th row of V⁻¹.

The reduction follows ANDES's eigenvalue routine (``andes.routines.eig.EIG.calc_As``) so
that A's eigenvalues are ANDES's: algebraic equations whose g_y row is zero are dropped with
their variable (and, when their g_x row is not, become state constraints 0 = C_s x that
eliminate one state each). A variable that appears in no algebraic equation (an empty g_y
column, e.g. the internal state of a filter whose time constants are all zero, as in the
IEEEST stabilizers of ANDES's IEEE 39-bus case) gets the diagonal ``empty_diag``: ANDES's
eigenvalue routine puts +1 there, which turns such a filter (y' = x, 0 = u − y + 1·x) into a
spurious unstable pole at λ = +1; −1e-6 gives the time domain's behaviour, y following u
with a pole at −1e6 /s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla

__all__ = ["LinearDae", "StateSpace", "reduce_dae", "modal_residues"]


@dataclass
class LinearDae:
    """The linearized DAE (see the module docstring). Matrices dense or scipy.sparse.

    Attributes
    ----------
    fx, fy, gx, gy : (n, n), (n, m), (m, n), (m, m)
    tf : numpy.ndarray (n,)
        Time constants of the states; 0 marks an algebraic state. [s]
    bf, bg : numpy.ndarray (n, p), (m, p)
        Input columns.
    cx, cy : numpy.ndarray (q, n), (q, m)
        Output rows.
    x_name : list of str
        State names (n).
    """

    fx: object
    fy: object
    gx: object
    gy: object
    tf: np.ndarray
    bf: np.ndarray
    bg: np.ndarray
    cx: np.ndarray
    cy: np.ndarray
    x_name: list


@dataclass
class StateSpace:
    """ẋ = A x + B u, z = C x + D u, with the names of the states x kept."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray
    x_name: list
    n_empty: int = 0

    def frequency_response(self, f_hz: np.ndarray) -> np.ndarray:
        """C (jωI − A)⁻¹ B + D at each frequency, shape (F, q, p), solved directly. [output/input]"""
        n = self.a.shape[0]
        out = []
        for f in np.atleast_1d(np.asarray(f_hz, dtype=float)):
            x = np.linalg.solve(2j * np.pi * f * np.eye(n) - self.a, self.b)
            out.append(self.c @ x + self.d)
        return np.array(out)


def _csr(m) -> sp.csr_matrix:
    return sp.csr_matrix(m) if not sp.issparse(m) else m.tocsr()


def _row_norms(m) -> np.ndarray:
    m = _csr(m)
    return np.sqrt(np.asarray(m.multiply(m).sum(axis=1)).ravel())


def reduce_dae(dae: LinearDae, tol: float = 1e-6, empty_diag: float = -1e-6) -> StateSpace:
    """The state space (A, B, C, D) of a linearized DAE (module docstring).

    Parameters
    ----------
    dae : LinearDae
    tol : float
        Row / column norm under which a g_y row or column counts as empty (ANDES's
        ``EIG.config.gy_tol``). [1]
    empty_diag : float
        Diagonal given to an empty g_y column (module docstring; ANDES's EIG: +1). [1]

    Returns
    -------
    StateSpace
        Over the differential states that remain (T ≠ 0, less one per state constraint).
    """
    fx, fy, gx, gy = (_csr(m) for m in (dae.fx, dae.fy, dae.gx, dae.gy))
    tf = np.asarray(dae.tf, dtype=float)
    bf, bg = np.asarray(dae.bf, float), np.asarray(dae.bg, float)
    cx, cy = np.asarray(dae.cx, float), np.asarray(dae.cy, float)
    names = np.array(dae.x_name, dtype=object)
    # ---- states with T = 0 are algebraic: move their rows/columns into the g block
    z = np.flatnonzero(tf == 0.0)
    if z.size:
        k = np.flatnonzero(tf != 0.0)
        fy, gx, gy = (sp.hstack([fy[k], fx[k][:, z]]).tocsr(),
                      sp.vstack([gx[:, k], fx[z][:, k]]).tocsr(),
                      sp.bmat([[gy, gx[:, z]], [fy[z], fx[z][:, z]]]).tocsr())
        fx = fx[k][:, k]
        bg = np.vstack([bg, bf[z]])
        bf = bf[k]
        cy = np.hstack([cy, cx[:, z]])
        cx = cx[:, k]
        tf, names = tf[k], names[k]
    # ---- empty g_y rows: dropped with their variable; with g_x ≠ 0 they are state constraints
    dead = np.flatnonzero(_row_norms(gy) < tol)
    cons = None
    if dead.size:
        coupled = dead[_row_norms(gx)[dead] >= tol]
        if coupled.size:
            cons = gx[coupled].toarray()
        alive = np.setdiff1d(np.arange(gy.shape[0]), dead)
        fy, gx, gy = fy[:, alive], gx[alive], gy[alive][:, alive]
        bg, cy = bg[alive], cy[:, alive]
    # ---- variables in no algebraic equation: a diagonal (module docstring)
    col = _row_norms(gy.T)
    empty = np.flatnonzero(col < tol)
    if empty.size:
        gy = (gy + sp.csr_matrix((np.full(empty.size, empty_diag), (empty, empty)), shape=gy.shape)).tocsr()
    lu = spla.splu(gy.tocsc())
    gyx = lu.solve(gx.toarray()) if gx.shape[1] else np.zeros((gy.shape[0], 0))
    gyb = lu.solve(bg)
    it = 1.0 / tf
    a = it[:, None] * (fx.toarray() - fy @ gyx)
    b = it[:, None] * (bf - fy @ gyb)
    c = cx - cy @ gyx
    d = -cy @ gyb
    if cons is not None:
        a, b, c, names = _apply_constraints(a, b, c, cons, names)
    return StateSpace(np.asarray(a), np.asarray(b), np.asarray(c), np.asarray(d), list(names), int(empty.size))


def _apply_constraints(a, b, c, cons, names):
    """Eliminate one state per constraint row 0 = C_s x (ANDES's pivot rule: the largest unused
    coefficient of each row)."""
    n = a.shape[0]
    dep, used = [], set()
    for row in np.abs(cons):
        for j in np.argsort(-row):
            if j not in used and row[j] > 0:
                dep.append(int(j))
                used.add(int(j))
                break
    dep = np.array(dep, dtype=int)
    free = np.setdiff1d(np.arange(n), dep)
    r = np.zeros((n, free.size))
    r[free, np.arange(free.size)] = 1.0
    r[dep] = -np.linalg.solve(cons[:, dep], cons[:, free])
    return a[free] @ r, b[free], c @ r, names[free]


def modal_residues(ss: StateSpace):
    """Eigenvalues, residues and participation of every mode of a state space.

    Returns
    -------
    lam : numpy.ndarray (n,) complex
        Eigenvalues of A. [1/s]
    res : numpy.ndarray (n, q, p) complex
        Residues r_i = (C v_i)(w_i B): H(s) = D + Σ_i r_i / (s − λ_i). [output/input/s]
    part : numpy.ndarray (n, n)
        Participation factors |v_ki w_ik|, each mode's column normalized to sum 1 (state k,
        mode i). [frac]
    """
    lam, v = sla.eig(ss.a)
    w = sla.solve(v, np.eye(v.shape[0]))           # rows: left eigenvectors, w v = I
    cv = ss.c @ v                                   # (q, n)
    wb = w @ ss.b                                   # (n, p)
    res = cv.T[:, :, None] * wb[:, None, :]
    part = np.abs(v * w.T)
    part /= np.maximum(part.sum(axis=0, keepdims=True), 1e-300)
    return lam, res, part
