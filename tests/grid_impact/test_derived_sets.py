"""Mode sets derived from ANDES (the bundled files load without ANDES) and the linear algebra
that derives them (facility.grid_impact.dynamics.linear, numpy only)."""

from __future__ import annotations

import numpy as np
import pytest
from facility.grid_impact import load_mode_set
from facility.grid_impact.dynamics.linear import LinearDae, modal_residues, reduce_dae
from facility.grid_impact.modal import pair_response

DERIVED = ("kundur_two_area", "ieee39", "wecc179")


@pytest.mark.parametrize("name", DERIVED)
def test_a_bundled_derived_set_records_its_source_and_loads_without_andes(name):
    ms = load_mode_set(name)
    rec = ms.record
    assert rec["engine"] == "ANDES" and rec["andes_version"] and rec["case"].endswith(".xlsx")
    assert rec["pcc_bus"] and rec["observed_generator"] and rec["load_model"].startswith("constant power")
    assert ms.rest is not None and ms.row_names[-1] == "rest" and len(ms.modes) >= 1
    for m in ms.modes:
        assert 0.05 <= m.f_hz <= 4.0 and 0 < m.damping_ratio < 0.5
        assert set(m.residues) == {"mw", "hz", "speed"}


@pytest.mark.parametrize("name", DERIVED)
def test_the_rows_state_spaces_are_the_frequency_response(name):
    ms = load_mode_set(name)
    f = np.array([0.05, 0.3, 0.7, 1.1, 2.5])
    rows = ms.frequency_response(f, "mw")
    assert rows.shape == (len(ms.modes) + 1, f.size)
    for i in range(rows.shape[0]):
        a, b, c, d = ms.state_space(i, "mw")
        h = [(c @ np.linalg.solve(2j * np.pi * fk * np.eye(a.shape[0]) - a, b) + d)[0, 0] for fk in f]
        np.testing.assert_allclose(h, rows[i], rtol=1e-9, atol=1e-12)


def test_kundur_reproduces_andes_time_domain_reference():
    """The held-out check: ±50 MW, 0.5 Hz square wave at bus 7 of ANDES's kundur_full; ANDES 2.0's
    time domain gives G1's power FFT bins 13.1 / 3.6 / 2.9 MW at 0.5 / 1.5 / 2.5 Hz (constant-power
    loads; figures measured outside this code, scenarios/studies/andes_kundur_square.py reruns it).
    The set's rows summed over the square wave's harmonics must land within 25 %."""
    ms = load_mode_set("kundur_two_area")
    f = np.array([0.5, 1.5, 2.5])
    h = np.abs(ms.frequency_response(f, "mw").sum(axis=0))
    harmonic_mw = 4 / np.pi * 50 / np.array([1, 3, 5])          # square wave's single-sided amplitudes
    got = h * harmonic_mw
    np.testing.assert_allclose(got, [13.1, 3.6, 2.9], rtol=0.25)
    # the modes alone (no rest) miss most of it: the instantaneous share carries the harmonics
    modal = np.abs(ms.frequency_response(f, "mw")[:-1].sum(axis=0)) * harmonic_mw
    assert modal[2] < 0.5 * got[2]


def test_kundur_g1_takes_a_quarter_of_a_slow_change():
    """Four machines with equal droop: at DC the observed G1 takes about a quarter of the load
    change (governors), and a positive share at once (the instantaneous share D)."""
    ms = load_mode_set("kundur_two_area")
    dc = ms.frequency_response(np.array([1e-4]), "mw").sum()
    assert 0.15 < dc.real < 0.35 and abs(dc.imag) < 0.05
    assert 0 < ms.rest.d["mw"] < 1


def test_pair_response_is_the_two_poles():
    lam, r = complex(-0.3, 4.0), complex(0.2, -0.1)
    f = np.array([0.2, 0.64, 3.0])
    s = 2j * np.pi * f
    np.testing.assert_allclose(pair_response(f, lam, r), r / (s - lam) + np.conj(r) / (s - np.conj(lam)))
    np.testing.assert_allclose(pair_response(f, complex(-2.0, 0.0), complex(3.0, 0.0)), 3.0 / (s + 2.0))


def _dae(fx, fy, gx, gy, tf, bf, bg, cx, cy):
    a = [np.atleast_2d(np.asarray(m, float)) for m in (fx, fy, gx, gy)]
    return LinearDae(*a, np.asarray(tf, float), np.asarray(bf, float).reshape(-1, 1),
                     np.asarray(bg, float).reshape(-1, 1), np.atleast_2d(cx), np.atleast_2d(cy),
                     [f"x{i}" for i in range(len(tf))])


def test_reduce_eliminates_the_algebraic_part_by_hand():
    # 2 ẋ = −x + y;  0 = x − 2y + u  →  y = (x + u)/2,  ẋ = (−x + (x + u)/2)/2 = −x/4 + u/4
    # z = y → C = 1/2, D = 1/2
    st = reduce_dae(_dae([[-1]], [[1]], [[1]], [[-2]], [2.0], [0], [1], [[0]], [[1]]))
    np.testing.assert_allclose([st.a[0, 0], st.b[0, 0], st.c[0, 0], st.d[0, 0]], [-0.25, 0.25, 0.5, 0.5])


def test_a_zero_time_constant_state_is_algebraic():
    # ẋ0 = −x0 + x1, 0·ẋ1 = −x1 + u  →  x1 = u, ẋ0 = −x0 + u (one state left)
    st = reduce_dae(_dae([[-1, 1], [0, -1]], np.zeros((2, 1)), np.zeros((1, 2)), [[1.0]], [1.0, 0.0],
                         [0, 1], [0], [[1, 0]], [[0]]))
    assert st.a.shape == (1, 1)
    np.testing.assert_allclose([st.a[0, 0], st.b[0, 0]], [-1.0, 1.0])


def test_an_empty_algebraic_column_follows_the_time_domain_not_a_spurious_pole():
    # a filter with all time constants zero (state y, algebraic x and v): ẏ = x, 0 = v − y + 0·x,
    # 0 = −v + u. x is in no algebraic equation: ANDES's EIG puts +1 on its diagonal (pole at
    # +1); the default −1e-6 gives y following v = u (pole at −1e6)
    dae = _dae([[0]], [[1, 0]], [[-1], [0]], [[0.0, 1.0], [0.0, -1.0]], [1.0], [0], [0, 1], [[1]], [[0, 0]])
    lam_andes = np.linalg.eigvals(reduce_dae(dae, empty_diag=1.0).a)
    lam = np.linalg.eigvals(reduce_dae(dae).a)
    assert lam_andes[0] == pytest.approx(1.0) and lam[0] == pytest.approx(-1e6)


def test_residues_sum_to_the_transfer_function():
    rng = np.random.default_rng(3)
    n, m = 6, 4
    fx = -np.eye(n) * 2 + 0.3 * rng.standard_normal((n, n))
    dae = _dae(fx, rng.standard_normal((n, m)), rng.standard_normal((m, n)),
               -np.eye(m) * 3 + 0.2 * rng.standard_normal((m, m)), np.full(n, 0.5),
               rng.standard_normal(n), rng.standard_normal(m), rng.standard_normal((2, n)),
               rng.standard_normal((2, m)))
    st = reduce_dae(dae)
    lam, res, part = modal_residues(st)
    f = np.array([0.01, 0.4, 3.0])
    direct = st.frequency_response(f)[:, :, 0]
    summed = st.d[:, 0] + np.array([(res[:, :, 0] / (2j * np.pi * fk - lam)[:, None]).sum(axis=0) for fk in f])
    np.testing.assert_allclose(summed, direct, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(part.sum(axis=0), 1.0)


def test_a_scenario_takes_a_mode_set_file_by_its_path(tmp_path):
    """What `facility grid-modes` writes is usable as grid_impact.mode_set (relative to the
    scenario's folder); a file that is no mode set is a clear error (exit 2)."""
    import shutil

    from facility.scenario import load_scenario
    from facility.errors import ScenarioError
    from facility.grid_impact.library import GRID_IMPACT_DIR
    from facility.grid_impact.metrics import build_model
    from tests.conftest import REPO

    shutil.copy(GRID_IMPACT_DIR / "kundur_two_area.toml", tmp_path / "my_site.toml")
    text = (REPO / "scenarios" / "default.toml").read_text()
    (tmp_path / "s.toml").write_text(text + '\n[grid_impact]\nenabled = true\ngenerator_share_frac = 0.3\n'
                                            'mode_set = "my_site.toml"\n')
    s = load_scenario(tmp_path / "s.toml")
    ms = build_model(s.grid_impact, s.library.shaft, s.library.mode_set).modes
    assert ms.record["case"] == "kundur/kundur_full.xlsx" and len(ms.modes) == 3
    np.testing.assert_allclose(ms.frequency_response(np.array([0.5]), "mw"),
                               load_mode_set("kundur_two_area").frequency_response(np.array([0.5]), "mw"))
    (tmp_path / "bad.toml").write_text("name = 'x'\n")
    with pytest.raises(ScenarioError, match="not a mode set file"):
        load_scenario(tmp_path / "s.toml", ["grid_impact.mode_set=" + str(tmp_path / "bad.toml")])


def test_a_run_with_a_derived_set_reports_the_rest_and_the_whole_swing(tiny_scenario_dict):
    from facility.scenario import scenario_from_dict
    from facility.report.grid_replay import REPLAY_BEGIN
    from facility.report.html import render_report
    from facility.run.orchestrator import run_scenario

    d = dict(tiny_scenario_dict, grid={"enabled": False}, time={"horizon_s": 6.0, "dt_s": 0.01},
             grid_impact={"enabled": True, "generator_share_frac": 0.5, "mode_set": "kundur_two_area"})
    res = run_scenario(scenario_from_dict(d), plots=False)
    gi = res.metrics["grid_impact"]
    names = [m.name for m in load_mode_set("kundur_two_area").modes]
    assert set(gi["modes"]) == set(names) | {"rest", "total"}
    # the limited quantity is over the electromechanical modes, not the rest
    assert gi["mode_bin_peak_mw"] == max(gi["modes"][n]["bin_peak_mw"] for n in names)
    # the whole swing is at most the sum of the rows' peaks and at least the largest of them
    peaks = [gi["modes"][n]["peak_mw"] for n in names + ["rest"]]
    assert max(peaks) * (1 - 1e-9) <= gi["modes"]["total"]["peak_mw"] <= sum(peaks) * (1 + 1e-9)
    html = render_report(res, [])
    assert "<h2>Grid impact</h2>" in html and REPLAY_BEGIN in html and "kundur_two_area" in html
