"""facility.scenario.resolve: one error listing the configuration's problems, then the domains',
each prefixed with the source; the configuration's loader alone checks the schema's part."""

from __future__ import annotations

import pytest

from facility.config import load as config_load
from facility.config.resolved import NotResolvedError
from facility.errors import ScenarioError
from facility.scenario import resolve, scenario_from_dict


def _bad(d):
    jobs = [dict(d["jobs"][0], gpu="nope")] + d["jobs"][1:]
    return dict(d, jobs=jobs, grid=dict(d.get("grid", {}), trafo_type="nope_trafo"))


def test_one_error_lists_config_then_domain_problems(tiny_scenario_dict):
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(_bad(tiny_scenario_dict), "x.toml")
    lines = str(e.value).splitlines()
    assert all(line.startswith("x.toml: ") for line in lines)
    gpu = next(i for i, line in enumerate(lines) if line.startswith("x.toml: jobs.0.gpu = 'nope': unknown GPU model"))
    trafo = next(i for i, line in enumerate(lines) if "grid.trafo_type = 'nope_trafo': unknown transformer type" in line)
    assert gpu < trafo


def test_without_checks_the_first_entry_that_cannot_be_read_is_refused(tiny_scenario_dict):
    with pytest.raises(ScenarioError, match=r"^x.toml: jobs\[0\].gpu = 'nope': unknown GPU model"):
        scenario_from_dict(_bad(tiny_scenario_dict), "x.toml", check=False)
    d = dict(tiny_scenario_dict, grid={"trafo_type": "nope_trafo"})
    with pytest.raises(ScenarioError, match=r"^x.toml: grid.trafo_type = 'nope_trafo': unknown transformer type"):
        scenario_from_dict(d, "x.toml", check=False)


def test_the_config_loader_checks_only_the_configuration(tiny_scenario_dict):
    d = dict(tiny_scenario_dict, grid={"trafo_type": "nope_trafo"})
    s = config_load.scenario_from_dict(d, "x.toml")      # the type is the electrical domain's
    with pytest.raises(NotResolvedError):
        s.library.trafo
    with pytest.raises(ScenarioError, match="unknown transformer type"):
        resolve(s, "x.toml")
    assert not s.library.domains                          # a failed resolve attaches nothing
    with pytest.raises(ScenarioError, match="jobs.0.gpu = 'nope': unknown GPU model"):
        config_load.scenario_from_dict(_bad(tiny_scenario_dict), "x.toml")


def test_resolve_is_idempotent_and_keeps_the_loaded_objects(tiny_scenario_dict):
    s = scenario_from_dict(tiny_scenario_dict, "x.toml")
    lib = s.library
    assert resolve(s) is s and s.library is lib
    assert s.library.gpu(s.jobs[0].gpu).tdp_w > 0 and s.library.ups is not None
    assert s.library.unresolved == {}
