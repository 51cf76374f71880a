"""Storage sizing and dispatch: one LP (Pyomo / HiGHS), the only package that imports pyomo.

Public API
----------
size_storage(p_load_mw, dt_s, storages, spec, optimize, *, t_s=None, levers=None) -> SizingResult
solve_dispatch(p_load_mw, dt_s, storages, spec, optimize, *, initial_soc_frac=None,
               terminal=None, p_pcc_history_mw=None, terminal_soc_frac=None,
               pcc_variation_cost_usd_per_mw=0.0, pcc_variation_lag_steps=1) -> SizingResult
sizing_to_json(result) -> dict

Layers (each imports only those below it)::

    api            driver: size_storage, solve_dispatch, solve (picks and chains strategies)
    full | coarsen | periodic      strategies, peers (periodic_spectral: the reduction's band rows)
    solve, verify, result, problem the shared LP layer: solve + diagnose + repair, plan checks,
                                   results, the problem object
    formulation, windows, lp       the LP itself (equations) and its HiGHS interface;
      spectral, levers,            band peak rows (lazy FFT bins), the GPU levers (inputs,
      lever_columns                pieces) and their columns: optional steps of the formulation

The formulation (equations, symbols, units) is in :mod:`facility.optimize.formulation` and
:mod:`facility.optimize.windows`, collected in ``docs/formulation.md``.
"""

from facility.optimize.api import size_storage, solve, solve_dispatch
from facility.optimize.problem import Problem
from facility.optimize.result import SizingResult, SolveInfo, sizing_to_json

__all__ = ["SizingResult", "SolveInfo", "Problem", "size_storage", "solve_dispatch", "solve",
           "sizing_to_json"]
