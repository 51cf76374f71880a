"""Strategy ``full``: one LP over the whole horizon (exact; the reference of the others)."""

from __future__ import annotations

import time

from facility.optimize.formulation import Model, build_model
from facility.optimize.lever_columns import lever_plan_from_columns
from facility.optimize.problem import Problem
from facility.optimize.result import SizingResult, pack_result, plan_from_columns
from facility.optimize.solve import solve_model
from facility.optimize.spectral import full_spectral

__all__ = ["build_full", "solve_full"]


def build_full(pb: Problem) -> Model:
    """The full LP of :func:`facility.optimize.formulation.build_model` for a problem."""
    return build_model(pb.load_mw, pb.dt_s, pb.storages, pb.spec, pb.price_usd_per_mwh,
                       p_pcc_history_mw=pb.p_pcc_history_mw, margin_frac=pb.margin_frac,
                       levers=pb.levers,
                       pcc_variation_cost_usd_per_mw=pb.pcc_variation_cost_usd_per_mw)


def solve_full(pb: Problem) -> SizingResult:
    """Solve the full LP (raises :class:`facility.errors.InfeasibleError` with a diagnosis).

    Band peak limits become lazy rows on the horizon's FFT bins
    (:func:`facility.optimize.spectral.full_spectral`)."""
    t0 = time.perf_counter()
    m = build_full(pb)
    lazy = full_spectral(pb.spec, pb.load_mw, pb.dt_s, pb.margin_frac)
    x, info = solve_model(m, lambda: build_full(pb), pb.optimize, pb.dt_s, time.perf_counter() - t0,
                          spectral=lazy)
    return pack_result(pb.load_mw, pb.storages, plan_from_columns(m, x), info,
                       levers=pb.levers, lever_plan=lever_plan_from_columns(m, x), dt_s=pb.dt_s)
