"""A job crash under a per-minute ramp limit: the storage (or burn) it needs, by hand.

The contract (docs/contract.md): ``max_ramp_mw_per_min`` is the largest rise *or fall* of the
PCC power within any 60 s window; on a grid of dt it bounds ``|P[t2] - P[t1]|`` for lags up to
``k = floor(60 / dt)`` steps, so the fastest allowed fall is a linear ramp of ``R`` per ``k``
steps, ``rho = R / (k dt)`` [MW/s].

A crash of a job of ``dP`` MW is a step *down* of the load at ``t_c`` (consumer sign: the PCC
draws ``load + p_storage``, charging positive). The PCC may fall no faster than ``rho``, so the
fall takes ``L = dP / rho`` seconds; the storage covers the difference between the load step
and the PCC ramp:

* **With foresight** (the sizing LP, which sees the whole load): the PCC starts falling ``x``
  seconds before the crash, so the storage *discharges* ``1/2 rho x^2`` while the load is still
  up (the PCC below the load), then *charges* ``1/2 rho (L - x)^2`` after it (the PCC above the
  vanished load). The SoC range is the larger of the two; ``x = L / 2`` minimizes it:
  ``E = rho L^2 / 8 = dP^2 / (8 rho) = dP^2 k dt / (8 R)`` [MW s] = ``dP^2 / (8 R)`` [MW min]
  for ``k dt = 60 s`` — the mirror of the start ramp's triangle (tests/optimize/
  test_closed_forms.py): discharge first, so it needs the storage *charged* before the crash.
* **Without foresight** (a crash nobody announced; a causal controller or the GPUs' own
  ramp-down): the PCC can only begin to fall at ``t_c``; the storage charges (or a dummy load
  burns) the whole triangle ``1/2 dP L = dP^2 / (2 rho)`` = ``dP^2 / (2 R)`` [MW min], four
  times as much, at power ``dP``, and needs that much *headroom* (room to charge) when it
  happens.
"""

import json

import numpy as np
import pytest

from facility import metrics
from facility.cli import main
from facility.config.schema import BessConfig, OptimizeConfig, SpecConfig
from facility.gpu import apply_gpu_controls
from facility.optimize import size_storage
from facility.workload import generate_load
from tests.workload.conftest import make_scenario

NO_PRICE = OptimizeConfig(annualize=False, energy_price_usd_per_mwh=0.0)


def lossless(**kw):
    base = dict(enabled=True, extendable=True, eff_charge_frac=1.0, eff_discharge_frac=1.0,
                min_soc_frac=0.0, max_soc_frac=1.0, initial_soc_frac=1.0, cost_usd_per_kw=0.0,
                cost_usd_per_kwh=100.0)
    base.update(kw)
    return BessConfig(**base)


def crash_energy_mwh(dp_mw, r_mw_per_min, dt_s, *, foresight=True):
    """Storage energy of a crash of ``dp_mw`` under a per-minute limit (module docstring). [MWh]"""
    k = metrics.window_steps(60.0, dt_s)
    rho = r_mw_per_min / (k * dt_s)                       # fastest fall [MW/s]
    return dp_mw ** 2 / ((8.0 if foresight else 2.0) * rho) / 3600.0


@pytest.mark.parametrize("dt_s", [4.0, 60.0 / 31.0, 7.0])
def test_crash_under_minute_ramp_needs_dp2_over_8r(dt_s):
    dp, r = 4.0, 1.0
    n = int(round(1200.0 / dt_s))
    t = np.arange(n) * dt_s
    load = np.where(t < 600.0 - 1e-9, dp, 0.0)           # the job vanishes at 600 s
    res = size_storage(load, dt_s, {"bess": lossless()}, SpecConfig(max_ramp_mw_per_min=r), NO_PRICE)
    assert res.e_rated_mwh_opt["bess"] == pytest.approx(crash_energy_mwh(dp, r, dt_s), rel=1e-6)
    # ~ dP^2/(8R) = 2 MW min
    assert res.e_rated_mwh_opt["bess"] * 60 == pytest.approx(dp ** 2 / (8 * r), rel=0.07)
    assert metrics.max_ramp_mw_per_min(res.p_pcc_mw, dt_s) <= r + 1e-6
    # the storage discharges before the crash (PCC below the load) and charges after it
    before, after = t < 600.0 - 1e-9, t >= 600.0 - 1e-9
    p_st = res.p_pcc_mw - load
    assert p_st[before].min() < -0.1 and p_st[after].max() > 0.1
    assert p_st[before].max() <= 1e-6 and p_st[after].min() >= -1e-6


def test_crash_without_foresight_burns_dp2_over_2r():
    # The GPUs' own ramp-down as the dummy load: 1,000 GB200 at a flat 1,200 W crash to idle
    # (150 W) at 60 s; a 2 W/s ramp-down per GPU lets the site fall at rho = 2 kW/s = 0.12 MW/min
    # (non-GPU share and PUE off). The burn is the no-foresight triangle dP^2/(2 rho) and the
    # site never falls faster than R = rho x 60 s within a minute.
    n, dt = 1000, 0.5
    fail = {"crash_times_s": [60.0], "crash_drop_s": 0.0, "restart_after_s": 900.0}
    job = {"name": "j", "n_gpus": n, "gpu": "gb200", "workload": "square", "period_s": 2.0,
           "compute_frac": 0.5, "p_low_frac": 1.0, "failures": fail}
    s = make_scenario(job, horizon_s=900.0, dt_s=dt,
                      site={"cooling_tau_s": 0.0, "non_gpu_frac": 0.0, "pue": 1.0})
    s = s.model_copy(update={"gpu_smoothing": s.gpu_smoothing.model_copy(
        update={"enabled": True, "ramp_down_w_per_s": 2.0})})
    prof = generate_load(s)
    res = apply_gpu_controls(prof, s)
    p_site = (res.p_gpu_w * prof.groups["n_gpus"].to_numpy()[:, None]).sum(axis=0) / 1e6  # [MW]
    dp = n * (1200.0 - 150.0) / 1e6                       # 1.05 MW
    rho = n * 2.0 / 1e6                                   # [MW/s]
    burn_mwh = (res.p_burn_w * prof.groups["n_gpus"].to_numpy()[:, None]).sum() / 1e6 * dt / 3600
    # the ramp is sampled at dt from the last sample before the edge: the exact triangle
    assert burn_mwh == pytest.approx(dp ** 2 / (2 * rho) / 3600.0, rel=2 * rho * dt / dp)
    k = metrics.window_steps(60.0, dt)
    assert metrics.max_ramp_mw_per_min(p_site, dt) == pytest.approx(rho * k * dt, rel=1e-6)


def _crash_scenario(tmp_path, ramp_limit_mw_per_min):
    text = f"""
schema_version = 1
name = "crash_size"
seed = 1
[time]
horizon_s = 360
dt_s = 0.1
[[jobs]]
name = "pretrain"
n_gpus = 8000
gpu = "h100"
workload = "square"
period_s = 2.0
compute_frac = 0.5
p_low_frac = 1.0
ramp_s = 20.0
[jobs.failures]
crash_times_s = [120.0]
crash_drop_s = 1.0
restart_after_s = 60.0
[site]
non_gpu_frac = 0.25
pue = 1.1
cooling_tau_s = 0.0
[bess]
enabled = true
extendable = true
max_p_rated_mw = 30.0
max_e_rated_mwh = 2.0
initial_soc_frac = 0.5
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 250.0
[spec]
max_ramp_mw_per_min = {ramp_limit_mw_per_min}
[controller]
kind = "optimal"
"""
    path = tmp_path / "crash_size.toml"
    path.write_text(text)
    return path


@pytest.mark.slow          # ~25 s of CPU (two size-and-verify rounds of 3,600 steps)
def test_size_keeps_the_minute_ramp_through_a_crash_and_a_restart(tmp_path):
    # 8,000 H100 flat at TDP: dP = 8000 x (700 - 75) W x 1.25 x 1.1 = 6.875 MW crashes at 120 s
    # and ramps back over 20 s from 180 s; R = 2 MW/min. The raw PCC breaks R (6.9 MW within a
    # second); the sized design's verification run holds it through both events.
    r = 2.0
    out = tmp_path / "out"
    assert main(["size", str(_crash_scenario(tmp_path, r)), "--out", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())
    assert m["compliance"]["compliant"] and not m["compliance_raw"]["compliant"]
    assert m["pcc"]["max_ramp_mw_per_min"] <= r * (1 + 1e-6)
    assert m["raw"]["max_ramp_mw_per_min"] > 3 * r
    ev = json.loads((out / "events.json").read_text())
    ev = ev if isinstance(ev, list) else ev["events"]
    kinds = {(e["kind"], e["t_s"]) for e in ev}
    assert {("crash", 120.0), ("restart", 180.0)} <= kinds
    assert m["training"]["crashes"]["count"] == 1
    # the usable energy is at least the lossless foresight triangle dP^2 / (8 R) of the crash
    s = json.loads((out / "sizing.json").read_text())["bess"]
    usable_mwh = s["e_rated_mwh_opt"] * (0.9 - 0.1)      # BessConfig's default SoC window
    dp = 8000 * (700.0 - 75.0) * 1.25 * 1.1 / 1e6
    assert usable_mwh >= 0.95 * crash_energy_mwh(dp, r, 0.1)
    assert s["p_rated_mw_opt"] < dp           # with foresight the power stays below the step
