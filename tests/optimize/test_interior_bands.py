"""Band peak limits in the interior strategy: rows of the restriction in its PCC columns,
a bound that stays a bound, plans that meet every bin as facility.metrics measures it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from facility import metrics
from facility.config.schema import SpecBand
from facility.optimize.certificates import bracket_jobs
from facility.optimize.strategies import interior
from facility.optimize.strategies.full import solve_full
from facility.optimize.strategies.interior import InteriorStats, solve_interior
from facility.optimize.model.pcc_grid import build_grid_model
from facility.optimize.model.spectral import grouped_phasor
from facility.optimize.certificates.verify import verify_plan

from tests.optimize.test_interior import DT, SPEC, problem, site_load

#: the band of the checks: 0.1-1.5 Hz (the iterations' fundamental, 0.25 Hz, and harmonics)
F_LO, F_HI = 0.1, 1.5


def _band_spec(frac: float, load: np.ndarray):
    """SPEC's window limits plus a band peak limit at ``frac`` of the raw load's peak."""
    a = frac * metrics.band_peak_mw(load, DT, F_LO, F_HI)
    return SPEC.model_copy(update={"band_min_hz": F_LO, "band_max_hz": F_HI,
                                   "max_band_peak_mw": a}), a


def _quiet(f, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **kw)


@pytest.fixture(scope="module")
def load():
    return site_load("stochastic", horizon_s=180.0)


def test_grouped_phasor_is_the_dft_of_the_held_series():
    rng = np.random.default_rng(3)
    T, g = 101, 4                              # the last group is cut at T
    q = rng.normal(size=-(-T // g))
    x = np.fft.rfft(np.repeat(q, g)[:T])
    ph = grouped_phasor(T, g)
    for k in (1, 7, 25, 50):
        assert abs(ph(k) @ q - x[k]) < 1e-9 * np.abs(x).max()
    assert np.allclose(grouped_phasor(T, 1)(5), np.exp(-2j * np.pi * 5 * np.arange(T) / T))


def test_band_rows_bracket_the_full_lp_and_bind(load):
    """Two band limits (40 % and 20 % of the raw peak): the interior bracket holds the full
    LP's optimum (lazy band rows, HiGHS), every bin of the plan is within its limit, and the
    storage grows as the limit tightens."""
    sizes = []
    for frac in (0.4, 0.2):
        spec, a = _band_spec(frac, load)
        pb = problem(load, spec=spec)
        st = InteriorStats()
        res = _quiet(solve_interior, pb, min_steps=0, in_process=True, stats=st)
        full = _quiet(solve_full, pb)
        i, opt = res.info, full.info.relaxed_objective_usd
        assert i.method == "interior" and i.n_spectral_bins > 0
        assert i.lower_bound_usd <= opt * (1 + 1e-7)
        assert opt * (1 - 1e-7) <= i.objective_usd <= full.info.objective_usd * (1 + max(i.gap_frac, 1e-6))
        assert i.lower_bound_usd >= 0.5 * i.objective_usd     # a real bound, not the rating floor
        assert metrics.band_peak_mw(res.p_pcc_mw, DT, F_LO, F_HI) <= a + 1e-6
        assert metrics.band_peak_mw(load, DT, F_LO, F_HI) > a
        plan = {n: (res.p_rated_mw_opt[n], res.e_rated_mwh_opt[n], res.p_charge_mw[n],
                    res.p_discharge_mw[n], res.soc_frac[n] * res.e_rated_mwh_opt[n])
                for n in res.p_rated_mw_opt}
        assert verify_plan(load, DT, pb.storages, spec, plan, pb.margin_frac) is None
        sizes.append(res.p_rated_mw_opt["bess"])
    assert sizes[0] < sizes[1]


def test_on_groups_the_bound_leaves_the_band_rows_out(load, monkeypatch):
    """Groups of 3 steps: the restriction holds the PCC over them and carries the band rows in
    its group columns (the plan meets every bin); the relaxation averages over them without
    the band rows, and stays below the full LP's optimum."""
    spec, a = _band_spec(0.3, load)
    spec = spec.model_copy(update={"bands": [SpecBand(name="fundamental", min_hz=0.2,
                                                      max_hz=0.3, max_peak_mw=0.8 * a)]})
    pb = problem(load, spec=spec)
    monkeypatch.setattr(interior, "group_for", lambda _pb: 3)
    st = InteriorStats()
    res = _quiet(solve_interior, pb, min_steps=0, in_process=True, stats=st)
    full = _quiet(solve_full, pb)
    i = res.info
    assert st.solves[0]["g"] == 3 and i.n_spectral_bins > 0
    assert i.lower_bound_usd <= full.info.relaxed_objective_usd * (1 + 1e-7)
    assert i.objective_usd >= full.info.relaxed_objective_usd * (1 - 1e-7)
    assert metrics.band_peak_mw(res.p_pcc_mw, DT, F_LO, F_HI) <= a + 1e-6
    assert metrics.band_peak_mw(res.p_pcc_mw, DT, 0.2, 0.3) <= 0.8 * a + 1e-6
    if i.gap_frac > pb.optimize.max_gap_frac:
        assert i.gap_reason in ("spectral", "groups", "complementarity")


def test_the_relaxation_carries_band_rows_only_at_g_1(load):
    spec, _ = _band_spec(0.3, load)
    pb = problem(load, spec=spec)
    dirs = {int(round(0.25 * load.size * DT)): [0, 64, 128, 192]}
    assert build_grid_model(pb, 1, "relax", dirs).spectral is not None
    assert build_grid_model(pb, 2, "relax", dirs).spectral is None
    r = build_grid_model(pb, 2, "restrict", dirs)
    assert r.spectral is not None and set(r.spectral.cuts) == set(dirs)


def test_a_restriction_on_groups_proves_no_bound(load):
    """On groups the restriction is another LP; its duals bound its own optimum, which lies
    above the full LP's (the bug this guards against reported ERCOT's 5 ms sizing with the
    restriction's own gap)."""
    pb = problem(load)
    assert "bound" not in bracket_jobs.solve_job(pb, "restrict", 3, None, False)
    assert "bound" in bracket_jobs.solve_job(pb, "restrict", 1, None, True)


def test_a_binding_band_limit_on_groups_is_named(load, monkeypatch):
    """Loose ramps and a band limit that binds: on groups of 3 the averaged bound has no band
    rows, the bracket stays wide, and the reason says so ("spectral"; a band limit that does
    not bind the plan leaves "groups")."""
    from facility.config.schema import SpecConfig

    raw = metrics.band_peak_mw(load, DT, F_LO, F_HI)
    spec = SpecConfig(max_ramp_up_mw_per_s=10.0, max_ramp_down_mw_per_s=10.0, ramp_window_s=1.0,
                      band_min_hz=F_LO, band_max_hz=F_HI, max_band_peak_mw=0.3 * raw)
    pb = problem(load, spec=spec)
    monkeypatch.setattr(interior, "group_for", lambda _pb: 3)
    res = _quiet(solve_interior, pb, min_steps=0, in_process=True)
    full = _quiet(solve_full, pb).info.relaxed_objective_usd
    assert res.info.gap_reason == "spectral" and res.info.gap_frac > pb.optimize.max_gap_frac
    assert res.info.lower_bound_usd <= full * (1 + 1e-7) <= res.info.objective_usd * (1 + 2e-7)
    assert metrics.band_peak_mw(res.p_pcc_mw, DT, F_LO, F_HI) <= 0.3 * raw + 1e-6
