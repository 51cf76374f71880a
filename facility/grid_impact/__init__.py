"""Grid-side impact of the site's power: turbine-generator shaft torque and fatigue, and the
excitation of the grid's electromechanical modes (pure numpy / scipy; docs/grid_impact.md).

Layers: :mod:`~facility.grid_impact.shaft` (multi-mass shaft state space and frequency
response, floating or connected to the grid), :mod:`~facility.grid_impact.connection` (the
generator's synchronizing and damping torque, governor and torsional band of a scenario),
:mod:`~facility.grid_impact.modal` (modal grid model), :mod:`~facility.grid_impact.fatigue`
(rainflow + Miner), :mod:`~facility.grid_impact.library` (bundled models in
``models/grid_impact/``), :mod:`~facility.grid_impact.metrics` (the ``grid_impact`` metrics
block, its compliance rows and the optimizer's per-bin caps), :mod:`~facility.grid_impact.lp`
(the caps as a spec the optimizer reads).
"""

from facility.grid_impact.fatigue import miner_damage, rainflow_cycles
from facility.grid_impact.library import list_mode_sets, list_shafts, load_mode_set, load_section_models, load_shaft
from facility.grid_impact.metrics import (GridImpactModel, bin_caps_mw, bin_metrics, build_model,
                                          grid_impact_compliance, grid_impact_metrics)
from facility.grid_impact.modal import Mode, ModeSet, mode_response, smib_mode
from facility.grid_impact.shaft import ShaftModel

__all__ = ["ShaftModel", "Mode", "ModeSet", "mode_response", "smib_mode", "rainflow_cycles",
           "miner_damage", "list_shafts", "list_mode_sets", "load_shaft", "load_mode_set", "load_section_models",
           "GridImpactModel", "build_model", "grid_impact_metrics", "grid_impact_compliance",
           "bin_caps_mw", "bin_metrics"]
