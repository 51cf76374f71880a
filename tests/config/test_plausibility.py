"""Plausibility warnings (issue 40): numbers that pass the schema but cannot be what was meant
warn at validate and in a run's events; plausible scenarios stay silent."""

from __future__ import annotations

import pytest

from facility.cli import main
from facility.scenario import load_scenario
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
    # (a rating implausible by ~1000x needs --allow-implausible to get this far)
    assert main(["validate", DEFAULT, "--set", override, "--allow-implausible"]) == 0
    err = capsys.readouterr().err
    assert match in err


@pytest.mark.parametrize("override, key, unit, rng", [
    ("rack_storage.p_rated_mw=30000", "rack_storage.p_rated_mw = 30000 MW", "MW", "between 0 and 187.2 MW"),
    ("rack_storage.e_rated_mwh=20000", "rack_storage.e_rated_mwh = 20000 MWh", "MWh", "between 0 and 1797 MWh"),
])
def test_a_rating_implausible_by_1000x_is_an_error_unless_allowed(capsys, override, key, unit, rng):
    """A kW figure in a MW field (30000 "MW" of rack storage on a 37 MW site): exit 2 naming the
    key, its unit and the plausible range; --allow-implausible runs it as given (a warning)."""
    assert main(["validate", DEFAULT, "--set", override]) == 2
    err = capsys.readouterr().err
    assert key in err and rng in err and f"kW given as {unit}?" in err and "--allow-implausible" in err
    assert main(["validate", DEFAULT, "--set", override, "--allow-implausible"]) == 0
    assert key in capsys.readouterr().err          # still said, as a warning


def test_implausible_only_far_past_the_warning():
    from facility.config.plausibility import IMPLAUSIBLE_FACTOR, STORAGE_FACTOR, implausible_errors

    s = load_scenario(DEFAULT)
    peak = estimate_peak_site_mw(s)
    for p, n_err, n_warn in ((STORAGE_FACTOR * peak * 1.1, 0, 1), (IMPLAUSIBLE_FACTOR * peak * 0.99, 0, 1),
                             (IMPLAUSIBLE_FACTOR * peak * 1.01, 1, 1)):
        st = s.model_copy(update={"rack_storage": s.rack_storage.model_copy(update={"p_rated_mw": p})})
        assert len(implausible_errors(st)) == n_err and len(plausibility_warnings(st)) == n_warn, p


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
    from facility.run.orchestrator import run_scenario

    s = load_scenario(DEFAULT)
    s = s.model_copy(update={"spec": s.spec.model_copy(update={"max_window_swing_mw": 10000.0}),
                             "time": s.time.model_copy(update={"horizon_s": 4.0, "dt_s": 0.05})})
    res = run_scenario(s, out_dir=None, plots=False)
    assert any("spec.max_window_swing_mw = 10000 MW" in e["detail"] for e in res.events if e["kind"] == "warning")
