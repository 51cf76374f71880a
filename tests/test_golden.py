"""Golden regression: bundled scenarios against tests/data/golden/ through the table of
tests/regenerate_golden.py (what is unique is pinned to a tolerance, what is one of several
optima is checked against its limit), under the default HiGHS options and under two others."""

from __future__ import annotations

import json

import pytest

from facility.metrics import COMPLIANCE_ABS_TOL
from tests.conftest import TOL
from tests.regenerate_golden import CASES, GOLDEN_DIR, HIGHS_CASES, check_of, pick, run_case

#: HiGHS option sets other than the tuned default (facility.optimize.solvers.lp.HIGHS_OPTIONS):
#: the primal simplex, and the dual simplex with another random seed and steepest-edge pricing.
OTHER_HIGHS_OPTIONS = {
    "primal_simplex": {"simplex_strategy": 4},
    "seed_steepest_edge": {"random_seed": 7, "simplex_dual_edge_weight_strategy": 2},
}


def _golden(name: str) -> dict:
    f = GOLDEN_DIR / f"{name}.json"
    if not f.is_file():
        pytest.fail(f"missing golden file {f}: run `python -m tests.regenerate_golden {name}`")
    return json.loads(f.read_text())


def check_against_golden(name: str, golden: dict, fresh: dict) -> None:
    """Assert a fresh run of case ``name`` against its golden, key by key as
    :func:`tests.regenerate_golden.check_of` says."""
    mode = CASES[name][2]
    spec = fresh["scenario"].spec
    for path, expected in golden["metrics"].items():
        got = pick(fresh["metrics"], path)
        how, why = check_of(path, mode)
        if how == "exact":
            assert got == expected, (path, why)
        elif how == "free":
            continue
        elif how == "balance":     # energy.pcc_mwh less the network's losses
            net = got - pick(fresh["metrics"], "electrical.losses_mwh")
            assert net == pytest.approx(expected - golden["metrics"]["electrical.losses_mwh"],
                                        abs=TOL["mwh"], rel=1e-6), (path, why)
        elif how.startswith("limit:"):
            limit = getattr(spec, how.split(":", 1)[1])
            assert limit is not None and got <= limit + COMPLIANCE_ABS_TOL, (path, got, limit, why)
        elif how == "swing_limit":
            assert spec.max_window_swing_mw is not None and spec.ramp_window_s <= spec.window_s
            assert got <= spec.max_window_swing_mw / spec.ramp_window_s + COMPLIANCE_ABS_TOL, (path, got, why)
        else:
            assert got == pytest.approx(expected, abs=TOL[how], rel=1e-6), (path, why)
    if "sizing" in golden:
        z, fz = golden["sizing"], fresh["sizing"]
        for st, block in z.items():
            if isinstance(block, dict) and "p_rated_mw_opt" in block:
                for k in ("p_rated_mw_opt", "e_rated_mwh_opt"):
                    assert fz[st][k] == pytest.approx(block[k], rel=TOL["usd_rel"], abs=1e-6), (st, k)
        # the objective to the solver's tolerance: the gaps both solves proved, and objective_rel
        rel = float(z.get("gap_frac", 0.0)) + float(fz.get("gap_frac", 0.0)) + TOL["objective_rel"]
        assert fz["objective_usd"] == pytest.approx(z["objective_usd"], rel=rel)
        assert fz["verified"] == z["verified"]
        assert fz["verification"]["compliant"] == z["verification"]["compliant"]
        assert fz["verification"]["rows"] == z["verification"]["rows"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_metrics(name):
    golden = _golden(name)
    check_against_golden(name, golden, run_case(name))


@pytest.fixture
def highs_options(monkeypatch):
    """Set HiGHS options over the tuned default for every solve of the test (the ``highspy``
    path and the certificates' own solves read the same table)."""
    import facility.optimize.certificates.certify as certify
    import facility.optimize.solvers.lp as lp

    solves = []
    scale = lp.objective_scale_exponent

    def counted(c):      # called once per solve_highs, after the options are read
        solves.append(dict(lp.HIGHS_OPTIONS))
        return scale(c)

    def use(options: dict) -> list:
        table = {**lp.HIGHS_OPTIONS, **options}
        monkeypatch.setattr(lp, "HIGHS_OPTIONS", table)
        monkeypatch.setattr(certify, "HIGHS_OPTIONS", table)
        monkeypatch.setattr(lp, "objective_scale_exponent", counted)
        return solves
    return use


@pytest.mark.parametrize("name", HIGHS_CASES)
@pytest.mark.parametrize("options", sorted(OTHER_HIGHS_OPTIONS))
def test_golden_under_other_highs_options(name, options, highs_options):
    """The goldens do not pin one solver's pick: the cases HiGHS solves pass under two other
    option sets (another simplex, another seed and pricing), against the same golden files."""
    solves = highs_options(OTHER_HIGHS_OPTIONS[options])
    fresh = run_case(name)
    # HiGHS solved this case, with these options
    assert solves and all(s[k] == v for s in solves for k, v in OTHER_HIGHS_OPTIONS[options].items())
    check_against_golden(name, _golden(name), fresh)


def test_every_golden_key_says_how_and_why_it_is_checked():
    for name, (_, _, mode) in CASES.items():
        for path in _golden(name)["metrics"]:
            how, why = check_of(path, mode)
            assert why and (how in TOL or how in ("exact", "free", "balance", "swing_limit")
                            or how.startswith("limit:")), path
