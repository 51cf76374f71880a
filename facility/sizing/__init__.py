"""Sizing: storage ratings (MW, MWh) and a plan that keep the grid side within the utility's
limits, verified by co-simulating the design.

Rooms: :mod:`~facility.sizing.pipeline` (:func:`size_scenario`, the named steps),
:mod:`~facility.sizing.mix` (the levers and the cost of a design),
:mod:`~facility.sizing.record` (``sizing.json``, assembled in one place),
:mod:`~facility.sizing.network` (the foresight LP through the network's losses),
:mod:`~facility.sizing.ups` (the UPS ride-through floor), :mod:`~facility.sizing.step` (the
unannounced-step floor) and :mod:`~facility.sizing.resize` (the controller re-size).
The package imports :mod:`facility.cosim` and the model packages; never :mod:`facility.run`.
"""

from facility.sizing.pipeline import (LP_LIMITS, SizingInputs, needed_margin_frac, size_scenario,
                                      sizing_inputs, verification_controller)

__all__ = ["size_scenario", "sizing_inputs", "SizingInputs", "needed_margin_frac",
           "verification_controller", "LP_LIMITS"]
