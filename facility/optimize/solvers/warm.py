"""Warm starts between related LP solves: each solve of an LP like one solved before in the
same block starts from that solve's optimal basis.

The loss-aware sizing (:func:`facility.sizing.network.size_through_network`) solves the same LP
round after round with another load (the anchor of its linearization moves by the losses'
change): the rows, columns and costs keep their structure, only constants move, so the last
round's optimal basis is a near-optimal start for the next (dual simplex from a basis that
stays dual feasible where only the right-hand side moved). Inside :func:`warm_starts` every
HiGHS simplex solve (:func:`facility.optimize.solvers.lp.solve_highs`) of an LP whose shape
and sparsity pattern match a solved one is handed that basis first; outside it, nothing
changes. The interior-point paths (PIQP, HiGHS IPM) have no basis and start cold.

Layer: solvers (imports nothing of facility).
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np

__all__ = ["WarmStarts", "warm_starts", "lp_key", "start_from", "keep_basis"]


@dataclass
class WarmStarts:
    """Bases kept within one :func:`warm_starts` block.

    Attributes
    ----------
    bases : dict
        ``{lp_key: highspy.HighsBasis}`` of the last optimal solve of each LP pattern.
    solves : int
        Simplex solves in the block.
    warm : int
        Of those, solves that started from a kept basis.
    iterations : list of int
        Simplex iterations of each solve, in order.
    enabled : bool
        Hand kept bases to later solves (False: only count, every solve cold).
    """

    bases: dict = field(default_factory=dict)
    solves: int = 0
    warm: int = 0
    iterations: list = field(default_factory=list)
    enabled: bool = True


_STORE: ContextVar[WarmStarts | None] = ContextVar("facility_warm_starts", default=None)


@contextmanager
def warm_starts(enabled: bool = True):
    """Keep the optimal bases of the HiGHS solves inside the block and start each later solve
    of the same LP pattern from one; yields the :class:`WarmStarts` (``enabled=False``: the
    solves start cold and are only counted)."""
    store = WarmStarts(enabled=enabled)
    token = _STORE.set(store)
    try:
        yield store
    finally:
        _STORE.reset(token)


def lp_key(A) -> tuple:
    """The pattern of an LP's constraint matrix (CSC): shape, nonzeros and a sample of its
    column starts and row indices (two LPs of one formulation on one grid share it)."""
    n = A.indices.size
    pick = np.linspace(0, max(n - 1, 0), num=min(n, 256)).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
    return (A.shape, int(A.nnz), A.indptr[:: max(1, A.indptr.size // 256)].tobytes(),
            A.indices[pick].tobytes())


def start_from(h, A) -> tuple | None:
    """Inside a :func:`warm_starts` block: hand the HiGHS instance ``h`` (model passed) the
    kept basis of the pattern of ``A`` where there is one; returns that pattern's key for
    :func:`keep_basis` (None outside a block: nothing is computed)."""
    store = _STORE.get()
    if store is None:
        return None
    key = lp_key(A)
    store.solves += 1
    basis = store.bases.get(key) if store.enabled else None
    if basis is not None:
        import highspy

        store.warm += int(h.setBasis(basis) == highspy.HighsStatus.kOk)
    return key


def keep_basis(h, key: tuple | None, optimal: bool) -> None:
    """Keep ``h``'s basis under ``key`` (from :func:`start_from`; None: nothing) after an
    optimal solve, and its iteration count."""
    store = _STORE.get()
    if store is None or key is None:
        return
    store.iterations.append(int(h.getInfo().simplex_iteration_count))
    if optimal:
        store.bases[key] = h.getBasis()
