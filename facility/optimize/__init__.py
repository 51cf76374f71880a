"""Storage sizing and dispatch: one LP (Pyomo / HiGHS), the only package that imports pyomo.

Public API
----------
size_storage(p_load_mw, dt_s, storages, spec, optimize, *, t_s=None, levers=None) -> SizingResult
solve_dispatch(p_load_mw, dt_s, storages, spec, optimize, *, initial_soc_frac=None,
               terminal=None, p_pcc_history_mw=None, terminal_soc_frac=None,
               pcc_variation_cost_usd_per_mw=0.0, pcc_variation_lag_steps=1) -> SizingResult
sizing_to_json(result) -> dict

Rooms (each imports only its own and those below it; the docstring of each says more)::

    driver        api: size_storage, solve_dispatch, solve (picks and chains strategies)
    strategies    full, coarsen, periodic, interior, idle, lever_search (+ their helpers)
    certificates  directions, certify, bracket_jobs, realize, verify, fallback
    solvers       lp (HiGHS), ipm (PIQP), pyomo_model (Pyomo), solve (solve + diagnose + repair)
    model         problem, storage_data, formulation, windows, spectral, levers, lever_columns,
                  group_rows, pcc_grid, result

The formulation (equations, symbols, units) is in :mod:`facility.optimize.model.formulation`
and :mod:`facility.optimize.model.windows`, collected in ``docs/formulation.md``.
"""

from facility.optimize.driver.api import size_storage, solve, solve_dispatch
from facility.optimize.model.problem import Problem
from facility.optimize.model.result import SizingResult, SolveInfo, sizing_to_json

__all__ = ["SizingResult", "SolveInfo", "Problem", "size_storage", "solve_dispatch", "solve",
           "sizing_to_json"]
