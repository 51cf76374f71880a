"""Schema, loader, overrides and physics checks: every bad input is a clear ScenarioError."""

from __future__ import annotations

import glob

import pytest

from facility.scenario import load_scenario, scenario_from_dict
from facility.config import checks
from facility.config.load import apply_overrides, dump_scenario_toml, parse_override, read_toml
from facility.errors import NotSupportedError, ScenarioError
from tests.conftest import SCENARIOS, SHARED_EXAMPLES


def all_scenarios():
    return sorted(glob.glob(str(SCENARIOS / "*.toml")))


@pytest.mark.parametrize("path", all_scenarios())
def test_bundled_scenarios_validate(path):
    s = load_scenario(path)
    assert s.schema_version == 1


def test_shared_examples_copied_unchanged():
    if not SHARED_EXAMPLES.is_dir():
        pytest.skip("shared/ not present beside the checkout")
    for src in SHARED_EXAMPLES.glob("*.toml"):
        assert (SCENARIOS / src.name).read_bytes() == src.read_bytes(), src.name


def test_unknown_key_names_it(tiny_scenario_dict):
    d = dict(tiny_scenario_dict, bess={"enabled": True, "p_rated_mw": 1, "e_rated_mwh": 1, "capacity": 3})
    with pytest.raises(ScenarioError, match=r"bess\.capacity: unknown key"):
        scenario_from_dict(d, "x.toml")


@pytest.mark.parametrize("override, pattern", [
    ("jobs.0.n_gpus=-5", r"jobs\.0\.n_gpus = -5: .*unit: GPU; allowed: > 0"),
    ("time.dt_s=0", r"time\.dt_s = 0: .*unit: s; allowed: > 0"),
    ("bess.min_soc_frac=1.5", r"bess\.min_soc_frac = 1\.5: .*unit: frac; allowed: ≥ 0 and ≤ 1"),
    ("spec.max_window_swing_mw=-1", r"spec\.max_window_swing_mw = -1: .*unit: MW"),
    ("jobs.0.workload='sine'", r"jobs\.0\.workload = 'sine'"),
    ("jobs.0.gpu='a100'", r"jobs\.0\.gpu = 'a100': unknown GPU model; available: b200, gb200, h100"),
    ("spec.base='nowhere'", r"unknown utility spec; available: .*ieso_2026"),
    ("gpu_smoothing.ramp_up_w_per_s=-3", r"gpu_smoothing\.ramp_up_w_per_s = -3: .*W/s per GPU"),
])
def test_bad_values_name_key_unit_range(tiny_scenario_dict, override, pattern):
    d = apply_overrides(tiny_scenario_dict, [override])
    with pytest.raises(ScenarioError, match=pattern):
        scenario_from_dict(d, "x.toml")


def test_physics_checks(tiny_scenario_dict):
    cases = [
        (["jobs.0.stop_s=-1"], r"stop_s = -1 s must be greater than jobs\.0\.start_s"),
        (["bess.enabled=true"], r"bess\.p_rated_mw \[MW\] is required"),
        (["bess.enabled=true", "bess.p_rated_mw=1", "bess.e_rated_mwh=1", "bess.min_soc_frac=0.9",
          "bess.max_soc_frac=0.2"], r"min_soc_frac = 0\.9 must be below"),
        (["bess.enabled=true", "bess.extendable=true"], r"bess\.max_p_rated_mw \[MW\] is required"),
        (["spec.max_band_energy_frac=0.2", "time.dt_s=0.1"], r"cannot resolve spec\.band_max_hz = 20 Hz"),
        (["gpu_smoothing.enabled=true", "gpu_smoothing.floor_frac=0.95"],
         r"floor_frac = 0\.95 \[frac of TDP\] is outside the programmable range of gb200 .*0\.2 ≤ floor_frac ≤ 0\.9"),
        (["firefly.enabled=true", "firefly.trigger_frac=0.7", "firefly.target_frac=0.5"],
         r"firefly\.target_frac = 0\.5 must be at least firefly\.trigger_frac"),
        (["controller.kind='moving_average'"], r"needs at least one enabled storage"),
        (["jobs.0.workload='trace'"], r"trace_file is required"),
        (["grid.trafo_sn_mva=0.5"], r"cannot carry the peak site load"),
        (["jobs.0.checkpoint_every_s=10", "jobs.0.checkpoint_s=20"], r"checkpoint_s = 20 s must be shorter"),
    ]
    for overrides, pattern in cases:
        with pytest.raises(ScenarioError, match=pattern):
            scenario_from_dict(apply_overrides(tiny_scenario_dict, overrides), "x.toml")


def test_overrides_by_index_and_name(tiny_scenario_dict):
    d = apply_overrides(tiny_scenario_dict, ["jobs.pretrain.n_gpus=64", "jobs.0.period_s=3.5", "bess.e_rated_mwh=20"])
    assert d["jobs"][0]["n_gpus"] == 64
    assert d["jobs"][0]["period_s"] == 3.5
    assert d["bess"]["e_rated_mwh"] == 20
    assert tiny_scenario_dict["jobs"][0]["n_gpus"] == 1000  # the original is untouched
    with pytest.raises(ScenarioError, match="no entry named 'nope'"):
        apply_overrides(tiny_scenario_dict, ["jobs.nope.n_gpus=1"])
    with pytest.raises(ScenarioError, match="expected KEY=VALUE"):
        parse_override("jobs.0.n_gpus")
    assert parse_override("spec=ieso_2026") == (["spec"], "ieso_2026")


def test_named_spec_and_override(tiny_scenario_dict):
    d = dict(tiny_scenario_dict)
    d["spec"] = "caiso_2026_straw"
    s = scenario_from_dict(d, "x.toml")
    assert s.spec.max_ramp_mw_per_min == 20.0
    d = apply_overrides(d, ["spec.max_ramp_mw_per_min=15"])
    s = scenario_from_dict(d, "x.toml")
    assert s.spec.max_ramp_mw_per_min == 15.0 and s.spec.base == "caiso_2026_straw"


def test_library_specs_load(tiny_scenario_dict):
    from facility.config import list_specs

    names = list_specs()
    assert {"paper_example", "ercot_2026_proposal", "ieso_2026", "caiso_2026_straw", "lipa"} <= set(names)
    for name in names:
        d = dict(tiny_scenario_dict, spec={"base": name}, time={"horizon_s": 20.0, "dt_s": 0.005})
        s = scenario_from_dict(d, "x.toml")
        assert s.spec.base == name
    lipa = scenario_from_dict(dict(tiny_scenario_dict, spec="lipa", time={"horizon_s": 20.0, "dt_s": 0.005}), "x")
    assert [(b.min_hz, b.max_hz, b.max_peak_mw) for b in lipa.spec.bands] == [(0.1, 5.0, 10.0), (5.0, 55.0, 3.5)]


def test_not_toml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("name = [unclosed")
    with pytest.raises(ScenarioError, match="not valid TOML"):
        read_toml(bad)
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "nope.toml")


def test_trace_path_resolves_against_scenario(tmp_path, tiny_scenario_dict):
    import tomli_w

    (tmp_path / "trace.csv").write_text("t_s,p_gpu_w\n0,100\n1,200\n")
    d = apply_overrides(tiny_scenario_dict, ["jobs.0.workload='trace'", "jobs.0.trace_file='trace.csv'"])
    f = tmp_path / "s.toml"
    f.write_text(tomli_w.dumps(d))
    s = load_scenario(f)
    assert s.jobs[0].trace_file == str(tmp_path / "trace.csv")


def test_not_supported_sections_fail_clearly(tiny_scenario_dict, monkeypatch):
    monkeypatch.setitem(checks.NOT_SUPPORTED, "[monitor]", lambda s: s.monitor.enabled)
    d = apply_overrides(tiny_scenario_dict, ["monitor.enabled=true"])
    with pytest.raises(NotSupportedError, match=r"not supported yet: \[monitor\]"):
        scenario_from_dict(d, "x.toml")


def test_resolved_toml_round_trips(tmp_path):
    s = load_scenario(SCENARIOS / "combined_multi_job.toml")
    f = tmp_path / "r.toml"
    f.write_text(dump_scenario_toml(s))
    assert load_scenario(f) == s


def test_a_floor_lever_on_a_gpu_without_smoothing_is_reported(tiny_scenario_dict, caplog):
    """optimize.levers naming 'floor' for a job whose GPU has no programmable power floor
    (H100) is said, naming the job and the GPU; a GPU with one (GB200) is not reported."""
    import logging

    opt = {"annualize": True, "levers": ["storage", "floor", "burn"]}
    with caplog.at_level(logging.WARNING):
        scenario_from_dict(dict(tiny_scenario_dict, optimize=opt), "x.toml")
    assert not [r for r in caplog.records if "programmable power floor" in r.getMessage()]
    jobs = [dict(tiny_scenario_dict["jobs"][0], gpu="h100")]
    with caplog.at_level(logging.WARNING):
        scenario_from_dict(dict(tiny_scenario_dict, optimize=opt, jobs=jobs), "x.toml")
    said = [r.getMessage() for r in caplog.records if "programmable power floor" in r.getMessage()]
    assert len(said) == 1 and "jobs.0.gpu = 'h100'" in said[0] and "'pretrain'" in said[0]


def test_a_set_typo_is_blamed_on_the_override_not_the_file():
    with pytest.raises(ScenarioError) as info:
        load_scenario(SCENARIOS / "default.toml", ["jobs.0.n_gpu=8000"])
    msg = str(info.value)
    assert msg.startswith("--set 'jobs.0.n_gpu=8000' (on ") and "jobs.0.n_gpu: unknown key" in msg
    # a job addressed by name is reported at its index, still blamed on the item
    with pytest.raises(ScenarioError, match=r"^--set 'jobs\.pretrain\.n_gpus=-5' .*jobs\.0\.n_gpus = -5"):
        load_scenario(SCENARIOS / "default.toml", ["jobs.pretrain.n_gpus=-5"])
    # an error the file itself holds still names the file
    with pytest.raises(ScenarioError) as info:
        load_scenario(SCENARIOS / "default.toml", ["time.dt_s=0.02", "jobs.0.n_gpus=-1"])
    assert "--set 'jobs.0.n_gpus=-1'" in str(info.value) and "time.dt_s=0.02" not in str(info.value)


def test_duplicate_job_names_name_the_jobs(tiny_scenario_dict):
    d = dict(tiny_scenario_dict)
    d["jobs"] = [dict(d["jobs"][0], name="llm"), dict(d["jobs"][0], name="llm")]
    with pytest.raises(ScenarioError) as info:
        scenario_from_dict(d, source="s.toml")
    msg = str(info.value)
    assert "(top level)" not in msg
    assert "s.toml: jobs: Value error, jobs.1.name = 'llm' repeats jobs.0.name" in msg
