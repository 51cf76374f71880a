"""Inputs that were merged, accepted silently or refused only by ``run`` (issue 52, items 4-5),
rebuilt from their descriptions: each is refused by ``validate`` with exit 2, naming the key,
the value and (for files) both files.

* two candidate technology files with one ``name`` (or a custom file named like a bundled
  one) became one hybrid unit;
* ``unit_p_rated_mw = {supercap = "2.0"}`` was blamed on a missing ``bess.p_rated_mw``, and
  ``true`` was taken as 1.0 MW;
* ``ups.technologies`` with ``[[grid_events]]`` and MPC steps that do not divide the spec's
  windows passed ``validate`` and were refused by ``run``.
"""

from __future__ import annotations

import copy
import math
import types
from pathlib import Path

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from facility.scenario import scenario_from_dict
from facility.config.schema import BessConfig, Scenario
from facility.control.mpc_grid import choose_grid, given_step_problems
from facility.errors import ScenarioError
from tests.conftest import cli_in_process

REPO = Path(__file__).resolve().parents[2]

HYBRID = {
    "name": "hy", "seed": 1, "time": {"horizon_s": 10.0, "dt_s": 0.1},
    "jobs": [{"name": "a", "n_gpus": 512, "gpu": "h100", "workload": "square", "period_s": 2.0}],
    "bess": {"enabled": True, "technologies": ["supercap", "lfp_1h"],
             "unit_p_rated_mw": {"supercap": 2.0, "lfp_1h": 1.0},
             "unit_e_rated_mwh": {"supercap": 0.02, "lfp_1h": 1.0}},
}


def _validate(tmp_path, data, *extra):
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(data))
    rc, text = cli_in_process(["validate", str(f), *extra])
    assert rc in (0, 2) and "Traceback" not in text, text
    return rc, text


def _custom_tech(path: Path, name: str, like: str = "lfp_1h") -> Path:
    text = (REPO / "models" / "storage" / f"{like}.toml").read_text()
    lines = [ln for ln in text.splitlines() if not ln.startswith("name")]
    path.write_text(f'name = "{name}"\n' + "\n".join(lines) + "\n")
    return path


# ------------------------------------------------------------------ duplicate unit names
def test_a_custom_file_named_like_a_bundled_one_is_refused(tmp_path):
    mine = _custom_tech(tmp_path / "my_tech.toml", "supercap")
    data = copy.deepcopy(HYBRID)
    data["bess"] = {"enabled": True, "extendable": True, "technologies": ["supercap", str(mine)]}
    rc, text = _validate(tmp_path, data)
    assert rc == 2
    for part in ("bess.technologies", "'supercap'", "models/storage/supercap.toml", str(mine)):
        assert part in text, (part, text)


def test_two_custom_files_with_one_name_are_refused(tmp_path):
    a = _custom_tech(tmp_path / "a.toml", "fast", like="supercap")
    b = _custom_tech(tmp_path / "b.toml", "fast", like="lfp_2h")
    data = copy.deepcopy(HYBRID)
    data["bess"] = {"enabled": True, "extendable": True, "technologies": [str(a), str(b)],
                    "max_p_rated_mw": 5.0, "max_e_rated_mwh": 5.0}
    rc, text = _validate(tmp_path, data)
    assert rc == 2 and str(a) in text and str(b) in text and "'fast'" in text, text
    # with their own names they are two units
    _custom_tech(b, "slow", like="lfp_2h")
    s = scenario_from_dict(data)
    assert sorted(s.storage_units()) == ["bess.fast", "bess.slow"]


# ------------------------------------------------------------------ ratings that are not numbers
@pytest.mark.parametrize("value, what", [("2.0", "a string"), (True, "a boolean"), (False, "a boolean")])
def test_a_unit_rating_that_is_not_a_number_is_refused_by_key_and_value(tmp_path, value, what):
    data = copy.deepcopy(HYBRID)
    data["bess"]["unit_p_rated_mw"]["supercap"] = value
    rc, text = _validate(tmp_path, data)
    assert rc == 2
    shown = repr(value).replace("True", "true").replace("False", "false")
    assert "bess.unit_p_rated_mw" in text and f"supercap = {shown}" in text and what in text, text
    assert "bess.p_rated_mw [MW] is required" not in text, text


RATINGS = [k for k, f in BessConfig.model_fields.items()
           if (k.endswith(("_mw", "_mwh", "_frac", "_h")) and not k.startswith("unit_"))]


@pytest.mark.parametrize("key", RATINGS)
@pytest.mark.parametrize("value", [True, "1.0"])
def test_every_numeric_storage_key_refuses_booleans_and_strings(key, value):
    data = copy.deepcopy(HYBRID)
    data["bess"] = {"enabled": True, "p_rated_mw": 1.0, "e_rated_mwh": 1.0, key: value}
    with pytest.raises(ScenarioError) as exc:
        scenario_from_dict(data, "s.toml")
    msg = str(exc.value)
    assert f"bess.{key}" in msg and ("boolean" in msg or "string" in msg), msg


def test_a_boolean_is_not_1_mw_anywhere_in_the_schema():
    """Every number-only field of every section refuses ``true`` (it was read as 1.0)."""
    from facility.config.schema_base import _number_only

    checked = 0
    for name, info in Scenario.model_fields.items():
        model = getattr(info.annotation, "model_fields", None)
        if model is None or name in ("spec",):
            continue
        for key, f in model.items():
            if not _number_only(f.annotation):
                continue
            with pytest.raises(ScenarioError, match=rf"{name}\.{key}\b.*boolean"):
                scenario_from_dict({**copy.deepcopy(HYBRID), name: {key: True}}, "s.toml")
            checked += 1
    assert checked > 50


def test_numbers_still_pass():
    s = scenario_from_dict(copy.deepcopy(HYBRID))
    assert s.bess.p_rated_mw == 3.0 and s.bess.unit_p_rated_mw == {"supercap": 2.0, "lfp_1h": 1.0}
    data = copy.deepcopy(HYBRID)
    data["bess"]["unit_p_rated_mw"] = {"supercap": 2, "lfp_1h": 1}     # TOML integers
    assert scenario_from_dict(data).bess.p_rated_mw == 3.0


# ------------------------------------------------------------------ what validate passed and run refused
SAG = {"name": "sag", "seed": 5, "time": {"horizon_s": 4.0, "dt_s": 0.01},
       "jobs": [{"name": "j", "n_gpus": 2000, "gpu": "gb200", "workload": "square", "period_s": 2.0}],
       "ups": {"enabled": True, "technologies": ["supercap", "lfp_1h"],
               "unit_p_rated_mw": {"supercap": 2.0, "lfp_1h": 2.0},
               "unit_e_rated_mwh": {"supercap": 0.02, "lfp_1h": 2.0}},
       "grid_events": [{"start_s": 1.0, "duration_s": 0.2, "depth_pu": 0.7}]}


def test_hybrid_ups_with_grid_events_is_refused_at_validate(tmp_path):
    rc, text = _validate(tmp_path, SAG)
    assert rc == 2 and "ups.technologies" in text and "grid_events" in text, text
    # one UPS technology with the same sag validates and runs
    one = copy.deepcopy(SAG)
    one["ups"] = {"enabled": True, "technology": "lfp_1h", "p_rated_mw": 4.0, "e_rated_mwh": 4.0}
    assert _validate(tmp_path, one)[0] == 0
    f = tmp_path / "s.toml"
    rc, text = cli_in_process(["run", str(f), "--out", str(tmp_path / "o"), "--no-plots", "--no-progress"])
    assert rc == 0, text


MPC = {"name": "mpc", "seed": 1, "time": {"horizon_s": 60.0, "dt_s": 0.1},
       "jobs": [{"name": "j", "n_gpus": 512, "gpu": "h100", "workload": "square", "period_s": 2.0}],
       "rack_storage": {"enabled": True, "p_rated_mw": 1.0, "e_rated_mwh": 0.05},
       "spec": {"window_s": 5.0, "max_window_swing_mw": 0.3, "max_ramp_mw_per_min": 2.0},
       "controller": {"kind": "mpc", "replan_s": 5.0}}


@pytest.mark.parametrize("key, value", [("mpc_dt_s", 0.7), ("mpc_dt_s", 20.0), ("mpc_dt_s", 100.0),
                                        ("mpc_level_dt_s", 3600.0), ("mpc_level_dt_s", 0.35)])
def test_mpc_steps_that_do_not_divide_the_windows_are_refused_at_validate(tmp_path, key, value):
    data = copy.deepcopy(MPC)
    data["controller"][key] = value
    rc, text = _validate(tmp_path, data)
    assert rc == 2 and f"controller.{key} = {value:g} s" in text and "5 s, 60 s" in text, text


def test_mpc_steps_are_checked_where_an_extendable_design_is_verified_under_the_mpc(tmp_path):
    """controller.kind = 'none' with an extendable storage: run and size verify the design under
    the MPC, which refused mpc_dt_s = 20 s after validate had passed it."""
    data = copy.deepcopy(MPC)
    data["controller"] = {"kind": "none", "mpc_dt_s": 20.0}
    data["rack_storage"] = {"enabled": True, "extendable": True, "max_p_rated_mw": 5.0, "max_e_rated_mwh": 1.0}
    rc, text = _validate(tmp_path, data)
    assert rc == 2 and "controller.mpc_dt_s = 20 s" in text and "verify the design under the MPC" in text, text
    data["rack_storage"] = {"enabled": True, "p_rated_mw": 1.0, "e_rated_mwh": 0.05}   # fixed: no MPC runs
    assert _validate(tmp_path, data)[0] == 0


def _grid_case(dt, window_s, ramp, level, mpc_dt, horizon, replan):
    spec = types.SimpleNamespace(max_ramp_up_mw_per_s=1.0 if ramp else None, max_ramp_down_mw_per_s=None,
                                 ramp_window_s=ramp or 1.0, max_window_swing_mw=1.0, window_s=window_s,
                                 max_ramp_mw_per_min=1.0)
    ctrl = types.SimpleNamespace(mpc_dt_s=mpc_dt, mpc_level_dt_s=level, horizon_s=horizon, replan_s=replan)
    return ctrl, spec


@settings(max_examples=400, deadline=None, derandomize=True)
@given(dt=st.sampled_from([0.01, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0]),
       window_s=st.sampled_from([1.0, 2.0, 5.0, 10.0, 30.0, 60.0]),
       ramp=st.sampled_from([None, 1.0, 2.0, 4.0]),
       level=st.one_of(st.none(), st.sampled_from([0.1, 0.3, 0.5, 1.0, 1.5, 2.5, 5.0, 7.0, 60.0, 3600.0])),
       mpc_dt=st.one_of(st.none(), st.sampled_from([0.1, 0.2, 0.5, 0.7, 1.0, 2.0, 20.0, 100.0])),
       horizon=st.one_of(st.none(), st.sampled_from([30.0, 60.0, 300.0, 600.0])),
       replan=st.sampled_from([1.0, 5.0, 7.0, 30.0]),
       span=st.sampled_from([0.0, 1.0, 50.0]))
def test_a_grid_validate_passes_is_a_grid_the_mpc_takes(dt, window_s, ramp, level, mpc_dt, horizon, replan, span):
    """given_step_problems (what validate reports) is empty exactly where choose_grid (the run)
    takes the given steps, for any horizon and schedule the run may meet; the level step it
    then plans on divides every window."""
    ctrl, spec = _grid_case(dt, window_s, ramp, level, mpc_dt, horizon, replan)
    if horizon is not None and horizon < replan:
        return
    import numpy as np

    schedule = np.array([0.0, span])
    bad = given_step_problems(ctrl, dt, spec)
    try:
        g = choose_grid(ctrl, dt, spec, schedule, 0.05, 2.0)
    except ScenarioError as exc:
        assert bad, f"validate passes, the run refuses: {exc}"
        return
    assert not bad, f"validate refuses ({bad}), the run takes it"
    windows = [w for w in (ramp, window_s, 60.0) if w]
    for w in windows:
        n = w / (g.k_level * g.mpc_dt)
        assert math.isclose(n, round(n), rel_tol=1e-6), (w, g)


def test_a_technology_file_that_changed_is_read_again(tmp_path):
    """A custom technology file is cached by its modification time and size: the name it has
    now is the one checked (a stale cache let a renamed duplicate through)."""
    import os

    from facility.config.technology import load_technology

    f = _custom_tech(tmp_path / "t.toml", "first")
    assert load_technology(str(f)).name == "first"
    _custom_tech(f, "second_name")
    st = os.stat(f)
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert load_technology(str(f)).name == "second_name"
