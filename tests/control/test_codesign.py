"""The paper's co-design: GPU controls take over when storage runs out, and hand back without
new swings."""

import numpy as np
import pytest

from facility.config.schema import Scenario
from facility.control import run_control
from facility.control.codesign import blend_steps, gpu_ramp_mw_per_s, storage_sufficient
from facility.metrics import max_window_swing_mw
from facility.scenario import resolve

from .conftest import check_invariants, make

DT = 0.01


def _plateau(t):
    """60 MW with a 20 s plateau at 100 MW from t = 20 s: drains a small storage once."""
    return np.where((t >= 20.0) & (t < 40.0), 100.0, 60.0)


def _smoothed(load, ramp_s=8.0):
    """GPU-engaged power: the same energy moved with the GPUs' ramps (a slow edge)."""
    n = int(ramp_s / DT)
    k = np.ones(n) / n
    return np.convolve(np.concatenate([np.full(n, load[0]), load]), k, mode="full")[n:n + load.size]


def _run(e_mwh=0.05, t_end=120.0, load_fn=_plateau, **ctrl):
    rack = {"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": e_mwh, "initial_soc_frac": 0.5}
    c = {"kind": "moving_average", "window_s": 10.0, "codesign_hold_s": 2.0}
    c.update(ctrl)
    sc, sto = make(rack_storage=rack, controller=c, spec={"window_s": 5.0, "max_window_swing_mw": 10.0})
    t = np.arange(0, t_end, DT)
    load = load_fn(t)
    alt = _smoothed(load)
    return t, load, alt, sc, sto, run_control(load, DT, sc, sto, p_site_gpu_engaged_mw=alt)


def test_codesign_engages_near_bound_and_releases():
    # the plateau leaves the storage full; the release waits until the SoC recovery has made
    # room for a swing inside the release margins, so it does not engage again right after
    t, load, alt, sc, sto, r = _run(t_end=300.0)
    check_invariants(r, sto, DT)
    eng = [e for e in r.events if e["kind"] == "codesign_engage"]
    rel = [e for e in r.events if e["kind"] == "codesign_release"]
    assert eng and rel and rel[0]["t_s"] > eng[0]["t_s"] > 20.0
    assert len(eng) == 1 and len(rel) == 1
    e0 = eng[0]
    k = int(round(e0["t_s"] / DT))
    # the trigger is the SoC level (low-passed over window_s), within the margin of a bound
    assert "rack_storage" in e0["detail"] and e0["storage"] == "rack_storage"
    assert e0["soc_frac"] <= 0.1 + 0.05 + 1e-9 or r.traces["rack_storage"].saturated[k - 1]
    assert not r.gpu_engaged[k - 1] and r.gpu_engaged[k]
    # hysteresis: held at least codesign_hold_s
    kr = int(round(rel[0]["t_s"] / DT))
    assert (kr - k) * DT >= 2.0 - 1e-9
    assert r.info["n_codesign_engagements"] == len(eng)
    np.testing.assert_allclose(r.p_load_mw, load + r.engaged_weight * (alt - load), atol=1e-9)


def test_blend_rate_comes_from_the_spec():
    t, load, alt, sc, sto, r = _run()
    # half of the 10 MW / 5 s the spec allows: the blend alone moves the drawn load at most
    # 1 MW/s, whatever the difference between the two traces
    dw = np.abs(np.diff(r.engaged_weight))
    d = np.abs(alt - load)[1:]
    assert dw.max() > 0
    assert (dw * d).max() <= 1.0 * DT * (1 + 1e-9)
    w = blend_steps(load, alt, DT, None, 1.0, 1000)
    assert w.shape == load.shape and np.all((w > 0) & (w <= 1))
    np.testing.assert_array_equal(blend_steps(load, alt, DT, 0.0, 1.0, 1000), [1.0])
    np.testing.assert_allclose(blend_steps(load, alt, DT, 2.0, 1.0, 1000), [DT / 2.0])
    np.testing.assert_array_equal(blend_steps(load, alt, DT, None, np.inf, 1000), [1.0])


def test_gpu_ramp_state_is_carried_across_the_switch():
    t, load, alt, sc, sto = _run()[:5]
    ctl = sc.controller.model_copy(update={"codesign_blend_s": 0.0})
    sc = sc.model_copy(update={"controller": ctl})
    # engaged trace with a step the GPUs could not follow: at the switch they ramp
    alt2 = np.full_like(load, 90.0)
    r = run_control(load, DT, sc, sto, p_site_gpu_engaged_mw=alt2, gpu_ramp_mw_per_s=(5.0, 5.0))
    k = int(round([e for e in r.events if e["kind"] == "codesign_engage"][0]["t_s"] / DT))
    d = np.diff(r.p_load_mw[k - 1:k + 300])
    assert np.abs(d).max() <= 5.0 * DT + 1e-9          # ramps from where it was ...
    assert r.p_load_mw[k + 300] == pytest.approx(90.0)   # ... and then follows the trace


def test_storage_that_cannot_carry_the_load_starts_engaged_and_stays():
    sq = lambda t: np.where((t % 2.0) < 1.4, 100.0, 30.0)      # noqa: E731
    *_, sc, sto, r = _run(e_mwh=0.002, t_end=60.0, load_fn=sq)
    assert r.events[0]["kind"] == "codesign_engage" and r.events[0]["t_s"] == 0.0
    assert r.engaged_weight.min() == 1.0
    assert not [e for e in r.events if e["kind"] == "codesign_release"]
    x = sq(np.arange(0, 60, DT))
    pre = np.resize(x[:1000], 2000)                            # warm start: the first window
    # one swing (21 MW above the 79 MW mean for 1.4 s) moves 29.4 MW s = 8.2 kWh: too much
    # for half of 0.8 x 2 kWh, fine for half of 0.8 x 100 kWh; 49 MW of power either way
    assert storage_sufficient(x, DT, 1000, 80.0, 0.8 * 0.002, pre).max() == 0
    assert storage_sufficient(x, DT, 1000, 80.0, 0.8 * 0.1, pre).min() == 1
    assert storage_sufficient(x, DT, 1000, 50.0, 0.8 * 0.1, pre).max() == 0   # 49 > 0.9 * 50


def test_codesign_off_or_without_alternative_never_engages():
    *_, r = _run(codesign=False, e_mwh=0.01)
    assert not r.gpu_engaged.any()
    assert not [e for e in r.events if e["kind"].startswith("codesign")]
    assert r.saturation["rack_storage"] is not None          # storage alone runs out


def test_big_storage_never_needs_gpu_controls():
    *_, r = _run(e_mwh=5.0)
    assert not r.gpu_engaged.any()
    assert r.saturation["rack_storage"] is None


def test_no_new_swing_from_the_switch():
    """Co-design is never worse than storage alone or GPU controls always on."""
    t, load, alt, sc, sto, r = _run()
    alone = run_control(load, DT, sc, sto)
    on = run_control(alt, DT, sc, sto)
    sw = [max_window_swing_mw(x.p_pcc_mw, DT, 5.0) for x in (r, alone, on)]
    assert sw[0] <= max(sw[1], sw[2]) + 1e-9


def test_feeder_power_follows_engagement_and_monitor():
    t, load, alt, sc, sto, r = _run()
    f_plain = np.stack([0.25 * load, 0.75 * load], axis=1)
    f_eng = np.stack([0.25 * alt, 0.75 * alt], axis=1)
    np.testing.assert_allclose(r.feeder_power_mw(f_plain, f_eng).sum(axis=1), r.p_load_mw)


def test_site_gpu_ramp_rates():
    sc = resolve(Scenario(jobs=[{"gpu": "gb200", "n_gpus": 1000}],
                          gpu_smoothing={"enabled": True, "floor_frac": 0.5, "ramp_up_w_per_s": 1000.0,
                                         "ramp_down_w_per_s": 2000.0}))
    up, dn = gpu_ramp_mw_per_s(sc)
    k = 1000 * (1 + sc.site.non_gpu_frac) * sc.site.pue / 1e6
    assert up == pytest.approx(1000 * k) and dn == pytest.approx(2000 * k)
    # firefly switches without a programmed ramp
    sc2 = sc.model_copy(update={"firefly": sc.firefly.model_copy(update={"enabled": True})})
    assert gpu_ramp_mw_per_s(sc2) == (np.inf, np.inf)
