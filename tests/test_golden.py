"""Golden regression: bundled scenarios against tests/data/golden/ through the tolerance table."""

from __future__ import annotations

import json

import pytest

from tests.conftest import TOL
from tests.regenerate_golden import CASES, COMPARED, GOLDEN_DIR, pick, run_case

_KIND_OF_STORAGE = {"p_rated_mw": "mw", "e_rated_mwh": "mwh", "throughput_mwh": "mwh"}


def _tol(path: str) -> str:
    if path.startswith("storage."):
        return _KIND_OF_STORAGE[path.rsplit(".", 1)[1]]
    return COMPARED[path]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_metrics(name):
    f = GOLDEN_DIR / f"{name}.json"
    if not f.is_file():
        pytest.fail(f"missing golden file {f}: run `python -m tests.regenerate_golden {name}`")
    golden = json.loads(f.read_text())
    fresh = run_case(name)
    for path, expected in golden["metrics"].items():
        got = pick(fresh["metrics"], path)
        kind = _tol(path)
        if kind == "exact":
            assert got == expected, path
        else:
            assert got == pytest.approx(expected, abs=TOL[kind], rel=1e-6), path
    if "sizing" in golden:
        for st, block in golden["sizing"].items():
            if isinstance(block, dict) and "p_rated_mw_opt" in block:
                for k in ("p_rated_mw_opt", "e_rated_mwh_opt"):
                    assert fresh["sizing"][st][k] == pytest.approx(block[k], rel=TOL["usd_rel"], abs=1e-6), (st, k)
        assert fresh["sizing"]["objective_usd"] == pytest.approx(golden["sizing"]["objective_usd"],
                                                                 rel=TOL["usd_rel"])
