"""A fixed hybrid section next to an extendable storage, sized through the network: its units
keep their ratings (issue 52's fuzz: ``referred_storages`` scaled the section's p_rated_mw but
not ``unit_p_rated_mw``, and ``at_the_storages`` divided the units' fixed 20 MW by the
referral ratio 0.958 to 20.87 MW, outside the unit's duration bounds: run exited 2 on a
scenario validate passed)."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from facility.scenario import scenario_from_dict
from facility.config.technology import unit_configs
from facility.sizing.network import at_the_storages, referred_storages

SCEN = {
    "name": "fixed_hybrid", "seed": 1, "time": {"horizon_s": 10.0, "dt_s": 0.5},
    "jobs": [{"name": "a", "n_gpus": 2000, "gpu": "h100", "workload": "square", "period_s": 4.0}],
    "rack_storage": {"enabled": True, "extendable": True, "max_p_rated_mw": 5.0, "max_e_rated_mwh": 1.0},
    "bess": {"enabled": True, "technologies": ["supercap", "lfp_1h"],
             "unit_p_rated_mw": {"supercap": 20.0, "lfp_1h": 20.0},
             "unit_e_rated_mwh": {"supercap": 0.00556, "lfp_1h": 20.0}},
}


@dataclasses.dataclass
class Sol:
    """What at_the_storages reads of a SizingResult."""

    p_rated_mw_opt: dict
    p_storage_mw: dict
    p_charge_mw: dict
    p_discharge_mw: dict


@pytest.mark.parametrize("r", [0.958, 1.2])
def test_a_fixed_hybrids_units_are_referred_and_come_back_unchanged(r):
    s = scenario_from_dict(copy.deepcopy(SCEN))
    ref = referred_storages(s.storages(), {"bess": r})
    units = unit_configs("bess", ref["bess"])
    assert units["bess.supercap"].p_rated_mw == pytest.approx(20.0 * r)
    assert units["bess.lfp_1h"].p_rated_mw == pytest.approx(20.0 * r)
    assert ref["bess"].p_rated_mw == pytest.approx(40.0 * r)
    # the LP returns the referred fixed ratings; at the storages they are the scenario's again
    sol = Sol({u: c.p_rated_mw for u, c in units.items()}, {}, {}, {})
    back = at_the_storages(sol, {"bess": r})
    assert back.p_rated_mw_opt == pytest.approx({"bess.supercap": 20.0, "bess.lfp_1h": 20.0})
