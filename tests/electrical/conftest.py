"""Shared builders of the electrical tests."""

import numpy as np
import pytest

from facility.config.schema import Scenario
from facility.scenario import resolve


def scenario(**kw) -> Scenario:
    """A resolved 1-job scenario with keyword sections (``grid={...}``, ``bess={...}``)."""
    return resolve(Scenario(jobs=[{"n_gpus": 1000}], **kw), check=False)


@pytest.fixture(scope="module")
def site_net():
    """Reference facility: 4 feeders of 30 MW peak, a 40 MW BESS."""
    from facility.electrical.network import build_network

    sc = scenario(bess={"enabled": True, "p_rated_mw": 40.0, "e_rated_mwh": 20.0})
    return build_network(sc, np.full(4, 30.0))


@pytest.fixture(scope="module")
def site_inputs():
    """300 random steps of feeder load and storage power for ``site_net``."""
    rng = np.random.default_rng(42)
    t = 300
    p = 30.0 * rng.uniform(0.1, 1.0, (t, 4))
    st = {"rack_storage": rng.uniform(-8, 8, t), "ups": rng.uniform(-5, 5, t), "bess": rng.uniform(-40, 40, t)}
    return p, st
