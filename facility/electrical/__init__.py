"""Electrical model: the facility's pandapower network and a fast time-series power flow.

The only package of ``facility`` that imports pandapower.
:func:`~facility.electrical.network.build_network` turns the scenario's ``[grid]`` section into
a network (utility source -> PCC -> substation transformers -> MV bus -> per feeder MV/LV
transformer -> UPS -> racks; BESS on the MV bus through its own transformer);
:func:`~facility.electrical.powerflow.run_power_flow` solves every time step in vectorized
chunks (Z-bus fixed point, Newton-Raphson fallback) on the admittance matrix pandapower builds;
:func:`~facility.electrical.powerflow.electrical_metrics` reduces it to the ``electrical``
metrics; :func:`~facility.electrical.network.export_network` writes the network for pandapower
users.

The package itself imports nothing: import the names from their modules
(``from facility.electrical.network import build_network``), so that
``facility.electrical.library`` (used by ``validate``) does not pay for importing pandapower.
"""
