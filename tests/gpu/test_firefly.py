"""Firefly: latency shifts the fill-in exactly, fill energy closed form, back-off, contention."""

from __future__ import annotations

import numpy as np
import pytest

from facility.gpu import apply_firefly
from tests.gpu.conftest import square_wave

TDP = 1200.0


@pytest.mark.parametrize("dt,latency", [(0.01, 0.05), (0.001, 0.023), (0.02, 0.1), (0.01, 0.3)])
def test_latency_shifts_the_fill_in_by_exactly_latency_s(dt, latency):
    t = np.arange(int(round(8.0 / dt))) * dt
    p, _ = square_wave(t, 1.0, 0.6, TDP, 240.0)
    run = np.ones((1, t.size), bool)
    _, f0 = apply_firefly(p[None], run, dt, TDP, 0.5, 0.8, 0.0)
    _, fl = apply_firefly(p[None], run, dt, TDP, 0.5, 0.8, latency)
    s = int(round(latency / dt))
    on0 = f0[0] > 0
    onl = fl[0] > 0
    # every fill-in starts exactly s steps later; it ends when the compute phase returns (the
    # GPU is saturated by the primary, the secondary only contends)
    rise0 = np.flatnonzero(np.diff(on0.astype(int)) == 1)
    risel = np.flatnonzero(np.diff(onl.astype(int)) == 1)
    np.testing.assert_array_equal(risel[: len(rise0) - 1], rise0[: len(rise0) - 1] + s)
    np.testing.assert_array_equal(fl[0, s:][onl[s:]], f0[0, :-s][onl[s:]])
    assert not onl[:s].any()     # nothing assumed before t = 0


def test_fill_energy_closed_form_and_levels():
    dt, duty, lo, target = 0.01, 0.7, 240.0, 0.8
    t = np.arange(1000) * dt
    p, _ = square_wave(t, 1.0, duty, TDP, lo)
    info = {}
    y, fill = apply_firefly(p[None], np.ones((1, t.size), bool), dt, TDP, 0.5, target, 0.0,
                            info=info)
    assert info["fill_j"][0] == pytest.approx((target * TDP - lo) * (1 - duty) * 10.0, rel=1e-9)
    assert fill.sum() * dt == pytest.approx(info["fill_j"][0])
    np.testing.assert_allclose(y[0][p < TDP], target * TDP)
    np.testing.assert_array_equal(y[0][p == TDP], TDP)
    assert info["n_starts"][0] == 10


def test_latency_overlap_is_contention_time():
    dt, lat = 0.01, 0.05
    t = np.arange(1000) * dt
    p, _ = square_wave(t, 1.0, 0.7, TDP, 240.0)
    info = {}
    apply_firefly(p[None], np.ones((1, t.size), bool), dt, TDP, 0.5, 0.8, lat, info=info)
    # the secondary load runs for each 0.3 s gap, shifted by the latency (the last one is cut
    # by the horizon end at 10 s): 9 x 0.3 + 0.25 s
    assert info["active_s"][0] == pytest.approx(9 * 0.3 + 0.25, abs=1e-9)


def test_backoff_pauses_the_fill_periodically():
    dt = 0.01
    n = 500
    p = np.full((1, n), 240.0)
    info = {}
    y, fill = apply_firefly(p, np.ones((1, n), bool), dt, TDP, 0.5, 0.8, 0.0, 1.0, 0.1, info=info)
    paused = fill[0] == 0
    # 0.9 s on, 0.1 s off, repeating from the launch
    assert paused.reshape(5, 100)[:, 90:].all()
    assert not paused.reshape(5, 100)[:, :90].any()
    assert info["active_s"][0] == pytest.approx(4.5)


def test_no_fill_when_the_job_does_not_run_and_argument_checks():
    dt = 0.01
    p = np.full((1, 100), 100.0)
    run = np.zeros((1, 100), bool)
    y, fill = apply_firefly(p, run, dt, TDP, 0.5, 0.8, 0.0)
    assert not fill.any()
    with pytest.raises(ValueError, match="target_frac"):
        apply_firefly(p, run, dt, TDP, 0.8, 0.5, 0.0)
