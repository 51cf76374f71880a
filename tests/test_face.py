"""The package face (``facility/__init__.py``): its names are the packages' own, loaded on
first use, so ``import facility`` (what ``python -m facility`` runs first) stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import facility


def test_the_face_names_the_packages_own_functions():
    from facility.cosim import Results, simulate_design
    from facility.run import run_scenario
    from facility.scenario import load_scenario, resolve, scenario_from_dict
    from facility.sizing import size_scenario

    assert facility.run_scenario is run_scenario
    assert facility.size_scenario is size_scenario
    assert facility.simulate_design is simulate_design
    assert facility.Results is Results
    assert (facility.load_scenario, facility.scenario_from_dict, facility.resolve) == (
        load_scenario, scenario_from_dict, resolve)
    assert set(facility.__all__) <= set(dir(facility))
    with pytest.raises(AttributeError, match="no attribute 'run_scenari'"):
        facility.run_scenari  # noqa: B018


def test_import_facility_loads_no_heavy_package():
    code = ("import sys, facility; "
            "print(sorted(m for m in ('pandapower', 'pyomo', 'facility.cosim', 'facility.sizing', "
            "'facility.run', 'facility.scenario', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
