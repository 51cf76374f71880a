"""What every solution strategy of the optimizer receives: one :class:`Problem`.

The driver (:mod:`facility.optimize.api`) resolves the scenario sections into a ``Problem``
and hands it to the strategies (:mod:`~facility.optimize.full`,
:mod:`~facility.optimize.coarsen`, :mod:`~facility.optimize.periodic`,
:mod:`~facility.optimize.blocks`); none of them reads scenario objects of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from facility.optimize.formulation import StorageData

__all__ = ["Problem"]


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
    pcc_variation_cost_usd_per_mw : float
        Price on the PCC power's variation (receding horizon; 0 = none). [USD/MW]
    """

    load_mw: np.ndarray
    dt_s: float
    storages: dict
    spec: object
    optimize: object
    p_pcc_history_mw: np.ndarray | None = None
    pcc_variation_cost_usd_per_mw: float = 0.0

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

    def with_load(self, load_mw: np.ndarray, dt_s: float | None = None) -> "Problem":
        """The same problem on another load (and step)."""
        return replace(self, load_mw=np.asarray(load_mw, dtype=float),
                       dt_s=self.dt_s if dt_s is None else float(dt_s))

    def storage_data(self, name: str) -> StorageData:
        """Parameters of one storage."""
        return self.storages[name]
