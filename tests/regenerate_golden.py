"""Golden regression metrics of the bundled scenarios.

``python -m tests.regenerate_golden [NAME ...]`` reruns the cases below and rewrites
``tests/data/golden/<name>.json``; ``tests/test_golden.py`` compares fresh runs against those
files through the tolerance table ``TOL`` of ``tests/conftest.py``. Regenerate only after a
deliberate model change, and say why in the commit message. Each file records the installed
versions that produced it (``versions``: facility, numpy, scipy, pandas, pandapower, highspy,
...; the test does not compare them).

Metrics that depend on which of several equal LP optima a solver returns would move with the
solver build and CPU; the dispatch LPs with a variation price carry a tie-break
(:data:`facility.optimize.model.formulation.TIE_BREAK_FRAC`) that makes their optimum unique, so the
tolerances of ``TOL`` hold across builds (combined_multi_job: pcc.band_energy_frac
0.507172 under four HiGHS option sets, which spread 0.487-0.535 without it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "data" / "golden"
SCENARIOS = HERE.parent / "scenarios"

#: name -> (scenario file, overrides, mode). Horizons are shortened to keep the suite fast.
CASES = {
    "default": ("default.toml", ["time.horizon_s=30"], "run"),
    "square_wave_rack_storage": ("square_wave_rack_storage.toml", ["time.horizon_s=30"], "run"),
    "gpu_smoothing_floor": ("gpu_smoothing_floor.toml", ["time.horizon_s=30"], "run"),
    # the MPC's deadline raised: a re-plan dropped as late (wall time) would make the result
    # depend on the machine's speed and load
    "combined_multi_job": ("combined_multi_job.toml", ["time.horizon_s=20", "jobs.finetune.start_s=5",
                                                       "controller.mpc_deadline_s=600"], "run"),
    "sizing_start_ramp": ("sizing_start_ramp.toml", [], "size"),
}

#: metric path -> tolerance kind of tests/conftest.py TOL
COMPARED = {
    "raw.p_mean_mw": "mw", "raw.max_window_swing_mw": "mw", "raw.max_ramp_up_mw_per_s": "mw",
    "pcc.p_mean_mw": "mw", "pcc.p_max_mw": "mw", "pcc.p_min_mw": "mw", "pcc.max_window_swing_mw": "mw",
    "pcc.max_ramp_up_mw_per_s": "mw", "pcc.max_ramp_down_mw_per_s": "mw", "pcc.max_ramp_mw_per_min": "mw",
    "pcc.band_energy_frac": "frac", "pcc.band_peak_mw": "mw", "pcc.dominant_freq_hz": "hz",
    "energy.raw_mwh": "mwh", "energy.pcc_mwh": "mwh", "energy.energy_overhead_frac": "frac",
    "electrical.min_vm_pu": "pu", "electrical.max_vm_pu": "pu", "electrical.losses_mwh": "mwh",
    "electrical.max_trafo_loading_percent": "percent", "electrical.max_lv_trafo_loading_percent": "percent",
    "electrical.max_ups_loading_percent": "percent", "electrical_compliance.compliant": "exact",
    "training.slowdown_frac": "frac", "compliance.compliant": "exact",
}


def run_case(name: str) -> dict:
    from facility.config import load_scenario
    from facility.simulate import run_scenario
    from facility.sizing import size_scenario

    file, overrides, mode = CASES[name]
    s = load_scenario(SCENARIOS / file, overrides)
    if mode == "size":
        _, res = size_scenario(s, plots=False)
        out = {"metrics": res.metrics, "sizing": res.sizing}
    else:
        out = {"metrics": run_scenario(s, plots=False).metrics}
    return out


def installed_versions() -> dict:
    """Versions of facility and the libraries its numbers depend on, and the Python and CPU."""
    import platform
    from importlib import metadata

    out = {}
    for name in ("facility", "numpy", "scipy", "pandas", "pandapower", "pyomo", "highspy", "numba"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["python"] = platform.python_version()
    out["machine"] = platform.machine()
    return out


def pick(tree: dict, path: str):
    node = tree
    for part in path.split("."):
        node = node[part]
    return node


def main(argv: list[str]) -> int:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in argv or list(CASES):
        data = run_case(name)
        keep = {"metrics": {p: pick(data["metrics"], p) for p in COMPARED}}
        for st, block in data["metrics"].get("storage", {}).items():
            for k in ("p_rated_mw", "e_rated_mwh", "throughput_mwh"):
                keep["metrics"][f"storage.{st}.{k}"] = block[k]
        if data.get("sizing"):
            keep["sizing"] = data["sizing"]
        keep["versions"] = installed_versions()
        (GOLDEN_DIR / f"{name}.json").write_text(json.dumps(keep, indent=2, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN_DIR / f'{name}.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
