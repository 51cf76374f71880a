"""controller.kind = "ramp_limit": the BESS ramp-rate control of PV and wind plants (a
rate-limited grid set-point toward the load's level, SoC recovery toward a band)."""

import numpy as np
import pytest

from facility.control import run_control

from .conftest import check_invariants, make, square

DT = 0.05
STORE = {"enabled": True, "p_rated_mw": 200.0, "e_rated_mwh": 5.0, "eff_charge_frac": 1.0,
         "eff_discharge_frac": 1.0}


def _step(t, at_s=10.0, before=100.0, after=60.0):
    return np.where(t < at_s, before, after)


def test_step_is_ramped_at_the_set_rate():
    """A 40 MW drop, level = the load (short low-pass), 2 MW/s: the PCC falls by 2 MW/s x dt per
    step for 40 / 2 = 20 s, the storage charging the rest: E = 40^2 / (2 x 2) MJ = 400 MJ."""
    t = np.arange(0, 60, DT)
    sc, sto = make(rack_storage=STORE, controller={"kind": "ramp_limit", "max_ramp_mw_per_s": 2.0,
                                                    "window_s": 1e-3, "soc_band_frac": 0.5})
    r = run_control(_step(t), DT, sc, sto)
    check_invariants(r, sto, DT)
    d = np.diff(r.p_pcc_mw)
    assert d.min() == pytest.approx(-2.0 * DT, rel=1e-9) and d.max() <= 1e-9
    ramp = np.flatnonzero(d < -1e-9)
    assert (ramp[-1] - ramp[0] + 1) * DT == pytest.approx(20.0, abs=DT)
    e_mwh = (r.soc_frac["rack_storage"][-1] - 0.5) * 5.0
    assert e_mwh == pytest.approx(40.0 ** 2 / (2 * 2.0) / 3600.0, rel=0.01)


def test_default_rate_comes_from_the_spec():
    """10 MW / 5 s, guard margin 0.1: the set-point moves at most 0.9 x 10 / 5 = 1.8 MW/s, so
    the step stays within 9 MW in any 5 s without the guard."""
    t = np.arange(0, 60, DT)
    sc, sto = make(rack_storage=STORE, spec={"window_s": 5.0, "max_window_swing_mw": 10.0},
                   controller={"kind": "ramp_limit", "guard": False, "window_s": 1e-3})
    r = run_control(_step(t), DT, sc, sto)
    assert -np.diff(r.p_pcc_mw).max() <= 1e-9 and np.diff(r.p_pcc_mw).min() == pytest.approx(-1.8 * DT)
    from facility import metrics as fm
    assert fm.max_window_swing_mw(r.p_pcc_mw, DT, 5.0) == pytest.approx(9.0, rel=1e-6)


@pytest.mark.parametrize("soc0,expect", [(0.8, 0.55), (0.2, 0.45), (0.52, 0.52)])
def test_soc_recovers_to_the_band_edge_and_rests_inside(soc0, expect):
    """Outside the band (target 0.5 ± 0.05) the SoC returns to its nearer edge with time
    constant soc_recovery_s; inside it the controller leaves the SoC alone (lossless store)."""
    t = np.arange(0, 400, DT)
    sc, sto = make(rack_storage=dict(STORE, initial_soc_frac=soc0),
                   controller={"kind": "ramp_limit", "soc_target_frac": 0.5, "soc_band_frac": 0.05,
                               "soc_recovery_s": 30.0, "max_ramp_mw_per_s": 5.0})
    r = run_control(np.full(t.size, 80.0), DT, sc, sto)
    check_invariants(r, sto, DT)
    assert r.soc_frac["rack_storage"][-1] == pytest.approx(expect, abs=2e-3)
    # recovery pulls the grid, never faster than the set rate
    assert np.abs(np.diff(r.p_pcc_mw)).max() <= 5.0 * DT + 1e-9


def test_hybrid_fast_unit_takes_the_residual():
    """Rack storage (fast) and a lagging BESS: the BESS takes the slow set-point − level part,
    the rack storage the iteration ripple; the PCC is the rate-limited set-point."""
    rack = {"enabled": True, "p_rated_mw": 150.0, "e_rated_mwh": 0.5}
    bess = {"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": 10.0, "response_s": 0.5}
    t = np.arange(0, 120, DT)
    load = square(t, 2.0, 0.7, 30.0, -30.0) + _step(t, 30.0, 150.0, 100.0)
    sc, sto = make(rack_storage=rack, bess=bess,
                   controller={"kind": "ramp_limit", "max_ramp_mw_per_s": 1.0, "window_s": 5.0})
    r = run_control(load, DT, sc, sto)
    check_invariants(r, sto, DT)
    sel = t >= 40
    f = np.fft.rfftfreq(sel.sum(), DT)

    def amp(x):
        a = 2 * np.abs(np.fft.rfft(x[sel] - x[sel].mean())) / sel.sum()
        return a[np.argmin(np.abs(f - 0.5))]

    assert amp(r.p_storage_mw["rack_storage"]) > 10 * amp(r.p_storage_mw["bess"])
    # the step: the BESS carries most of the ramp's energy (its slow part)
    i = (t >= 31) & (t < 60)
    assert r.p_storage_mw["bess"][i].mean() > 5.0
    assert np.abs(np.diff(r.p_pcc_mw)).max() <= 1.0 * DT + 1e-6
