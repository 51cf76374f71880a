"""No new swings from the co-design switch, on the sweep study that showed one.

Issue 7's closing note: in scenarios/studies/paper_100mw (one 100 MW job, moving average), a
90 % GPU floor + 25 MW / 10 kWh rack storage gave a PCC window swing of 37.9 MW under the
co-design, against 8.8 MW for the floor alone: the switch between the two load traces made
a swing that neither measure has. Here every design of the study's case grid that has both a
GPU floor and storage runs three ways (co-design, GPU controls always on, storage alone).

Where the storage alone cannot carry the load (it saturates), the co-design's swing must not
exceed the smaller of the other two: the GPU controls stay engaged (from the start, with the
warm start) as long as the SoC levels leave no room for one swing of the plain load both ways,
and the site matches the always-on one. Where the storage alone carries the load, the
co-design never engages and is the storage-only site (the GPU floor's energy is not burned);
its swing is then not above the larger of the two (on those designs the always-on site is a
little flatter still, 0.05-0.23 MW against 0.32 MW / 5 s, at about ten times the energy
overhead: reaching it would mean keeping the GPU controls on for good).
"""

import csv
import warnings
from pathlib import Path

import pytest

from facility.scenario import load_scenario
from facility.run.orchestrator import run_scenario

STUDY = Path(__file__).resolve().parents[2] / "scenarios" / "studies"


def _designs():
    rows = list(csv.DictReader((STUDY / "paper_100mw_cases.csv").open()))
    return {r["case_id"]: [f"{k}={v}" for k, v in r.items() if k != "case_id" and v != ""]
            for r in rows if r["gpu_smoothing.enabled"] == "true" and r["rack_storage.enabled"] == "true"}


DESIGNS = _designs()


def _swings(case, horizon_s):
    base = DESIGNS[case] + ["spec=paper_example", f"time.horizon_s={horizon_s}"]
    out = {}
    out["storage_only_saturated"] = False
    for label, sets in (("codesign", []), ("always_on", ["controller.codesign=false"]),
                        ("storage_only", ["gpu_smoothing.enabled=false"])):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = run_scenario(load_scenario(STUDY / "paper_100mw.toml", base + sets), plots=False)
        out[label] = res.metrics["pcc"]["max_window_swing_mw"]
        out[label + "_engaged"] = res.metrics["gpu"]["engaged_frac"]
        if label == "storage_only":
            out["storage_only_saturated"] = any(v["saturated"] for v in res.metrics["storage"].values())
    return out


def _check(sw):
    if sw["storage_only_saturated"]:
        assert sw["codesign"] <= min(sw["always_on"], sw["storage_only"]) + 1e-6, sw
    else:
        assert sw["codesign_engaged"] == 0.0, sw
        # (the same drawn load; the network is built for the peaks of both traces, which
        # moves its losses by a few kW)
        assert sw["codesign"] == pytest.approx(sw["storage_only"], abs=0.01), sw
    assert sw["codesign"] <= max(sw["always_on"], sw["storage_only"]) + 1e-6, sw


def test_the_37_9_mw_case_matches_gpu_controls_always_on():
    sw = _swings("f90_s25", 30.0)
    _check(sw)
    assert sw["codesign"] == pytest.approx(sw["always_on"], abs=1e-6)
    assert sw["codesign_engaged"] == 1.0 and sw["storage_only"] > 20.0


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(DESIGNS))
def test_no_codesign_design_swings_more_than_the_measure_it_needs(case):
    _check(_swings(case, 120.0))
