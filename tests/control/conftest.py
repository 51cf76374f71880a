"""Shared helpers of the control tests: scenarios, square waves, invariants after every run."""

import numpy as np
import pytest

from facility.config.schema import Scenario
from facility.scenario import resolve
from facility.storage import StorageParams, assert_storage_invariants


def make(**sections):
    """Resolved scenario with a dummy job and the given sections; storages resolved to
    StorageParams."""
    sc = resolve(Scenario(jobs=[{"n_gpus": 1000}], **sections), check=False)  # the layer refuses itself
    sto = {n: StorageParams.from_config(n, c) for n, c in sc.storages().items()}
    return sc, sto


def square(t_s, period_s=2.0, duty=0.7, p_hi=100.0, p_lo=30.0):
    return np.where((t_s % period_s) < duty * period_s, p_hi, p_lo)


def check_invariants(res, storages, dt_s):
    """Invariants after every simulation: energy balance, SoC bounds, PCC = load + storage."""
    for n, p in storages.items():
        assert_storage_invariants(res.p_storage_mw[n], res.soc_frac[n], p, dt_s)
    total = res.p_load_mw + sum(res.p_storage_mw.values(), np.zeros_like(res.p_load_mw))
    np.testing.assert_allclose(res.p_pcc_mw, total, atol=1e-9)


@pytest.fixture
def rack():
    return {"enabled": True, "p_rated_mw": 80.0, "e_rated_mwh": 0.2, "eff_charge_frac": 0.97,
            "eff_discharge_frac": 0.97}
