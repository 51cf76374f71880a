"""Power cap: clipping and the stretched compute phases."""

from __future__ import annotations

import numpy as np
import pytest

from facility.gpu import apply_power_cap
from tests.gpu.conftest import square_wave


@pytest.mark.parametrize("cap_frac,exponent", [(0.8, 0.5), (0.6, 1.0), (1.0, 0.5)])
def test_cap_clips_and_stretches_compute(cap_frac, exponent):
    dt, duty, tdp = 0.01, 0.7, 1200.0
    t = np.arange(1000) * dt
    p, comp = square_wave(t, 1.0, duty, tdp, 240.0)
    y, extra = apply_power_cap(p[None], comp[None], dt, cap_frac * tdp, exponent)
    assert y.max() == pytest.approx(cap_frac * tdp)
    np.testing.assert_array_equal(y[0][~comp], 240.0)
    # compute time duty x 10 s, each second of it needs cap^-e seconds
    assert extra[0] == pytest.approx(duty * 10.0 * (cap_frac ** -exponent - 1.0), rel=1e-9, abs=1e-12)
    # the cap lowers the swing
    assert y.max() - y.min() <= p.max() - p.min()
