"""``validate``'s time estimate knows the optimizer's strategy, and the time-limit message says
what helps (issue 49, point 3)."""

from facility.scenario import load_scenario
from facility.scenario import resources
from facility.scenario.resources import estimate_resources, lp_strategy
from facility.optimize.certificates import fallback
from facility.optimize.strategies import interior

HYBRID = "benchmarks/scenarios/hybrid_gb200_30k.toml"


def test_the_config_copies_of_the_optimizer_thresholds_agree():
    assert resources.INTERIOR_MIN_STEPS == interior.MIN_STEPS == fallback.INTERIOR_MIN_STEPS
    assert resources.INTERIOR_DISPATCH_MIN_STEPS == interior.DISPATCH_MIN_STEPS


def test_the_estimate_names_the_strategy_and_counts_hybrid_units():
    s = load_scenario(HYBRID)
    est = estimate_resources(s)
    assert lp_strategy(s) == "hybrid" and est.strategy == "hybrid"
    assert est.n_storages == 2                       # one unit per candidate technology
    assert est.n_lp_variables == 12000 * (3 * 2 + 2 * 1 + 1)
    assert "first candidate technology alone" in est.summary()
    one = load_scenario(HYBRID, ["bess.technologies=[\"supercap\"]"])
    assert lp_strategy(one) == "interior"
    # the interior strategy is about linear in the steps: the hybrid (at most the first alone
    # and then the hybrid LP) is estimated at less than twice one technology's LP time
    lp = lambda sc: resources._lp_time_s(sc, estimate_resources(sc).n_lp_variables, lp_strategy(sc))  # noqa: E731
    assert lp(one) < lp(s) < 2.0 * lp(one) * 1.5
    # a short horizon goes to the full LP, whose simplex time grows faster than the steps
    short = load_scenario(HYBRID, ["time.horizon_s=20"])
    assert lp_strategy(short) == "full"
    # per variable the full LP is dearer than the interior strategy, and past 12,000 steps
    # dearer per variable still
    assert resources._lp_time_s(short, 10**6, lp_strategy(short)) > resources._lp_time_s(s, 10**6, lp_strategy(s))
    longer = load_scenario(HYBRID, ["time.horizon_s=960", "optimize.levers=[\"storage\", \"floor\"]"])
    assert lp_strategy(longer) == "levers"


class _Pb:
    """What time_limit_advice reads of a Problem."""

    def __init__(self, n, storages, levers=None):
        self.n_steps, self.storages, self.levers = n, storages, levers
        self.p_pcc_history_mw, self.pcc_variation_cost_usd_per_mw = None, 0.0


class _S:
    soc_min, soc0, soc_max = 0.1, 0.5, 0.9


def test_the_time_limit_message_says_what_helps():
    small = fallback.time_limit_advice(_Pb(3000, {"bess": _S()}))
    assert small == "raise optimize.time_limit_s for a better plan"
    big = fallback.time_limit_advice(_Pb(50000, {"bess.supercap": _S(), "bess.lfp_1h": _S()}))
    assert "rarely finishes for a longer optimize.time_limit_s" in big
    assert "time.dt_s" in big and "bess.technologies" in big
    levers = fallback.time_limit_advice(_Pb(50000, {"bess": _S()}, levers=object()))
    assert "GPU levers" in levers and "raise optimize.time_limit_s for a better plan" not in levers
    ipm = fallback.time_limit_advice(_Pb(50000, {"bess": _S()}), "interior")
    assert "about linearly" in ipm and "time.dt_s" in ipm
