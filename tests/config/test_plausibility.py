"""Plausibility warnings (issue 40): numbers that pass the schema but cannot be what was meant
warn at validate and in a run's events; plausible scenarios stay silent."""

from __future__ import annotations

import pytest

from facility.cli import main
from facility.config import load_scenario
from facility.config.plausibility import estimate_peak_site_mw
from facility.config.plausibility import plausibility_warnings

DEFAULT = "scenarios/default.toml"




def test_bundled_default_is_plausible():
    assert plausibility_warnings(load_scenario(DEFAULT)) == []


@pytest.mark.parametrize("override, match", [
    ("rack_storage.p_rated_mw=30000", "rack_storage.p_rated_mw = 30000 MW is 801 x the site's peak estimate"),
    ("spec.max_window_swing_mw=10000", "spec.max_window_swing_mw = 10000 MW is above anything the raw load can reach"),
    ("spec.max_ramp_up_mw_per_s=500", "spec.max_ramp_up_mw_per_s = 500 MW/s is above anything"),
])
def test_implausible_numbers_warn_at_validate(capsys, override, match):
    assert main(["validate", DEFAULT, "--set", override]) == 0
    err = capsys.readouterr().err
    assert match in err


def test_kw_given_as_mw_gets_the_hint():
    s = load_scenario(DEFAULT)
    peak = estimate_peak_site_mw(s)
    assert 30 < peak < 45          # 20,000 H100 at TDP, non-GPU load and PUE: the figure the messages use
    st = s.model_copy(update={"rack_storage": s.rack_storage.model_copy(update={"p_rated_mw": 30000.0})})
    (w,) = plausibility_warnings(st)
    assert "kW given as MW? 30000 kW would be 30 MW" in w
    # far above the site but not a kW figure either (500 MW is no plausible limit here): no hint
    st = s.model_copy(update={"spec": s.spec.model_copy(update={"max_window_swing_mw": 500_000.0})})
    (w,) = plausibility_warnings(st)
    assert "never binds" in w and "kW given" not in w


def test_a_limit_just_within_reach_does_not_warn():
    s = load_scenario(DEFAULT)
    peak = estimate_peak_site_mw(s)
    ok = s.model_copy(update={"spec": s.spec.model_copy(update={"max_window_swing_mw": peak})})
    assert plausibility_warnings(ok) == []


def test_run_lists_them_in_events(tmp_path):
    from facility.simulate import run_scenario

    s = load_scenario(DEFAULT)
    s = s.model_copy(update={"spec": s.spec.model_copy(update={"max_window_swing_mw": 10000.0}),
                             "time": s.time.model_copy(update={"horizon_s": 4.0, "dt_s": 0.05})})
    res = run_scenario(s, out_dir=None, plots=False)
    assert any("spec.max_window_swing_mw = 10000 MW" in e["detail"] for e in res.events if e["kind"] == "warning")
