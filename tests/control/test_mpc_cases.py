"""The MPC on every bundled scenario with storage and the Table I set, through the whole
co-simulation (power flow included), on short horizons (the full ones are in
benchmarks/bench_cosim_control.py --compare, figures in docs/control.md).

Each case asserts that the MPC is at least as good as the filter (every limit the MPC breaks
the filter breaks too, and the MPC's window swing is not larger where the filter is
compliant), and compliant where the ``optimal`` controller is at the full horizon
(``COMPLIANT``); the slow test checks that last claim against the optimal run itself.
"""

import warnings
from pathlib import Path

import pytest

from facility.scenario import load_scenario
from facility.run.orchestrator import run_scenario

SC = Path(__file__).resolve().parents[2] / "scenarios"

#: case -> (short horizon [s], overrides). Horizons keep one event each where the scenario
#: has them (default: the checkpoint at 60 s; sizing_rack_and_bess: the job start at 60 s).
CASES = {
    "combined_multi_job": (100.0, []),      # the fine-tune job starts at 60 s
    "default": (75.0, []),
    "square_wave_rack_storage": (40.0, []),
    "table1/combined": (30.0, []),
    "table1/rack_storage": (30.0, []),
    "sizing_rack_and_bess": (300.0, []),
    "sizing_start_ramp": (300.0, []),
}
#: where the optimal controller is compliant at the full horizon, or the filter is: the MPC
#: must be (docs/control.md, controller comparison)
COMPLIANT = {"combined_multi_job", "default", "table1/combined", "table1/rack_storage", "sizing_start_ramp",
             "sizing_rack_and_bess"}


def _run(case, kind, horizon_s, sets=()):
    sc = load_scenario(SC / f"{case}.toml", [f"controller.kind={kind}",
                                              f"time.horizon_s={horizon_s}", *sets])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run_scenario(sc, plots=False)


def _failing(res):
    return {k for k, v in res.metrics["compliance"].items() if k != "compliant" and not v}


#: cases whose storage is extendable: run sizes them first and grows the design for the
#: controller (facility.sizing.resize), a minute or two each: in the benchmarks' slow set
SIZED = {"sizing_rack_and_bess", "sizing_start_ramp"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SIZED else c
                                  for c in sorted(CASES)])
def test_mpc_at_least_as_good_as_the_filter(case):
    horizon, sets = CASES[case]
    if case.startswith("sizing") and horizon > 100:
        pytest.importorskip("highspy")
    mpc = _run(case, "mpc", horizon, sets)
    flt = _run(case, "filter", horizon, sets)
    assert _failing(mpc) <= _failing(flt), (case, _failing(mpc), _failing(flt))
    if case in COMPLIANT:
        assert mpc.metrics["compliance"]["compliant"], (case, _failing(mpc))
    ctl = mpc.metrics["control"]
    assert ctl["n_replans"] >= 1 and ctl["n_fallbacks"] == 0
    # the re-plan could run live: its median wall time is well under replan_s
    assert ctl["mpc_solve_median_frac_of_replan"] < 0.2


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_mpc_compliant_where_optimal_is(case):
    horizon, sets = CASES[case]
    opt = _run(case, "optimal", horizon, sets)
    if not opt.metrics["compliance"]["compliant"]:
        pytest.skip(f"optimal not compliant on {case} at {horizon} s: {_failing(opt)}")
    mpc = _run(case, "mpc", horizon, sets)
    assert mpc.metrics["compliance"]["compliant"], (case, _failing(mpc))


def _mpc_vs_optimal(horizon_s):
    from facility.control.regret import regret_vs_optimal

    mpc = _run("square_wave_rack_storage", "mpc", horizon_s)
    opt = _run("square_wave_rack_storage", "optimal", horizon_s)
    return mpc, regret_vs_optimal(mpc, opt)


def test_mpc_lets_the_grid_carry_the_ripple_it_sees():
    # a deterministic square job (the waveform forecast): the variation is priced over one
    # iteration period, so the plan lets the grid follow the ripple within the margined
    # 10 MW / 5 s limit instead of cycling the storage for all of it
    mpc, reg = _mpc_vs_optimal(60.0)
    ctl = mpc.metrics["control"]
    assert ctl["n_waveform_plans"] == ctl["n_replans"] >= 1
    swing = mpc.metrics["pcc"]["max_window_swing_mw"]
    assert 3.0 < swing <= 10.0, swing               # step-to-step pricing held it at 0.6 MW
    assert reg["energy_overhead_ratio"] <= 1.25, reg
    assert ctl["mpc_solve_median_frac_of_replan"] < 0.2


@pytest.mark.slow
def test_mpc_energy_within_1_25_of_optimal_on_the_square_wave_full_horizon():
    # the benchmark's case (300 s): 1.27 x with the variation priced step to step
    mpc, reg = _mpc_vs_optimal(300.0)
    assert reg["energy_overhead_ratio"] <= 1.25, reg
    assert mpc.metrics["control"]["mpc_solve_median_frac_of_replan"] < 0.2
