"""What every solution strategy of the optimizer receives: one :class:`Problem`, and its full LP
(:func:`build_full`, :func:`with_forced`: the full strategy and the branch and bound build it).

The driver (:mod:`facility.optimize.driver.api`) resolves the scenario sections into a ``Problem``
and hands it to the strategies (:mod:`~facility.optimize.strategies.full`,
:mod:`~facility.optimize.strategies.coarsen`, :mod:`~facility.optimize.strategies.periodic`,
:mod:`~facility.optimize.strategies.interior`); none of them reads scenario objects of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from facility.optimize.model.formulation import Model, build_model
from facility.optimize.model.levers import site_response_mw
from facility.optimize.model.spectral import has_spectral_limits
from facility.optimize.model.storage_data import StorageData

__all__ = ["Problem", "build_full", "with_forced"]


@dataclass(frozen=True)
class Problem:
    """One sizing or dispatch problem on a uniform time grid.

    Attributes
    ----------
    load_mw : numpy.ndarray (T,)
        Site power after the GPU-side controls, seen at the PCC before storage. [MW]
    dt_s : float
        Time step. [s]
    storages : dict of name -> StorageData
        Resolved storage parameters (fixed or extendable ratings).
    spec : SpecConfig
        Limits on the PCC power.
    optimize : OptimizeConfig
        Economics and solver options.
    p_pcc_history_mw : numpy.ndarray or None
        PCC power of the steps just before t = 0 (receding horizon), or None. [MW]
    levers : LeverSet or None
        The GPU levers that are decisions, on one piece (:mod:`facility.optimize.model.levers`);
        ``load_mw`` then holds the piece's constant part. None = storage only.
    pcc_variation_cost_usd_per_mw : float
        Price on the PCC power's variation (receding horizon; 0 = none). [USD/MW]
    pcc_variation_lag_steps : int
        Steps over which the variation is taken (1 = step to step; L = of the mean over L
        steps, :func:`facility.optimize.model.formulation.add_pcc_variation`). [steps]
    """

    load_mw: np.ndarray
    dt_s: float
    storages: dict
    spec: object
    optimize: object
    p_pcc_history_mw: np.ndarray | None = None
    levers: object = None
    pcc_variation_cost_usd_per_mw: float = 0.0
    pcc_variation_lag_steps: int = 1

    @property
    def n_steps(self) -> int:
        """Steps of the horizon."""
        return int(self.load_mw.size)

    @property
    def price_usd_per_mwh(self) -> float:
        """Price of energy lost in conversion or burned. [USD/MWh]"""
        return float(self.optimize.energy_price_usd_per_mwh)

    @property
    def margin_frac(self) -> float:
        """Share by which every window / dynamic-range limit is tightened. [frac]"""
        return float(self.optimize.limit_margin_frac)

    @property
    def has_spectral(self) -> bool:
        """Whether band peak limits are set (rows of :mod:`facility.optimize.model.spectral`)."""
        return has_spectral_limits(self.spec)

    def with_load(self, load_mw: np.ndarray, dt_s: float | None = None) -> "Problem":
        """The same problem on another load (and step); the levers must have the same length."""
        return replace(self, load_mw=np.asarray(load_mw, dtype=float),
                       dt_s=self.dt_s if dt_s is None else float(dt_s))

    def on_piece(self, levers, d_gpu_mw: np.ndarray) -> "Problem":
        """The problem on one piece of the GPU levers (:func:`facility.optimize.model.levers.lever_pieces`):
        the piece's constant GPU power change ``d_gpu_mw`` [MW], through the site model, added
        to the load, and its :class:`~facility.optimize.model.levers.LeverSet` as the levers."""
        load = self.load_mw + site_response_mw(d_gpu_mw, self.dt_s, levers.it_per_gpu,
                                               levers.cooling_per_gpu, levers.cooling_tau_s)
        return replace(self, load_mw=load, levers=levers)

    def within(self, time_left_s: float) -> "Problem":
        """The same problem with ``optimize.time_limit_s`` cut to ``time_left_s`` (at least
        1 s): what is left of a budget that several solves share. [s]"""
        left = max(1.0, min(float(self.optimize.time_limit_s), float(time_left_s)))
        if left >= float(self.optimize.time_limit_s):
            return self
        return replace(self, optimize=self.optimize.model_copy(update={"time_limit_s": left}))

    def on_steps(self, idx, dt_s: float | None = None) -> "Problem":
        """The problem on the steps ``idx`` of its grid (every per-step array indexed)."""
        return replace(self, load_mw=np.asarray(self.load_mw[idx], dtype=float),
                       dt_s=self.dt_s if dt_s is None else float(dt_s),
                       levers=None if self.levers is None else self.levers.take(idx))

    def step_data(self) -> np.ndarray:
        """Every per-step input stacked, shape (K, T): the load and the levers' arrays (for the
        coarsening and periodicity checks, which must hold for all of them)."""
        rows = [self.load_mw] + ([] if self.levers is None else list(self.levers.step_arrays()))
        return np.vstack([np.asarray(r, dtype=float) for r in rows])

    def storage_data(self, name: str) -> StorageData:
        """Parameters of one storage."""
        return self.storages[name]


def build_full(pb: Problem) -> Model:
    """The full LP of :func:`facility.optimize.model.formulation.build_model` for a problem."""
    return build_model(pb.load_mw, pb.dt_s, pb.storages, pb.spec, pb.price_usd_per_mwh,
                       p_pcc_history_mw=pb.p_pcc_history_mw, margin_frac=pb.margin_frac,
                       levers=pb.levers,
                       pcc_variation_cost_usd_per_mw=pb.pcc_variation_cost_usd_per_mw,
                       pcc_variation_lag_steps=pb.pcc_variation_lag_steps)


def with_forced(m: Model, forced: dict | None) -> Model:
    """The model with upper bound 0 on the columns of ``forced`` (``{storage: {"ch"|"dis":
    bool (T,)}}``: directions every plan at most as costly as a known one has,
    :mod:`facility.optimize.certificates.directions`)."""
    for name, sides in (forced or {}).items():
        for side, steps in sides.items():
            m.lp.ub_zero.append(m.cols[name][side][steps])
    return m
