"""``facility size``: the UPS battery the spec's worst sag needs, as a floor of its ratings.

Where the spec has a ride-through curve (``[spec.ride_through]``) and the UPS battery is
extendable (``[ups] enabled = true, extendable = true``), ``facility size`` sizes the battery
for both jobs it has:

1. **Ride-through.** Each band's worst sag (its lower voltage edge held for its time,
   :func:`facility.electrical.ride_through.curve_worst_sags`) is run through the UPS model at
   the site's peak IT load (:func:`facility.electrical.ride_through.ups_energy_for_curve`);
   the largest battery energy ``E_sag`` and power ``P_sag`` over the bands set the floor:
   ``p_rated_mw >= P_sag`` and ``e_rated_mwh >= E_sag / a``, where ``a`` is the share of
   ``e_rated_mwh`` a sag can count on: ``reserve_frac`` (the smoothing may not use it, so it
   is there at any SoC) or, without a reserve, ``initial_soc_frac - min_soc_frac`` (the
   battery at its starting SoC, as ``metrics.ride_through.ups_sizing.battery_holds`` judges).
2. **The spec's limits**, as for the other storages: the sizing LP chooses the ratings within
   ``[min_*, max_*]`` with the floor of 1. as its ``min_*``.

The verification run then carries the scenario's ``[[grid_events]]`` with the sized battery
(its ride-through rows judge them). A UPS setting that transfers inside the curve fails
``ride_through_connected`` whatever the battery: no battery size fixes it, and ``size`` says
so (exit 3).

Imports: :mod:`facility.electrical` (the UPS sag settings and the ride-through model) and
:mod:`facility.errors`; no other sizing module, never :mod:`facility.cosim` nor :mod:`facility.run`.
"""

from __future__ import annotations

import numpy as np

from facility.electrical.grid_events import ups_sag_settings
from facility.electrical.ride_through import ups_energy_for_curve
from facility.errors import InfeasibleError, ScenarioError

__all__ = ["ups_ride_through_floor", "with_ups_floor"]


def ups_ride_through_floor(scenario, site_powers, ups_sn_mva: float) -> dict | None:
    """The UPS battery ratings the spec's worst sag needs.

    Parameters
    ----------
    scenario : Scenario
        ``spec.ride_through``, ``[ups]`` (its sag settings over ``grid.ups_type``'s).
    site_powers : iterable of SitePower
        The site's power (raw, and under the GPU controls): the IT load is its
        ``p_it_mw``, the largest over them. [MW]
    ups_sn_mva : float
        Total UPS rating (the network's). [MVA]

    Returns
    -------
    dict or None
        None where the spec has no curve or the UPS battery is not extendable; else
        ``p_mw_min`` [MW], ``e_mwh_min`` [MWh] (the floor), ``e_sag_mwh`` (the battery energy
        of the worst sag) [MWh], ``available_frac`` (the share of ``e_rated_mwh`` a sag counts
        on) [frac], ``p_it_peak_mw`` [MW], ``sag`` (``band``, ``vm_pu``, ``duration_s``,
        ``transfers``: the sag that sets the energy) and ``bands`` (every band's figures).
    """
    rt = scenario.spec.ride_through
    ups = scenario.ups
    if rt is None or not (ups.enabled and ups.extendable):
        return None
    p_it = max(float(np.max(s.p_it_mw, initial=0.0)) for s in site_powers)
    need = ups_energy_for_curve(p_it, float(ups_sn_mva), ups_sag_settings(scenario), rt,
                                dt_s=min(scenario.time.dt_s, 0.001),
                                eff_discharge_frac=ups.eff_discharge_frac)
    avail = ups.reserve_frac if ups.reserve_frac > 0 else ups.initial_soc_frac - ups.min_soc_frac
    if avail <= 0:
        raise ScenarioError(
            f"ups.reserve_frac = 0 and ups.initial_soc_frac = {ups.initial_soc_frac:g} <= "
            f"min_soc_frac = {ups.min_soc_frac:g}: the UPS battery keeps no energy for the spec's "
            f"ride-through curve; set ups.reserve_frac (0 < frac <= 1)")
    band = need["bands"][str(need["worst_band"])]
    return {"p_mw_min": float(need["p_mw"]), "e_mwh_min": float(need["e_mwh"] / avail),
            "e_sag_mwh": float(need["e_mwh"]), "available_frac": float(avail), "p_it_peak_mw": p_it,
            "sag": {"band": int(need["worst_band"]), "vm_pu": band["vm_pu"],
                    "duration_s": band["duration_s"], "transfers": band["transfers"]},
            "bands": need["bands"]}


def with_ups_floor(scenario, floor: dict | None):
    """The scenario with the UPS's ``min_p_rated_mw`` / ``min_e_rated_mwh`` raised to the
    floor (never lowered); unchanged without one.

    Raises
    ------
    InfeasibleError
        The floor is above ``max_p_rated_mw`` / ``max_e_rated_mwh``.
    """
    if floor is None:
        return scenario
    ups = scenario.ups
    p_min = max(ups.min_p_rated_mw, floor["p_mw_min"])
    e_min = max(ups.min_e_rated_mwh, floor["e_mwh_min"])
    sag = floor["sag"]
    for key, v, cap, unit in (("p_rated_mw", p_min, ups.max_p_rated_mw, "MW"),
                              ("e_rated_mwh", e_min, ups.max_e_rated_mwh, "MWh")):
        if cap is not None and v > cap * (1 + 1e-9):
            raise InfeasibleError(
                f"the UPS battery needs {key} >= {v:.4g} {unit} for the spec's worst ride-through "
                f"sag ({sag['vm_pu']:g} pu for {sag['duration_s']:g} s at {floor['p_it_peak_mw']:.4g} MW "
                f"of IT load), above ups.max_{key} = {cap:g} {unit}; raise it",
                {"ups_ride_through": floor})
    return scenario.model_copy(update={"ups": ups.model_copy(update={"min_p_rated_mw": p_min,
                                                                     "min_e_rated_mwh": e_min})})
