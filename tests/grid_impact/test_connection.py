"""The shaft connected to the grid: the FBM's torsional modes with the connection, the single
machine's swing frequency, a step that no longer drifts, the torsional band / quasi-static split,
where the default scenario's largest shaft-torque bin sits, and the connection's sources."""

from pathlib import Path

import numpy as np
import pytest
from scipy import signal

from facility.config.grid_impact import GridImpactConfig
from facility.errors import ScenarioError
from facility.grid_impact import (build_model, grid_impact_metrics, load_mode_set, load_section_models, load_shaft,
                                  smib_mode)
from facility.grid_impact.connection import DEFAULT_SWING_DAMPING_RATIO, connect_shaft, connection_params
from facility.grid_impact.library import _read
from facility.grid_impact.metrics import bin_caps_mw, bin_metrics, section_torque
from facility.grid_impact.shaft import ShaftModel

W0 = 2 * np.pi * 60.0
FBM_PUBLISHED_HZ = [15.71, 20.21, 25.55, 32.28, 47.46]


def _fbm_connected(ks=1.5, d=None, **kw):
    s = load_shaft("ieee_fbm")
    if d is None:
        h = s.h_s.sum()
        d = 0.05 * 4 * h * np.sqrt(ks * W0 / (2 * h))
    return s.connect(ks, d, **kw)


def test_fbm_data_are_the_published_figures():
    d = _read("ieee_fbm")
    assert d["k_pu_per_rad"][-1] == 2.822                      # K(GEN-EXC) as published
    assert d["published_modes_hz"] == FBM_PUBLISHED_HZ


def test_fbm_torsional_modes_with_the_grid_connection_against_the_published():
    """Connected (K_sync = 1.5 pu/rad) the five torsional modes stay within 1 % of the FBM's
    published ones; the connection stiffens the shaft, so each mode rises, and (a rank-one
    stiffness added) no higher than the next mode of the shaft alone (interlacing)."""
    alone = load_shaft("ieee_fbm").torsional_modes_hz()
    conn = _fbm_connected().torsional_modes_hz()
    np.testing.assert_allclose(alone, FBM_PUBLISHED_HZ, rtol=5e-4)
    np.testing.assert_allclose(conn, FBM_PUBLISHED_HZ, rtol=0.01)
    assert np.all(conn > alone)
    assert np.all(conn[:-1] <= alone[1:])
    # stronger connection, higher mode 1
    assert _fbm_connected(3.0).torsional_modes_hz()[0] > conn[0]


def test_single_machine_swing_frequency_by_hand():
    """Two masses on a stiff section behave as one machine of H = H1 + H2 on an infinite bus:
    f = sqrt(Ks ω0 / (2H)) / 2π and ζ = D / (4 H ω_n), as facility.grid_impact.modal.smib_mode."""
    h1, h2, ks, d = 1.0, 3.0, 1.5, 4.0
    s = ShaftModel(("T", "G"), np.array([h1, h2]), np.array([1e5]), np.zeros(2), 0.01, 1, 60.0, 500.0)
    c = s.connect(ks, d)
    wn = np.sqrt(ks * W0 / (2 * (h1 + h2)))
    assert c.electromechanical_mode_hz() == pytest.approx(wn / (2 * np.pi), rel=1e-4)
    assert c.electromechanical_damping_ratio() == pytest.approx(d / (4 * (h1 + h2) * wn), rel=1e-3)
    m = smib_mode(h1 + h2, 500.0, ks, d, 0.5)
    assert c.electromechanical_mode_hz() == pytest.approx(m.f_hz, rel=1e-4)
    # the FBM itself: its sections are stiff against 1.5 pu/rad, within 1 % of the rigid formula
    fbm = _fbm_connected()
    h = fbm.h_s.sum()
    assert fbm.electromechanical_mode_hz() == pytest.approx(np.sqrt(1.5 * W0 / (2 * h)) / (2 * np.pi), rel=0.01)
    assert fbm.electromechanical_damping_ratio() == pytest.approx(DEFAULT_SWING_DAMPING_RATIO, rel=0.05)


@pytest.mark.parametrize("governor", [None, 0.05])
def test_a_step_no_longer_drifts(governor):
    """A 0.01 pu step of electrical torque: connected, every section torque stays bounded and
    returns to zero, the speed to zero and the rotor angle to −ΔT/K_sync (the connection carries
    the step); floating, the speed falls without end and the sections keep the inertia split."""
    dt, t_end, step = 0.002, 40.0, 0.01
    t = np.arange(0, t_end, dt)
    u = np.full(t.size, step)
    free = load_shaft("ieee_fbm", damping_ratio=0.05)           # torsional ringing decays in ~1 s
    conn = free.connect(1.5, 5.7, governor)
    a, b, c, d = conn.state_space()
    _, y, x = signal.lsim((a, b, c, d), u, t)
    n = conn.n_masses
    tail = t > t_end - 5.0
    assert np.abs(y).max() < 5 * step                          # bounded
    assert np.abs(y[tail]).max() < 1e-3 * step                 # back to zero
    assert np.abs(x[tail, :n]).max() < 1e-6                    # speeds back to zero
    assert x[-1, 2 * n - 1] == pytest.approx(-step / 1.5, rel=1e-3)
    assert conn.static_gain() == pytest.approx(np.zeros(n - 1), abs=1e-12)
    # floating: Δω_gen grows linearly, −ΔT t / (2 H_total), and the LPB-GEN section carries 0.688 ΔT
    a, b, c, d = free.state_space()
    _, y, x = signal.lsim((a, b, c, d), u, t)
    assert x[-1, free.generator] == pytest.approx(-step * t[-1] / (2 * free.h_s.sum()), rel=0.01)
    np.testing.assert_allclose(y[-1], step * free.static_gain(), rtol=1e-3)


def test_frequency_response_of_the_connected_shaft_matches_its_state_space():
    shaft = _fbm_connected(governor_droop_frac=0.05)
    a, b, c, _ = shaft.state_space()
    f = np.array([0.01, 0.3, 1.5, 3.0, 15.8, 20.2, 32.3, 47.5])
    h = shaft.frequency_response(f)
    for i, fi in enumerate(f):
        ref = c @ np.linalg.solve(2j * np.pi * fi * np.eye(a.shape[0]) - a, b)
        np.testing.assert_allclose(h[:, i], ref[:, 0], rtol=1e-7, atol=1e-12)
    groups = shaft.frequency_response(f, modes=True)
    assert groups.shape == (6, 5, f.size)
    np.testing.assert_allclose(groups.sum(axis=0), h, rtol=1e-10, atol=1e-14)
    # the electromechanical group dominates at 1.5 Hz, torsional mode 1 at its resonance
    assert np.argmax(np.abs(groups[:, :, 2]).max(axis=1)) == 0
    assert np.argmax(np.abs(groups[:, :, 4]).max(axis=1)) == 1


def _model(**kw):
    cfg = GridImpactConfig(enabled=True, generator_share_frac=0.3, mech_damping_ratio=0.01, **kw)
    return build_model(cfg, *load_section_models(cfg))


def test_band_and_quasi_static_parts_sum_and_limits_read_the_band():
    """A slow 20 MW square wave plus a 1 MW sinusoid at torsional mode 1: the parts sum to the
    section torque, the slow wave sits in the quasi-static part, the limited bin peak is the
    sinusoid's torsional torque, and no bin below the band's edge is capped."""
    m = _model()
    dt, n = 0.005, 120_000                                     # 600 s
    t = np.arange(n) * dt
    f1 = round(m.shaft.torsional_modes_hz()[0] * 600) / 600
    p = 50 + 10 * np.sign(np.sin(2 * np.pi * t / 120)) + np.sin(2 * np.pi * f1 * t)
    out = grid_impact_metrics(p, dt, m)
    for j, s in enumerate(m.shaft.sections):
        tb = section_torque(p, dt, m, j)
        tq = section_torque(p, dt, m, j, part="quasi_static")
        np.testing.assert_allclose(tb + tq, section_torque(p, dt, m, j, part="total"), atol=1e-15)
        sec = out["shaft"]["sections"][s]
        assert sec["peak_torque_pu"] == pytest.approx(np.abs(tb).max(), rel=1e-9)
        assert sec["quasi_static"]["peak_torque_pu"] == pytest.approx(np.abs(tq).max(), rel=1e-9)
        assert sec["bin_peak_hz"] == pytest.approx(f1)
    h1 = np.abs(m.torque_response(np.array([f1])))[:, 0] * np.sinc(f1 * dt) ** 2
    assert out["shaft_bin_peak_torque_pu"] == pytest.approx(h1.max(), rel=1e-6)
    assert bin_metrics(p, dt, m)["shaft_bin_peak_torque_pu"] == pytest.approx(h1.max(), rel=1e-6)
    edge = out["shaft"]["connection"]["torsional_band_min_hz"]
    assert edge == pytest.approx(m.shaft.torsional_modes_hz()[0] / 2)
    f = np.array([0.01, 1.0, 0.99 * edge, edge, f1])
    cap = bin_caps_mw(f, dt, m, 1e-4, None)
    assert np.all(np.isinf(cap[:3])) and np.all(np.isfinite(cap[3:]))


def test_the_quasi_static_part_of_a_floating_shaft_is_the_inertia_split():
    """K_sync = 0 gives back the floating shaft: the fundamental of a slow ±10 MW square wave
    (4/π · 10 MW) puts 0.688 of its air-gap torque into LPB-GEN; connected, the slow wave is
    carried by the connection and the largest bin is the steps' swing against the grid (a
    sudden step still swings the shaft: its time peak is not smaller)."""
    dt, n = 0.01, 60_000
    t = np.arange(n) * dt
    p = 50 + 10 * np.sign(np.sin(2 * np.pi * t / 200))
    free = grid_impact_metrics(p, dt, _model(grid_sync_torque_pu_per_rad=0.0))["shaft"]
    conn = grid_impact_metrics(p, dt, _model())["shaft"]
    split = load_shaft("ieee_fbm").static_gain()[3]
    gap = 0.3 * 10 / 892.4
    qs = free["sections"]["LPB-GEN"]["quasi_static"]
    assert qs["bin_peak_torque_pu"] == pytest.approx(split * gap * 4 / np.pi, rel=1e-3)
    assert qs["bin_peak_hz"] == pytest.approx(1 / 200)
    assert free["bin_peak_hz"] == pytest.approx(1 / 200)
    assert conn["bin_peak_hz"] > 0.1                           # the steps' swing, not the slow wave
    assert conn["bin_peak_torque_pu"] < 0.2 * free["bin_peak_torque_pu"]


def test_connection_sources():
    shaft = load_shaft("ieee_fbm")
    cfg = GridImpactConfig(enabled=True, generator_share_frac=0.3)
    ks, d, src = connection_params(cfg, shaft, load_mode_set(cfg.mode_set))
    h = shaft.h_s.sum()
    assert (ks, src) == (1.5, "default")
    assert d == pytest.approx(0.05 * 4 * h * np.sqrt(1.5 * W0 / (2 * h)))
    ks, d, src = connection_params(GridImpactConfig(enabled=True, generator_share_frac=0.3, mode_set="smib_example"),
                                   shaft, load_mode_set("smib_example"))
    smib = _read("smib_example")["smib"]
    assert (ks, d) == (smib["ks_pu_per_rad"], smib["d_pu"])
    # the generator and the rest of the network in series through the PCC: 1/Ks = 1/Kg + 1/Kr
    cfg = GridImpactConfig(enabled=True, sync_coeff_gen_mw_per_rad=2000.0, sync_coeff_rest_mw_per_rad=6000.0)
    assert connection_params(cfg, shaft, load_mode_set(cfg.mode_set))[0] == pytest.approx(1500.0 / 892.4)
    cfg = GridImpactConfig(enabled=True, generator_share_frac=0.3, grid_sync_torque_pu_per_rad=2.0, grid_damping_pu=3.0)
    assert connection_params(cfg, shaft, load_mode_set(cfg.mode_set))[:2] == (2.0, 3.0)


def test_a_smib_mode_set_given_by_its_path_connects_the_shaft_with_its_own_numbers(tmp_path):
    """The connection reads the [smib] table of the mode set the section uses (a file of
    one's own included), not a bundled file looked up again by name: the shaft and the mode
    set see the same machine."""
    import tomli_w

    d = dict(_read("smib_example"))
    d["smib"] = {**d["smib"], "ks_pu_per_rad": 3.0, "d_pu": 7.0}
    f = tmp_path / "smib_mine.toml"
    f.write_bytes(tomli_w.dumps(d).encode())
    cfg = GridImpactConfig(enabled=True, generator_share_frac=0.3, mode_set=str(f))
    shaft, modes = load_section_models(cfg)
    assert modes.smib == {"ks_pu_per_rad": 3.0, "d_pu": 7.0}
    ks, d_e, src = connection_params(cfg, shaft, modes)
    assert (ks, d_e, src) == (3.0, 7.0, f"mode set {f}")
    # the model's shaft is the one connected with those numbers given as keys
    keys = cfg.model_copy(update={"grid_sync_torque_pu_per_rad": 3.0, "grid_damping_pu": 7.0})
    same = connect_shaft(keys, shaft, load_mode_set("smib_example"))
    got = build_model(cfg, shaft, modes).shaft
    assert got.electromechanical_mode_hz() == pytest.approx(same.electromechanical_mode_hz(), rel=1e-12)
    assert got.electromechanical_mode_hz() != pytest.approx(
        connect_shaft(cfg, shaft, load_mode_set("smib_example")).electromechanical_mode_hz(), rel=1e-3)


def test_band_edge_outside_the_modes_is_a_scenario_error():
    with pytest.raises(ScenarioError, match="torsional_band_min_hz"):
        _model(torsional_band_min_hz=20.0)
    with pytest.raises(ScenarioError, match="torsional_band_min_hz"):
        _model(torsional_band_min_hz=1.0)
    assert _model(torsional_band_min_hz=10.0).band_min_hz == 10.0


def test_validate_names_a_band_edge_outside_the_modes(tiny_scenario_dict):
    from facility.grid_impact.checks import check_grid_impact
    from facility.scenario import scenario_from_dict

    d = dict(tiny_scenario_dict, grid_impact={"enabled": True, "generator_share_frac": 0.5,
                                              "torsional_band_min_hz": 30.0})
    sc = scenario_from_dict(d, check=False)
    probs = check_grid_impact(sc, sc.library)
    assert len(probs) == 1 and "torsional_band_min_hz = 30 Hz" in probs[0] and "15.8 Hz" in probs[0]


def test_default_scenario_largest_torque_bin_is_not_the_slow_load():
    """scenarios/default.toml with [grid_impact] on: the shaft's largest single-bin torque sits
    at or above 0.1 Hz (the floating shaft's sat at the horizon's slowest bins)."""
    from facility.scenario import load_scenario
    from facility.run.orchestrator import run_scenario

    sc = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / "default.toml",
                       overrides=["grid_impact.enabled=true", "grid_impact.generator_share_frac=0.3"])
    res = run_scenario(sc, plots=False)
    shaft = res.metrics["grid_impact"]["shaft"]
    assert shaft["bin_peak_hz"] >= 0.1
    p = res.timeseries["p_pcc_mw"].to_numpy()
    free = grid_impact_metrics(p, sc.time.dt_s, build_model(sc.grid_impact.model_copy(
        update={"grid_sync_torque_pu_per_rad": 0.0}), sc.library.shaft, sc.library.mode_set))["shaft"]
    assert free["bin_peak_hz"] < 0.1
