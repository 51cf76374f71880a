"""The bundled study (scenarios/studies/) stays valid: every case of it passes the schema and checks."""

from __future__ import annotations

import re
from pathlib import Path

from facility.config import list_specs
from facility.scenario import load_scenario
from facility.sweep import expand_cases

STUDIES = Path(__file__).resolve().parents[2] / "scenarios" / "studies"


def _set_items_of_script() -> list[str]:
    text = (STUDIES / "paper_100mw.sh").read_text()
    return re.findall(r"--set (\S+)", text)


def test_paper_100mw_covers_every_library_spec():
    items = _set_items_of_script()
    specs = [i for i in items if i.startswith("spec=")]
    assert len(specs) == 1
    assert sorted(specs[0].removeprefix("spec=").split(",")) == list_specs()


def test_paper_100mw_every_case_validates():
    cases = expand_cases(_set_items_of_script(), STUDIES / "paper_100mw_cases.csv")
    assert len(cases) == 24 * len(list_specs())
    for case in cases:
        overrides = [f"{k}={v}" for k, v in case.items() if k != "case_id"]
        s = load_scenario(STUDIES / "paper_100mw.toml", overrides)
        assert s.spec.base in list_specs()
