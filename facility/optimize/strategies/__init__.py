"""The strategies: ways to solve one sizing problem, each exact or with a proven gap.

The full LP (:mod:`.full`), the coarsened horizon (:mod:`.coarsen`), the periodic reduction
(:mod:`.periodic`, its band rows :mod:`.periodic_spectral`), the long-horizon interior strategy
(:mod:`.interior`, its band cuts :mod:`.interior_bands`), the idle facility (:mod:`.idle`), the
search over the GPU levers (:mod:`.lever_search`, :mod:`.lever_boxes`, :mod:`.box_bounds`)
and the naive baseline of the benchmarks (:mod:`.naive`).

May import: :mod:`facility.optimize.model`, :mod:`facility.optimize.solvers`,
:mod:`facility.optimize.certificates` and each other. Never the driver.
"""
