"""The matrix container of the model: a sparse linear program assembled block by block.

The formulation (:mod:`facility.optimize.model.formulation`) adds whole blocks of columns and rows
at once (one per constraint family, vectorized over time), never one scalar at a time; the
solvers (:mod:`facility.optimize.solvers`) take the assembled matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["LinearProgram", "RowBlock"]


@dataclass
class RowBlock:
    """A block of rows of one constraint family: ``lo <= A x <= hi``.

    Attributes
    ----------
    family : str
        Constraint family (``window_up``, ``soc_dynamics``, ...): the name a diagnosis reports.
    start, stop : int
        Row range of the block in the assembled matrix.
    t : numpy.ndarray
        Time index of each row (-1 where a row has none), for the diagnosis.
    soft : bool
        Whether the diagnosis re-solve may violate these rows at a penalty.
    unit : str
        Unit of the rows' violation (MW, MWh).
    """

    family: str
    start: int
    stop: int
    t: np.ndarray
    soft: bool
    unit: str


@dataclass
class LinearProgram:
    """Columns with bounds and costs, rows as sparse triplets, grouped in named blocks."""

    cost: list = field(default_factory=list)
    col_lb: list = field(default_factory=list)
    col_ub: list = field(default_factory=list)
    n_cols: int = 0
    row_i: list = field(default_factory=list)
    row_j: list = field(default_factory=list)
    row_v: list = field(default_factory=list)
    row_lo: list = field(default_factory=list)
    row_hi: list = field(default_factory=list)
    n_rows: int = 0
    blocks: list = field(default_factory=list)
    col_names: dict = field(default_factory=dict)
    slack_map: list = field(default_factory=list)
    ub_zero: list = field(default_factory=list)
    #: (cols, vals) added to the cost at assembly (a Lagrangian term)
    extra_cost: list = field(default_factory=list)
    #: rows whose bound holds a PCC-history constant: (rows, history index, sign); see
    #: :func:`facility.optimize.model.windows.add_lag_bound_rows`
    history_rows: list = field(default_factory=list)

    def add_columns(self, name: str, n: int, lb=0.0, ub=np.inf, cost=0.0) -> np.ndarray:
        """Append ``n`` columns; return their indices."""
        idx = self.n_cols + np.arange(n)
        self.cost.append(np.broadcast_to(np.asarray(cost, float), (n,)).copy())
        self.col_lb.append(np.broadcast_to(np.asarray(lb, float), (n,)).copy())
        self.col_ub.append(np.broadcast_to(np.asarray(ub, float), (n,)).copy())
        self.n_cols += n
        self.col_names[name] = idx
        return idx

    def add_rows(self, family: str, terms, lo, hi, *, t=None, soft: bool = True,
                 unit: str = "MW") -> RowBlock:
        """Append a block of rows ``lo <= sum_k coef_k * x[col_k] <= hi``.

        Parameters
        ----------
        terms : list of (col, coef)
            ``col`` an int array (m,) of column indices (entries < 0 are skipped: a constant
            that is already in ``lo``/``hi``), ``coef`` a scalar or an array (m,).
        lo, hi : float or array (m,)
            Row bounds (``-inf``/``inf`` for one-sided rows).
        """
        m = None
        for col, _ in terms:
            m = np.asarray(col).shape[0]
            break
        if m is None:
            m = np.broadcast_shapes(np.shape(lo), np.shape(hi))[0]
        rows = self.n_rows + np.arange(m)
        for col, coef in terms:
            col = np.asarray(col, dtype=np.int64)
            v = np.broadcast_to(np.asarray(coef, float), (m,))
            keep = (col >= 0) & (v != 0.0)
            self.row_i.append(rows[keep])
            self.row_j.append(col[keep])
            self.row_v.append(v[keep])
        self.row_lo.append(np.broadcast_to(np.asarray(lo, float), (m,)).copy())
        self.row_hi.append(np.broadcast_to(np.asarray(hi, float), (m,)).copy())
        tt = np.full(m, -1) if t is None else np.broadcast_to(np.asarray(t), (m,)).copy()
        blk = RowBlock(family, self.n_rows, self.n_rows + m, tt, soft, unit)
        self.blocks.append(blk)
        self.n_rows += m
        return blk

    def add_row(self, family: str, cols, vals, lo: float, hi: float, *, t: int = -1,
                soft: bool = True, unit: str = "MW") -> RowBlock:
        """Append one row ``lo <= sum_i vals_i * x[cols_i] <= hi`` with any number of entries
        (a dense row, e.g. a DFT bin of the PCC power)."""
        cols = np.asarray(cols, dtype=np.int64)
        vals = np.asarray(vals, dtype=float)
        keep = (cols >= 0) & (vals != 0.0)
        self.row_i.append(np.full(int(keep.sum()), self.n_rows, dtype=np.int64))
        self.row_j.append(cols[keep])
        self.row_v.append(vals[keep])
        self.row_lo.append(np.array([lo], dtype=float))
        self.row_hi.append(np.array([hi], dtype=float))
        blk = RowBlock(family, self.n_rows, self.n_rows + 1, np.array([t]), soft, unit)
        self.blocks.append(blk)
        self.n_rows += 1
        return blk

    def row_index(self) -> list:
        """Where each block's rows are, to carry row values (duals) to another LP built by the
        same steps: ``[(key, start, t), ...]``, ``key`` the block's family and how many blocks
        of that family came before it (small and picklable)."""
        seen: dict = {}
        out = []
        for b in self.blocks:
            n = seen.get(b.family, 0)
            seen[b.family] = n + 1
            out.append(((b.family, n), b.start, np.asarray(b.t, dtype=np.int64)))
        return out

    def mark(self) -> tuple[int, int, int]:
        """Position ``(n_cols, n_rows, n_chunks)`` to hand to :func:`extend_highs` later."""
        return self.n_cols, self.n_rows, len(self.row_i)

    def assemble(self):
        """Return ``(A csc, cost, col_lb, col_ub, row_lo, row_hi)`` as numpy arrays."""
        cat = (lambda xs, dt=float: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
        A = sp.csc_matrix((cat(self.row_v), (cat(self.row_i, np.int64), cat(self.row_j, np.int64))),
                          shape=(self.n_rows, self.n_cols))
        A.sum_duplicates()
        ub = cat(self.col_ub)
        for idx in self.ub_zero:
            ub[idx] = 0.0
        cost = cat(self.cost)
        for cols, vals in self.extra_cost:
            np.add.at(cost, np.asarray(cols, dtype=np.int64), vals)
        return (A, cost, cat(self.col_lb), ub, cat(self.row_lo), cat(self.row_hi))
