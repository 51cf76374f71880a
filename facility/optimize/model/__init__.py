"""The model: what the sizing problem is, written as data and rows of one linear program.

Holds the problem object (:mod:`.problem`), the storage data and its costs
(:mod:`.storage_data`), the matrix container (:mod:`.linear_program`), the formulation's
variables and rows (:mod:`.formulation`: energy balance, power, duration, ramp, network limits)
and its optional steps: the window rows (:mod:`.windows`), the band peak rows (:mod:`.spectral`),
the GPU levers and their columns (:mod:`.levers`, :mod:`.lever_columns`), the grouped rows
(:mod:`.group_rows`, :mod:`.pcc_grid`), and the results (:mod:`.result`).

May import: numpy, scipy and ``facility`` outside :mod:`facility.optimize`. Nothing of the
solvers, certificates, strategies or driver: this is the lowest room.
"""
