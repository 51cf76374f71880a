"""The hybrid split: the fast unit's share of a step decays as e^(-t/τ) and holds A τ of energy."""

import numpy as np
import pytest

from facility.control.split import crossover_tau_s, lowpass_split, split_command


def test_step_gives_the_fast_unit_a_decaying_exponential_of_energy_a_tau():
    dt, tau, amp = 0.01, 5.0, 20.0
    p = np.where(np.arange(6000) * dt >= 1.0, amp, 0.0)
    slow, fast = lowpass_split(p, dt, tau)
    np.testing.assert_allclose(slow + fast, p, atol=1e-12)
    k = np.flatnonzero(p)[0]
    t = np.arange(p.size - k) * dt
    # exact discretization: fast_t = A (1 - a)^(t/dt + 1) = A exp(-(t + dt)/τ)
    np.testing.assert_allclose(fast[k:], amp * np.exp(-(t + dt) / tau), rtol=1e-9, atol=1e-9)
    assert np.sum(fast) * dt == pytest.approx(amp * tau, rel=2e-3)
    assert np.all(fast[:k] == 0.0)   # no transient at t = 0


def test_split_command_keeps_the_fast_unit_within_its_rating():
    dt = 0.1
    t = np.arange(3000) * dt
    p = 30.0 * np.sign(np.sin(2 * np.pi * t / 2.0)) + np.where(t > 100, 40.0, 0.0)
    e_fast = 10.0 * 5.0 / 3600.0   # 10 MW for 5 s
    assert crossover_tau_s(10.0, e_fast) == pytest.approx(5.0)
    slow, fast = split_command(p, dt, 10.0, e_fast)
    np.testing.assert_allclose(slow + fast, p, atol=1e-9)
    assert np.max(np.abs(fast)) <= 10.0 + 1e-12
    # τ = 5 s >> the 2 s period: the high-pass passes the ±30 MW square almost whole, the
    # fast unit keeps ±10 MW of it, so the slow unit's swing is 60 - 2·10 = 40 MW
    late = t > 200
    swing = np.max(slow[late][:20]) - np.min(slow[late][:20])
    assert swing == pytest.approx(40.0, abs=0.5)
