"""The report's cost table shows each storage unit's technology, P, E, duration, cycles per year
and cost per year (a hybrid section's units each on a row)."""

from types import SimpleNamespace

from facility.config.schema import OptimizeConfig
from facility.report.cost import cost_section


def test_cost_table_has_a_row_per_unit_with_duration_cycles_and_cost():
    cost = {"storage_capex_usd_per_year": 1e6, "fixed_om_usd_per_year": 2e4, "loss_energy_usd_per_year": 3e4,
            "burn_energy_usd_per_year": 0.0, "degradation_usd_per_year": 5e4, "slowdown_usd_per_year": 0.0,
            "total_usd_per_year": 1.1e6}
    units = {"bess.supercap": {"p_rated_mw": 20.0, "e_rated_mwh": 0.05, "duration_h": 0.0025,
                               "capex_usd": 7e6, "loss_mwh_per_year": 300.0,
                               "equivalent_full_cycles_per_year": 150000.0, "cost_usd_per_year": 8.1e5,
                               "technology": "supercap"},
             "bess.lfp_1h": {"p_rated_mw": 5.0, "e_rated_mwh": 5.0, "duration_h": 1.0, "capex_usd": 3.65e6,
                             "loss_mwh_per_year": 50.0, "equivalent_full_cycles_per_year": 40.0,
                             "cost_usd_per_year": 2.9e5, "technology": "lfp_1h"}}
    res = SimpleNamespace(sizing={"cost": cost, "mix": {"storages": units}},
                          scenario=SimpleNamespace(optimize=OptimizeConfig()))
    html = cost_section(res)
    assert "storage fixed O&amp;M" in html and "20,000" in html
    # one unit for every duration of the table (seconds: one unit is below 0.1 h), in its head
    assert "<th>duration [s]</th>" in html
    assert "<td>bess.supercap</td><td>supercap</td><td>20</td><td>0.05</td><td>9</td><td>1.5e+05</td>" in html
    assert "<td>bess.lfp_1h</td><td>lfp_1h</td><td>5</td><td>5</td><td>3,600</td><td>40</td>" in html
    assert "810,000" in html and "290,000" in html
