"""The certificates: bounds and checks that say how good a plan is, or make it feasible.

Forced directions (:mod:`.directions`), the branch and bound over the storage ratings
(:mod:`.certify`), the parallel bound jobs (:mod:`.bracket_jobs`), the realization of a plan
on the fine grid (:mod:`.realize`), the plan check (:mod:`.verify`) and the fallbacks when the
solver stops at its time limit (:mod:`.fallback`).

May import: :mod:`facility.optimize.model` and :mod:`facility.optimize.solvers`. Never a
strategy or the driver.
"""
