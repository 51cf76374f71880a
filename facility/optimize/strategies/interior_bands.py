"""The band rows of the interior strategy's restrictions: which bins and polygon directions
they carry, found lazily from the plans solved, as the full LP's lazy rows
(:mod:`facility.optimize.model.spectral`).

The rows themselves are built in the solve job (:mod:`facility.optimize.model.pcc_grid`); this
module keeps the search's side: the directions found so far (``{bin: set of directions}``,
picklable for a job in another process), seeded with the worst bins the load alone puts above
their limit, and the check of a solved plan's PCC power on the fine grid against every bin.
"""

from __future__ import annotations

import numpy as np

from facility.optimize.model.problem import Problem
from facility.optimize.model.result import plan_pcc_mw
from facility.optimize.model.spectral import (BINS_PER_ROUND, NEAR, SEED_BINS, SIDES, SpectralRows,
                                        bin_limits, near_limit, spectral_violations)

__all__ = ["BandCuts", "BIND_FRAC"]

#: A bin at this share of its limit or above binds a plan (the gap's reason then reads
#: ``spectral``). [-]
BIND_FRAC = 0.99


class BandCuts:
    """The band rows one run of the interior strategy carries.

    Parameters
    ----------
    pb : Problem
        With ``pb.has_spectral``.
    stats : InteriorStats
        Its ``n_spectral_bins`` and ``n_spectral_rounds`` are kept current.
    """

    def __init__(self, pb: Problem, stats):
        self.pb, self.st = pb, stats
        self.limits = bin_limits(pb.spec, pb.n_steps, pb.dt_s, pb.margin_frac)
        self.cutter = SpectralRows(self.limits, None, None, [])
        k, amp, ang = spectral_violations(pb.load_mw, self.limits, SIDES)
        self._take(self.cutter.directions_for(k, ang, amp, SEED_BINS))

    def _take(self, new: dict) -> None:
        for k, ms in new.items():
            self.cutter.cuts.setdefault(int(k), set()).update(int(m) for m in ms)
        self.st.n_spectral_bins = len(self.cutter.cuts)

    def pcc_mw(self, plan: dict, lever_plan: dict | None = None) -> np.ndarray:
        """Fine-grid PCC power of a storage plan and, with GPU levers, of their plan. [MW]"""
        return plan_pcc_mw(self.pb.load_mw, plan, self.pb.dt_s, self.pb.levers, lever_plan)

    def more_rows(self, res) -> bool:
        """After a restriction's solve (a result of
        :func:`facility.optimize.certificates.bracket_jobs.solve_job`): add the directions its plan's PCC
        power needs (the violated bins and those above NEAR × their limit, at most
        BINS_PER_ROUND bins); False when it meets every band row of the full polygon LP."""
        if res is None or "plan" not in res:
            return False
        p = self.pcc_mw(res["plan"], res.get("lever_plan"))
        k, _, _ = spectral_violations(p, self.limits, SIDES)
        if k.size == 0:
            return False
        k, amp, ang = near_limit(p, self.limits, NEAR)
        new = self.cutter.directions_for(k, ang, amp, BINS_PER_ROUND)
        if not new:
            return False
        self._take(new)
        self.st.n_spectral_rounds += 1
        return True

    def bind(self, plan: dict, lever_plan: dict | None = None) -> bool:
        """Whether a band limit binds a plan (a bin at :data:`BIND_FRAC` of its limit or
        above)."""
        return near_limit(self.pcc_mw(plan, lever_plan), self.limits, BIND_FRAC)[0].size > 0

    def directions(self) -> dict | None:
        """The directions for a solve job, ``{bin: sorted directions}`` (None without any)."""
        return {k: sorted(v) for k, v in self.cutter.cuts.items()} or None
