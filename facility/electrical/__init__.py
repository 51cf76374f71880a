"""Electrical model: the facility's pandapower network and a fast time-series power flow.

The only package of ``facility`` that imports pandapower. :func:`build_network` turns the
scenario's ``[grid]`` section into a network (utility source -> PCC -> substation
transformers -> MV bus -> per feeder MV/LV transformer -> UPS -> racks; BESS on the MV bus
through its own transformer); :func:`run_power_flow` solves every time step in vectorized
chunks (Z-bus fixed point, Newton-Raphson fallback) on the admittance matrix pandapower
builds; :func:`electrical_metrics` reduces it to the ``electrical`` metrics;
:func:`export_network` writes the network for pandapower users.
"""

from facility.electrical.library import list_trafo_types, list_ups_types, load_trafo_type, load_ups_type
from facility.electrical.network import FacilityNetwork, build_network, check_grid_types, export_network
from facility.electrical.powerflow import PowerFlowResult, electrical_metrics, feeder_injections, run_power_flow
from facility.electrical.ups import ups_efficiency_frac, ups_input_mw, ups_loss_mw

__all__ = [
    "FacilityNetwork",
    "PowerFlowResult",
    "build_network",
    "run_power_flow",
    "electrical_metrics",
    "export_network",
    "feeder_injections",
    "check_grid_types",
    "list_trafo_types",
    "list_ups_types",
    "load_trafo_type",
    "load_ups_type",
    "ups_loss_mw",
    "ups_input_mw",
    "ups_efficiency_frac",
]
