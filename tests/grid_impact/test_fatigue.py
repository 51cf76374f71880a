"""Rainflow counting and Miner's rule in closed form."""

import numpy as np
import pytest

from facility.grid_impact.fatigue import fatigue_metrics, miner_damage, rainflow_cycles


@pytest.mark.parametrize("cycles", [1, 7, 250])
def test_sinusoid_counts_its_cycles(cycles):
    t = np.linspace(0.0, 1.0, 200 * cycles + 1)
    amp, cnt = rainflow_cycles(1.7 * np.cos(2 * np.pi * cycles * t))
    np.testing.assert_allclose(amp, 1.7, rtol=1e-9)
    assert cnt.sum() == pytest.approx(cycles)


def test_miner_closed_form():
    # 1000 cycles at twice the endurance amplitude, m = 8: N = 1e7 / 2^8
    assert miner_damage(np.array([1.0]), np.array([1000.0]), 8.0, 0.5, 1e7) == pytest.approx(1000 * 2 ** 8 / 1e7)
    assert miner_damage(np.array([0.5, 0.2]), np.array([1e9, 1e9]), 8.0, 0.5, 1e7) == 0.0


def test_fatigue_per_hour_and_year():
    """60 cycles per second at 1 pu for one minute, T_e 0.5, m 4, N_e 1e6: D = 3600 · 16 / 1e6
    per minute."""
    t = np.arange(0, 60.0, 1 / 600.0)
    out = fatigue_metrics(np.cos(2 * np.pi * 60 * t), 1 / 60, {"sn_exponent": 4.0, "t_endurance_pu": 0.5,
                                                             "n_endurance_cycles": 1e6})
    d = 60 * 3600 * 16 / 1e6
    assert out["damage_per_hour"] == pytest.approx(d, rel=1e-4)
    assert out["damage_per_year"] == pytest.approx(d * 8760, rel=1e-4)
    assert out["life_years"] == pytest.approx(1 / (d * 8760), rel=1e-4)
    below = fatigue_metrics(0.4 * np.cos(2 * np.pi * 60 * t), 1 / 60,
                            {"sn_exponent": 4.0, "t_endurance_pu": 0.5, "n_endurance_cycles": 1e6})
    assert below["damage"] == 0.0
