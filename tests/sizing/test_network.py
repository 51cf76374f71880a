"""`facility size` through the network: the LP sees the losses (facility.sizing.network), the
design is verified under the controller the site runs (facility.sizing.resize), one annual
objective. Hand cases first, then the cases of the issue at small horizons."""

import json

import numpy as np
import pytest

from facility import metrics
from facility.cli import main
from facility.scenario import load_scenario
from facility.optimize import size_storage
from facility.sizing.pipeline import size_scenario
from facility.sizing.record import losses_block

FIXED_EFF_UPS = """
name = "fixed_eff"
description = "a UPS of one efficiency at every load (test)"
noload_loss_share = 0.0
linear_loss_share = 1.0
quadratic_loss_share = 0.0
source = "test: P_in = P_out / eta"
"""

START = """
schema_version = 1
name = "start_behind_ups"
[time]
horizon_s = 600
dt_s = 0.5
[[jobs]]
name = "job"
n_gpus = 10000
gpu = "h100"
workload = "square"
period_s = 4.0
compute_frac = 0.5
p_low_frac = 1.0
start_s = 300
ramp_s = 0.0
[site]
non_gpu_frac = 0.0
pue = 1.0
[ups]
eff_ups_frac = {eta}
[bess]
enabled = true
extendable = true
max_p_rated_mw = 50.0
max_e_rated_mwh = 10.0
eff_charge_frac = 1.0
eff_discharge_frac = 1.0
min_soc_frac = 0.0
max_soc_frac = 1.0
initial_soc_frac = 0.0
cost_usd_per_kw = 0.0
cost_usd_per_kwh = 100.0
[grid]
ups_type = "./fixed_eff.toml"
trafo_vkr_percent = 0.0
lv_trafo_vkr_percent = 0.0
trafo_vk_percent = 1.0
lv_trafo_vk_percent = 1.0
power_factor = 1.0
trafo_pfe_kw = {pfe}
[spec]
max_ramp_mw_per_min = {r}
[controller]
kind = "optimal"
[optimize]
energy_price_usd_per_mwh = 0.0
loss_tol_frac = 1e-5
"""


def _start(tmp_path, eta=0.9, pfe=0.0, r=2.0, name="s.toml"):
    (tmp_path / "fixed_eff.toml").write_text(FIXED_EFF_UPS)
    f = tmp_path / name
    f.write_text(START.format(eta=eta, pfe=pfe, r=r))
    return load_scenario(f)


def test_behind_a_ups_of_efficiency_eta_the_start_needs_dp_over_eta_squared_over_8r(tmp_path):
    """A job start of ΔP at the racks behind a UPS of fixed efficiency η (P_in = P_out / η,
    series-lossless transformers) is a step of ΔP/η at the PCC; the BESS on the MV bus must
    fill the triangle of a ramp at R per minute: E = (ΔP/η)² k dt / (8 R') [MW·s] with
    k dt = 60 s and R' = R (1 − 2 loss_tol_frac), the limit the loss-aware LP holds
    (tests/optimize/test_closed_forms.py: job_start_energy_mwh without losses)."""
    # 10,000 H100 from idle (75 W) to TDP (700 W): ΔP = 6.25 MW at the racks; R such that the
    # ramp spans a whole number of minutes (then the sampled ramp stores the triangle exactly)
    eta = 0.9
    r = 6.25 / eta / 4
    s = _start(tmp_path, eta=eta, r=r)
    sol, res = size_scenario(s, plots=False)
    ts = res.timeseries
    before, after = ts["t_s"] < 290, ts["t_s"] > 310
    dp_rack = ts["p_site_mw"][after].mean() - ts["p_site_mw"][before].mean()
    dp_pcc = ts["p_raw_pcc_mw"][after].mean() - ts["p_raw_pcc_mw"][before].mean()
    # ΔP/η up to the transformers' iron losses, a shunt conductance whose loss follows V²: the
    # load's reactive power sags the voltage by a few %, so they fall by ~1e-3 of ΔP
    assert dp_rack == pytest.approx(6.25, rel=1e-9)
    assert dp_pcc == pytest.approx(dp_rack / eta, rel=2e-3)
    k = metrics.window_steps(60.0, s.time.dt_s)
    r_held = r * (1 - 2 * s.optimize.loss_tol_frac)
    e_hand_mwh = dp_pcc ** 2 * k * s.time.dt_s / (8 * r_held) / 3600.0
    assert sol.e_rated_mwh_opt["bess"] == pytest.approx(e_hand_mwh, rel=1e-4)
    step = np.where(ts["t_s"].to_numpy() >= 300.0, dp_pcc, 0.0)
    lossless = s.bess.model_copy(update={"max_p_rated_mw": None, "max_e_rated_mwh": None})
    spec = s.spec.model_copy(update={"max_ramp_mw_per_min": r_held})
    grid_lp = size_storage(step, s.time.dt_s, {"bess": lossless}, spec, s.optimize)
    assert sol.e_rated_mwh_opt["bess"] == pytest.approx(grid_lp.e_rated_mwh_opt["bess"], rel=1e-4)
    # the same start at the PCC without the UPS would need η² of it
    assert e_hand_mwh * eta ** 2 == pytest.approx(dp_rack ** 2 * k * s.time.dt_s / (8 * r_held) / 3600, rel=4e-3)
    assert res.sizing["losses"]["gain_mw_per_mw"] == pytest.approx(1.0, abs=1e-4)
    assert res.metrics["pcc"]["max_ramp_mw_per_min"] <= r + 1e-9 and res.compliant


def test_a_transformers_constant_no_load_loss_changes_no_rating(tmp_path):
    s0 = _start(tmp_path, pfe=0.0, name="a.toml")
    s1 = _start(tmp_path, pfe=2000.0, name="b.toml")
    a, ra = size_scenario(s0, plots=False)
    b, rb = size_scenario(s1, plots=False)
    # the iron losses lift the PCC power by 2 MW (a shunt conductance, V² x 2 MW: constant
    # where the voltage barely moves, unity power factor and 1 % reactances)...
    shift = (rb.timeseries["p_raw_pcc_mw"] - ra.timeseries["p_raw_pcc_mw"]).to_numpy()
    assert shift.min() == pytest.approx(2.0, rel=1e-3) and np.ptp(shift) < 1e-3
    # ...and change no rating (beyond what its < 1e-3 MW of variation moves the 6.9 MW step)
    assert b.p_rated_mw_opt["bess"] == pytest.approx(a.p_rated_mw_opt["bess"], rel=5e-4)
    assert b.e_rated_mwh_opt["bess"] == pytest.approx(a.e_rated_mwh_opt["bess"], rel=5e-4)


SQUARE = """
schema_version = 1
name = "square_100k"
[time]
horizon_s = {horizon}
dt_s = {dt}
[[jobs]]
name = "pretrain"
n_gpus = 100000
gpu = "b200"
workload = "square"
period_s = 2.0
compute_frac = 0.5
p_low_frac = {p_low}
start_s = {start}
ramp_s = 0.0
[site]
non_gpu_frac = 0.0
pue = 1.0
[bess]
enabled = true
extendable = true
max_p_rated_mw = 200.0
max_e_rated_mwh = 50.0
eff_charge_frac = 0.95
eff_discharge_frac = 0.95
min_soc_frac = 0.05
max_soc_frac = 0.95
initial_soc_frac = 0.5
cost_usd_per_kw = 150.0
cost_usd_per_kwh = 250.0
[spec]
{limits}
[controller]
kind = "optimal"
"""


def _against_the_lp_on_the_raw_pcc(tmp_path, **kw):
    f = tmp_path / "sq.toml"
    f.write_text(SQUARE.format(**kw))
    s = load_scenario(f)
    sol, res = size_scenario(s, plots=False)
    raw = res.timeseries["p_raw_pcc_mw"].to_numpy()
    ref = size_storage(raw, s.time.dt_s, s.storages(), s.spec, s.optimize)
    return s, sol, res, ref


def test_a_100k_gpu_square_wave_under_half_a_mw_per_s_sizes_through_the_network(tmp_path):
    """The issue's first case (80 MW swing, 0.5 MW/s up and down): the UPS and transformer
    losses swing by ~3 MW with the load; the lossless LP's design broke the limit 6x at the
    PCC. Through the network: compliant in one size-and-verify round, P and E within 3 % / 4 %
    of the same LP on the run's loss-inclusive raw PCC power."""
    s, sol, res, ref = _against_the_lp_on_the_raw_pcc(
        tmp_path, horizon=30, dt=0.1, p_low=0.2, start=-10,
        limits="max_ramp_up_mw_per_s = 0.5\nmax_ramp_down_mw_per_s = 0.5")
    assert res.compliant and res.sizing["verify_runs"] == 1 and res.sizing["losses"]["converged"]
    assert res.metrics["raw"]["max_ramp_up_mw_per_s"] > 70
    assert sol.p_rated_mw_opt["bess"] == pytest.approx(ref.p_rated_mw_opt["bess"], rel=0.03)
    assert sol.e_rated_mwh_opt["bess"] == pytest.approx(ref.e_rated_mwh_opt["bess"], rel=0.04)


def test_a_100k_gpu_job_start_under_a_per_minute_limit_sizes_through_the_network(tmp_path):
    s, sol, res, ref = _against_the_lp_on_the_raw_pcc(
        tmp_path, horizon=400, dt=0.5, p_low=0.5, start=150, limits="max_ramp_mw_per_min = 20.0")
    assert res.compliant and res.sizing["verify_runs"] == 1 and res.sizing["losses"]["converged"]
    assert sol.p_rated_mw_opt["bess"] == pytest.approx(ref.p_rated_mw_opt["bess"], rel=0.03)
    assert sol.e_rated_mwh_opt["bess"] == pytest.approx(ref.e_rated_mwh_opt["bess"], rel=0.04)


def test_the_loss_rounds_converge_and_the_residual_shrinks(tmp_path):
    f = tmp_path / "sq.toml"
    f.write_text(SQUARE.format(horizon=20, dt=0.1, p_low=0.2, start=-10,
                               limits="window_s = 5.0\nmax_window_swing_mw = 5.0"))
    s = load_scenario(f, ["optimize.loss_tol_frac=1e-5"])
    _, res = size_scenario(s, plots=False)
    loss = res.sizing["losses"]
    assert loss["converged"] and loss["rounds"] >= 2
    assert all(b < a for a, b in zip(loss["residuals_mw"], loss["residuals_mw"][1:]))
    assert loss["residuals_mw"][-1] <= loss["tol_mw"] == pytest.approx(5.0e-5)
    assert res.metrics["pcc"]["max_window_swing_mw"] <= 5.0 + 1e-9


def test_size_verifies_under_the_mpc_by_default_and_reports_both_designs(tmp_path, capsys):
    """No controller in the scenario: `size` verifies under the MPC (written in the resolved
    scenario), grows the foresight design where the MPC needs it, and reports both designs,
    their annual costs and the cost of no foresight; the headline is the objective."""
    f = tmp_path / "sq.toml"
    f.write_text(SQUARE.format(horizon=30, dt=0.1, p_low=0.2, start=-10,
                               limits="window_s = 5.0\nmax_window_swing_mw = 8.0").replace(
        '[controller]\nkind = "optimal"\n', ""))
    assert main(["size", str(f), "--out", str(tmp_path / "out"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    js = json.loads((tmp_path / "out" / "sizing.json").read_text())
    assert js["verified_by"] == "mpc" and js["verified"] is True and js["perfect_foresight"] is False
    assert js["bess"]["p_rated_mw_opt"] >= js["foresight"]["bess"]["p_rated_mw_opt"] * (1 - 1e-9)
    assert js["bess"]["p_rated_mw_opt"] == pytest.approx(
        js["resize"]["p_scale"]["bess"] * js["foresight"]["bess"]["p_rated_mw_opt"], rel=1e-9)
    assert js["bess"]["e_rated_mwh_opt"] == pytest.approx(
        js["resize"]["e_scale"]["bess"] * js["foresight"]["bess"]["e_rated_mwh_opt"], rel=1e-9)
    assert js["objective_usd_per_year"] == pytest.approx(js["cost"]["total_usd_per_year"])
    assert js["cost_of_no_foresight_usd_per_year"] == pytest.approx(
        js["objective_usd_per_year"] - js["foresight"]["objective_usd_per_year"])
    assert 'kind = "mpc"' in (tmp_path / "out" / "scenario.resolved.toml").read_text()
    assert out.splitlines()[0].startswith("design: bess") and "verified by controller.kind = 'mpc'" in out
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["compliance"]["compliant"] is True


def test_the_annualized_cost_is_the_objective(tmp_path):
    """By default the LP's objective is the annual cost over the horizon: its optimum × 8760 h /
    horizon equals the cost size reports for the foresight design (same plan)."""
    f = tmp_path / "sq.toml"
    f.write_text(SQUARE.format(horizon=20, dt=0.1, p_low=0.2, start=-10,
                               limits="window_s = 5.0\nmax_window_swing_mw = 5.0"))
    s = load_scenario(f)
    assert s.optimize.annualize is True
    sol, res = size_scenario(s, plots=False)
    per_year = 8760.0 * 3600.0 / s.time.horizon_s
    assert sol.info.objective_usd * per_year == pytest.approx(res.sizing["objective_usd_per_year"], rel=1e-6)


#: every bundled scenario with extendable storage, at a horizon that keeps its events (start,
#: stop, crash) where it has them short: `size` exits 0 only with "compliant: yes"
BUNDLED_SIZING = {
    "sizing_start_ramp.toml": ["time.horizon_s=600", "controller.kind=mpc"],
    "sizing_stochastic_hour.toml": ["time.horizon_s=120"],
    "sizing_rack_and_bess.toml": ["time.horizon_s=300"],
    "crash_restart.toml": [],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BUNDLED_SIZING))
def test_no_bundled_sizing_scenario_exits_0_with_a_verification_that_is_not_compliant(name, tmp_path, capsys):
    from tests.conftest import SCENARIOS

    sets = [x for s in BUNDLED_SIZING[name] for x in ("--set", s)]
    rc = main(["size", str(SCENARIOS / name), "--out", str(tmp_path / "out"), "--no-plots", *sets])
    out = capsys.readouterr().out
    assert rc in (0, 3)
    if rc == 0:
        assert "compliant: yes" in out and "compliant: no" not in out
        assert json.loads((tmp_path / "out" / "sizing.json").read_text())["verified"] is True


def test_the_resize_grows_what_ran_out():
    """Power-saturated: P grows, E stays; SoC-saturated: E; both: the one grown least so far;
    neither: the rating
    grown least so far (both when level); what ran out at its bound leaves the others to
    grow; ratings stop at their bounds."""
    from facility.sizing.resize import GROW, grown

    pt = {"bess": (10.0, 1.0), "rack_storage": (2.0, 0.1)}
    inf = float("inf")
    b = {"bess": (inf, inf), "rack_storage": (inf, inf)}
    g = grown(pt, {"bess": (5, 0), "rack_storage": (0, 0)}, b)
    assert g == {"bess": (10.0 * GROW, 1.0), "rack_storage": (2.0, 0.1)}
    g = grown(pt, {"bess": (0, 3), "rack_storage": (0, 0)}, b)
    assert g == {"bess": (10.0, 1.0 * GROW), "rack_storage": (2.0, 0.1)}
    # both ran out: one at a time, the one grown least so far (P when level), never both together
    g = grown(pt, {"bess": (1, 3), "rack_storage": (0, 0)}, b)
    assert g == {"bess": (10.0 * GROW, 1.0), "rack_storage": (2.0, 0.1)}
    g = grown(g, {"bess": (1, 3), "rack_storage": (0, 0)}, b, pt)
    assert g == {"bess": (10.0 * GROW, 1.0 * GROW), "rack_storage": (2.0, 0.1)}
    # nothing saturated: the rating grown least so far over the foresight design (both when level)
    assert grown(pt, {}, b) == {n: (p * GROW, e * GROW) for n, (p, e) in pt.items()}
    base = {"bess": (10.0 / GROW, 1.0), "rack_storage": (2.0, 0.1)}     # bess's P grew once already
    assert grown(pt, {}, b, base) == {"bess": (10.0, 1.0 * GROW), "rack_storage": (2.0 * GROW, 0.1 * GROW)}
    # ratings at their bounds stay
    be = {"bess": (inf, 1.0), "rack_storage": (inf, 0.1)}
    assert grown(pt, {}, be) == {n: (p * GROW, e) for n, (p, e) in pt.items()}
    # bess's power ran out at its bound (12 MW): the others grow
    b2 = {"bess": (12.0, inf), "rack_storage": (inf, inf)}
    assert grown(pt, {"bess": (5, 0)}, b2)["bess"] == (12.0, 1.0)
    at = {"bess": (12.0, 1.0), "rack_storage": (2.0, 0.1)}
    assert grown(at, {"bess": (5, 0)}, b2) == {"bess": (12.0, 1.0 * GROW), "rack_storage": (2.0 * GROW, 0.1 * GROW)}


def test_each_loss_round_starts_from_the_last_rounds_basis(tmp_path):
    """The rounds' HiGHS simplex solves after the first start from the previous round's optimal
    basis (same LP, another load): the same design and objective as cold starts, in fewer
    simplex iterations, and sizing.json's `losses` says how many were warm."""
    from facility.sizing.pipeline import sizing_inputs
    from facility.sizing.network import size_through_network

    f = tmp_path / "sq.toml"
    f.write_text(SQUARE.format(horizon=20, dt=0.1, p_low=0.2, start=-10,
                               limits="window_s = 5.0\nmax_window_swing_mw = 5.0"))
    s = load_scenario(f, ["optimize.loss_tol_frac=1e-5"])
    si = sizing_inputs(s)
    opt = si.scenario_caps.optimize
    runs = {w: size_through_network(s, si.net, si.ctl_site.p_feeder_mw, si.p_load_mw, s.storages(), opt,
                                    t_s=si.profile.t_s, net_for=si.net_for, warm=w) for w in (True, False)}
    warm, cold = runs[True], runs[False]
    assert warm.rounds == cold.rounds >= 2
    assert warm.warm_solves >= warm.rounds - 1 and cold.warm_solves == 0
    assert warm.sol.info.objective_usd == pytest.approx(cold.sol.info.objective_usd, rel=1e-7)
    assert warm.sol.p_rated_mw_opt["bess"] == pytest.approx(cold.sol.p_rated_mw_opt["bess"], rel=1e-6)
    # the first round is the same cold solve; the later ones take fewer iterations warm
    assert warm.simplex_iterations[0] == cold.simplex_iterations[0]
    assert sum(warm.simplex_iterations[1:]) < sum(cold.simplex_iterations[1:])
    assert losses_block(warm)["warm_started_solves"] == warm.warm_solves


def test_a_grown_design_stays_within_its_duration_bounds():
    """A power-saturated battery with a 1-h minimum duration (lfp_1h) grows its energy with its
    power (E = 1 h x P), a capacitor with a 2-min maximum its power with its energy; a capped
    energy brings the power down to E / d_min."""
    from facility.sizing.resize import GROW, grown, within_duration

    inf = float("inf")
    pt = {"bess": (3.0, 3.0)}                                   # lfp_1h at its 1-h minimum
    g = grown(pt, {"bess": (5, 0)}, {"bess": (inf, inf)}, durations={"bess": (1.0, 2.0)})
    assert g["bess"] == pytest.approx((3.0 * GROW, 3.0 * GROW))
    g = grown({"cap": (10.0, 10.0 / 30)}, {"cap": (0, 4)}, {"cap": (inf, inf)}, durations={"cap": (None, 1 / 30)})
    assert g["cap"] == pytest.approx((10.0 * GROW, 10.0 * GROW / 30))   # E/P at its 2-min maximum
    assert within_duration(10.0, 20.0, (1.0, 2.0), (inf, 8.0)) == pytest.approx((8.0, 8.0))
