"""Storage sizing and dispatch: one LP (Pyomo / HiGHS), the only package that imports pyomo.

Public API
----------
size_storage(p_load_mw, dt_s, storages, spec, optimize, *, t_s=None) -> SizingResult
solve_dispatch(p_load_mw, dt_s, storages, spec, optimize, *, initial_soc_frac=None,
               terminal=None, p_pcc_history_mw=None, terminal_soc_frac=None,
               pcc_variation_cost_usd_per_mw=0.0) -> SizingResult
sizing_to_json(result) -> dict

The formulation (equations, symbols, units) is in :mod:`facility.optimize.formulation` and
:mod:`facility.optimize.windows`, collected in ``docs/formulation.md``.
"""

from facility.optimize.api import (
    SizingResult,
    SolveInfo,
    size_storage,
    sizing_to_json,
    solve_dispatch,
)

__all__ = ["SizingResult", "SolveInfo", "size_storage", "solve_dispatch", "sizing_to_json"]
