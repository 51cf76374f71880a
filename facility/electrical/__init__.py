"""Electrical model: the facility's pandapower network and a fast time-series power flow.

The only package of ``facility`` that imports pandapower. :func:`build_network` turns the
scenario's ``[grid]`` section into a network (utility source -> PCC -> substation
transformers -> MV bus -> per feeder MV/LV transformer -> UPS -> racks; BESS on the MV bus
through its own transformer); :func:`run_power_flow` solves every time step in vectorized
chunks (Z-bus fixed point, Newton-Raphson fallback) on the admittance matrix pandapower
builds; :func:`electrical_metrics` reduces it to the ``electrical`` metrics;
:func:`export_network` writes the network for pandapower users.

Names are imported lazily, so ``facility.electrical.library`` (used by ``validate``) does not
pay for importing pandapower.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "FacilityNetwork": "network",
    "build_network": "network",
    "export_network": "network",
    "PowerFlowResult": "powerflow",
    "run_power_flow": "powerflow",
    "electrical_metrics": "powerflow",
    "feeder_injections": "powerflow",
    "storage_shares": "powerflow",
    "NetworkLimits": "limits",
    "network_limits": "limits",
    "electrical_compliance": "limits",
    "violation_events": "limits",
    "violation_lines": "limits",
    "check_grid_types": "library",
    "list_trafo_types": "library",
    "list_ups_types": "library",
    "load_trafo_type": "library",
    "load_ups_type": "library",
    "ups_loss_mw": "ups",
    "ups_input_mw": "ups",
    "ups_efficiency_frac": "ups",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'facility.electrical' has no attribute {name!r}")
    return getattr(importlib.import_module(f"facility.electrical.{mod}"), name)


def __dir__():
    return sorted(list(globals()) + __all__)
