"""Every bundled scenario keeps the promise of its header (or of scenarios/README.md)."""

from __future__ import annotations

import re

import pytest

from facility.scenario import load_scenario
from facility.run.orchestrator import run_scenario
from tests.conftest import SCENARIOS, SHARED_EXAMPLES

#: The four copies of the reference examples: byte-identical to the originals, so their
#: promise lives in scenarios/README.md (test_schema checks the copies are unchanged).
SHARED_COPIES = {"combined_multi_job.toml", "gpu_smoothing_floor.toml", "sizing_start_ramp.toml",
                 "square_wave_rack_storage.toml"}

#: Promised compliance that the code does not deliver yet, and why (xfail until it lands).
PENDING: dict[str, str] = {}

#: Full runs that take more than a few seconds here.
SLOW = {"combined_multi_job.toml", "sizing_start_ramp.toml", "sizing_stochastic_hour.toml", "sizing_rack_and_bess.toml",
        "crash_restart.toml", "crash_ercot_30k.toml", "studies/crash_100mw.toml"}

_HEADER = re.compile(r"^# expect: (compliant|non-compliant)(?::\s*([\w, ]+?))?(?:\s+[—(-].*)?$")
_ROW = re.compile(r"^\|\s*`([^`]+)`\s*(\\\*)?\s*\|\s*(compliant|non-compliant)\s*\|([^|]*)\|")


def _files() -> list[str]:
    return sorted(str(p.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("*.toml"))


def _header_promise(rel: str):
    lines = [ln for ln in (SCENARIOS / rel).read_text().splitlines() if ln.startswith("# expect:")]
    if not lines:
        return None
    assert len(lines) == 1, f"{rel}: more than one '# expect:' line"
    m = _HEADER.match(lines[0])
    assert m, f"{rel}: malformed promise {lines[0]!r}"
    return m.group(1), frozenset(x.strip() for x in (m.group(2) or "").split(",") if x.strip())


def _readme_table() -> dict:
    rows = {}
    for ln in (SCENARIOS / "README.md").read_text().splitlines():
        m = _ROW.match(ln)
        if m:
            rows[m.group(1)] = (m.group(3), frozenset(re.findall(r"`(\w+)`", m.group(4))), bool(m.group(2)))
    return rows


def promise(rel: str):
    """(expect, failing limits) of a bundled scenario."""
    head = _header_promise(rel)
    if head is not None:
        return head
    expect, failing, _ = _readme_table()[rel]
    return expect, failing


def test_every_scenario_has_exactly_one_promise_and_the_table_agrees():
    table = _readme_table()
    assert set(table) == set(_files()), "scenarios/README.md must list every bundled scenario"
    for rel in _files():
        head = _header_promise(rel)
        expect, failing, starred = table[rel]
        if rel in SHARED_COPIES:
            assert head is None and starred, f"{rel}: a shared copy keeps its promise in the README only"
        else:
            assert head is not None, f"{rel}: no '# expect:' line in its header"
            assert head == (expect, failing), f"{rel}: header and scenarios/README.md disagree"
        assert (expect == "compliant") == (not failing), f"{rel}: non-compliant names its failing limits"


def test_shared_copies_are_the_examples_of_the_project():
    if SHARED_EXAMPLES.is_dir():
        assert {p.name for p in SHARED_EXAMPLES.glob("*.toml")} == SHARED_COPIES


def _params():
    out = []
    for rel in _files():
        marks = []
        if rel in SLOW:
            marks.append(pytest.mark.slow)
        if rel in PENDING:
            marks.append(pytest.mark.xfail(reason=PENDING[rel], strict=False))
        out.append(pytest.param(rel, marks=marks, id=rel))
    return out


@pytest.mark.parametrize("rel", _params())
def test_bundled_scenario_keeps_its_promise(rel):
    expect, failing = promise(rel)
    res = run_scenario(load_scenario(SCENARIOS / rel), plots=False)
    comp = res.metrics["compliance"]
    got = frozenset(k for k, v in comp.items() if k != "compliant" and not v)
    assert (comp["compliant"], got) == (expect == "compliant", failing), (
        f"{rel}: promised {expect} {sorted(failing)}, got failing {sorted(got)}")
    # no bundled scenario demonstrates an electrical violation: every one keeps its equipment
    # within its ratings and its buses within their voltage bands
    el = res.metrics["electrical_compliance"]
    assert el["compliant"], (f"{rel}: electrical limits violated: "
                             f"{[k for k, v in el.items() if v is False]}")
