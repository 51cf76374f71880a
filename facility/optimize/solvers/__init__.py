"""The solvers: they take a :class:`~facility.optimize.model.linear_program.LinearProgram` and
return a solution, nothing about storage in them.

HiGHS through its own API (:mod:`.lp`: build, solve, warm re-solves), the interior point of
PIQP (:mod:`.ipm`: the long-horizon bounds), Pyomo (:mod:`.pyomo_model`, the only module that
imports pyomo) and :mod:`.solve` (solve one model, diagnose infeasibility, repair the
spectral rows lazily).

May import: :mod:`facility.optimize.model`. Not the certificates, strategies or driver.
"""
