"""The paper's co-design: GPU controls take over when storage nears a SoC bound."""

import numpy as np
import pytest

from facility.control import run_control

from .conftest import check_invariants, make, square

DT = 0.01


def _run(e_mwh=0.01, **ctrl):
    rack = {"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": e_mwh, "initial_soc_frac": 0.5}
    c = {"kind": "moving_average", "window_s": 10.0, "codesign_hold_s": 2.0,
         "codesign_blend_s": 0.5}
    c.update(ctrl)
    sc, sto = make(rack_storage=rack, controller=c)
    t = np.arange(0, 120, DT)
    load = square(t, period_s=20.0, duty=0.5, p_hi=100.0, p_lo=40.0)   # slow swings: energy-bound
    alt = np.full_like(load, 95.0)                                      # GPU smoothing: nearly flat
    return t, load, alt, sto, run_control(load, DT, sc, sto, p_site_gpu_engaged_mw=alt)


def test_codesign_engages_near_bound_and_releases():
    t, load, alt, sto, r = _run()
    check_invariants(r, sto, DT)
    eng = [e for e in r.events if e["kind"] == "codesign_engage"]
    rel = [e for e in r.events if e["kind"] == "codesign_release"]
    assert eng and rel and rel[0]["t_s"] > eng[0]["t_s"]
    e0 = eng[0]
    k = int(round(e0["t_s"] / DT))
    soc_before = r.soc_frac["rack_storage"][k - 1]
    assert soc_before <= 0.1 + 0.05 + 1e-9 or soc_before >= 0.9 - 0.05 - 1e-9 \
        or r.traces["rack_storage"].saturated[k - 1]
    assert "rack_storage" in e0["detail"] and e0["storage"] == "rack_storage"
    # the drawn load moves to the GPU-engaged power within the blend time and back after
    assert not r.gpu_engaged[k - 1] and r.gpu_engaged[k]
    full = k + int(0.5 / DT)
    assert r.engaged_weight[full] == pytest.approx(1.0)
    assert r.p_load_mw[full] == pytest.approx(alt[full])
    # hysteresis: held at least codesign_hold_s, released only with SoC back inside 2 x margin
    kr = int(round(rel[0]["t_s"] / DT))
    assert (kr - k) * DT >= 2.0 - 1e-9
    s = r.soc_frac["rack_storage"][kr - 1]
    assert 0.1 + 0.1 - 1e-9 <= s <= 0.9 - 0.1 + 1e-9
    assert r.info["n_codesign_engagements"] == len(eng)
    np.testing.assert_allclose(r.p_load_mw, load + r.engaged_weight * (alt - load))


def test_codesign_off_or_without_alternative_never_engages():
    *_, r = _run(codesign=False)
    assert not r.gpu_engaged.any()
    assert not [e for e in r.events if e["kind"].startswith("codesign")]
    assert r.saturation["rack_storage"] is not None          # storage alone runs out


def test_big_storage_never_needs_gpu_controls():
    *_, r = _run(e_mwh=5.0)
    assert not r.gpu_engaged.any()
    assert r.saturation["rack_storage"] is None


def test_feeder_power_follows_engagement_and_monitor():
    t, load, alt, sto, r = _run()
    f_plain = np.stack([0.25 * load, 0.75 * load], axis=1)
    f_eng = np.stack([0.25 * alt, 0.75 * alt], axis=1)
    np.testing.assert_allclose(r.feeder_power_mw(f_plain, f_eng).sum(axis=1), r.p_load_mw)
