"""ANDES as the grid's dynamics engine (``pip install 'facility[grid]'``; docs/grid_impact.md).

:mod:`~facility.grid_impact.dynamics.linear` (numpy / scipy only): the linearized DAE reduced
to a state space and its pole-residue modes. :mod:`~facility.grid_impact.dynamics.case`: an
ANDES case set up for a site (constant-power loads, a load at the PCC bus, the case's own
disturbances off) and its Jacobians. :mod:`~facility.grid_impact.dynamics.derive`: a mode set
from a case (``facility grid-modes``). :mod:`~facility.grid_impact.dynamics.replay`: ANDES's
time domain with a PCC power input against a mode set (``facility grid-replay``). Only
``case`` imports ANDES, lazily; the bundled mode sets load without it.
"""
