"""UPS loss model: closed forms of the efficiency curve."""

import numpy as np
import pytest

from facility.electrical.library import load_ups_type
from facility.electrical.ups import ups_efficiency_frac, ups_input_mw, ups_loss_mw


def test_rated_efficiency_is_eff_rated():
    shares = load_ups_type("double_conversion").shares
    assert ups_efficiency_frac(np.array([1.0]), 0.96, shares)[0] == pytest.approx(0.96, abs=1e-12)
    # P_in = P_out / eff at rated load
    assert ups_input_mw(np.array([2.0]), 2.0, 0.96, shares)[0] == pytest.approx(2.0 / 0.96, rel=1e-12)


def test_loss_polynomial_by_hand():
    # L = 1/0.9 - 1 = 1/9; S = 10; x = 0.5: loss = 10/9 * (0.2 + 0.3*0.5 + 0.5*0.25) = 0.52777...
    loss = ups_loss_mw(np.array([5.0, -5.0]), 10.0, 0.9, (0.2, 0.3, 0.5))
    assert loss == pytest.approx([10 / 9 * 0.475] * 2, rel=1e-12)


def test_part_load_efficiency_is_lower():
    shares = load_ups_type("double_conversion").shares
    eff = ups_efficiency_frac(np.array([0.1, 0.25, 0.5, 1.0]), 0.97, shares)
    assert np.all(np.diff(eff) > 0)
    assert 0.90 < eff[0] < eff[1] < 0.97


def test_none_type_is_lossless():
    shares = load_ups_type("none").shares
    assert np.all(ups_loss_mw(np.linspace(-5, 5, 11), 3.0, 0.9, shares) == 0.0)
