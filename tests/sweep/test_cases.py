"""Case expansion: value lists, inclusive ranges, Cartesian order, CSV rows, stable ids."""

from __future__ import annotations

import pytest

from facility.errors import ScenarioError
from facility.sweep import expand_cases
from facility.sweep.cases import case_ids, expand_values, split_values


def test_split_values_respects_brackets_and_quotes():
    assert split_values('1, 2,[3,4],"a,b",{x=1,y=2}') == ["1", "2", "[3,4]", '"a,b"', "{x=1,y=2}"]


def test_range_is_inclusive_with_n_points():
    assert expand_values("bess.e_rated_mwh=1:20:5") == ("bess.e_rated_mwh", ["1.0", "5.75", "10.5", "15.25", "20.0"])
    assert expand_values("a.b=0:20:5")[1] == ["0", "5", "10", "15", "20"]
    assert expand_values("a.b=0.0:1:3")[1] == ["0.0", "0.5", "1.0"]
    assert expand_values("a.b=5:5:1")[1] == ["5"]
    assert expand_values("a.b=1:0:3")[1] == ["1.0", "0.5", "0.0"]


@pytest.mark.parametrize("bad", ["a.b=1:2:0", "a.b=1:2:2.5", "a.b=1:2:1", "a.b", "=3", "a.b=1,,2"])
def test_bad_items_raise(bad):
    with pytest.raises(ScenarioError):
        expand_values(bad)


def test_non_range_colon_values_stay_strings():
    assert expand_values("x.y=10:00")[1] == ["10:00"]
    assert expand_values("x.y=a:b:c")[1] == ["a:b:c"]


def test_cartesian_product_last_fastest():
    cases = expand_cases(["a.x=1,2", "b.y=p,q,r"])
    assert len(cases) == 6
    assert [c["b.y"] for c in cases] == ["p", "q", "r"] * 2
    assert [c["a.x"] for c in cases] == ["1"] * 3 + ["2"] * 3


def test_no_items_is_one_base_case():
    assert expand_cases([]) == [{}]


def test_key_twice_raises():
    with pytest.raises(ScenarioError, match="given twice"):
        expand_cases(["a.x=1", "a.x=2"])


def test_csv_rows_times_set_items(tmp_path):
    csv = tmp_path / "cases.csv"
    csv.write_text("case_id,gpu_smoothing.enabled,gpu_smoothing.floor_frac\noff,false,\nf50,true,0.5\n")
    cases = expand_cases(["spec=lipa,ieso_2026"], csv)
    assert len(cases) == 4
    assert cases[0] == {"case_id": "off-0", "gpu_smoothing.enabled": "false", "spec": "lipa"}
    assert cases[3] == {"case_id": "f50-1", "gpu_smoothing.enabled": "true", "gpu_smoothing.floor_frac": "0.5",
                        "spec": "ieso_2026"}
    assert case_ids(cases) == ["off-0", "off-1", "f50-0", "f50-1"]
    assert [c["case_id"] for c in expand_cases([], csv)] == ["off", "f50"]
    csv.write_text("case_id,spec\na,lipa\na,ieso_2026\n")
    with pytest.raises(ScenarioError, match="case_id values repeat"):
        case_ids(expand_cases([], csv))


def test_csv_and_set_same_key_raises(tmp_path):
    csv = tmp_path / "cases.csv"
    csv.write_text("spec\nlipa\n")
    with pytest.raises(ScenarioError, match="both set"):
        expand_cases(["spec=lipa"], csv)


def test_case_ids_stable_and_salted():
    cases = expand_cases(["a.x=1,2,3"])
    ids = case_ids(cases, "run")
    assert ids == case_ids(expand_cases(["a.x=1,2,3"]), "run")
    assert ids[0].startswith("c0000-") and len(set(ids)) == 3
    assert case_ids(cases, "size") != ids
