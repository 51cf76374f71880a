"""Each library file a scenario names is read once: by :func:`facility.scenario.load_scenario`
(the checks and the resolution take the loaded objects), and not again by a ``size`` run (the
layers take ``scenario.library``) — issue 51.

Every library file goes through :func:`facility.config.files.read_toml` (GPU models, utility
specs, storage technologies, transformer and UPS types: :func:`facility.config.library.read_library`);
the grid-impact models through ``tomllib.load`` in :mod:`facility.grid_impact.library`. Both are
counted; the caches are emptied first.
"""

from __future__ import annotations

import os
import tomllib
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

import facility.grid_impact.library as gi_library
from facility.config import files
from facility.config.library import MODELS_DIR, load_gpu
from facility.config.technology import _load_technology
from facility.electrical.library import load_trafo_type, load_ups_type
from facility.scenario import load_scenario

REPO = Path(__file__).resolve().parents[2]
SIZING = REPO / "scenarios" / "sizing_start_ramp.toml"


@pytest.fixture
def reads(monkeypatch):
    """A Counter of the library files read (real paths), from empty caches."""
    for cache in (load_gpu, _load_technology, load_trafo_type, load_ups_type, gi_library._read):
        cache.cache_clear()
    seen: Counter = Counter()
    real_read_toml = files.read_toml

    def read_toml(path, *args, **kwargs):
        seen[os.path.realpath(path)] += 1
        return real_read_toml(path, *args, **kwargs)

    def load(fh):
        seen[os.path.realpath(fh.name)] += 1
        return tomllib.load(fh)

    monkeypatch.setattr(files, "read_toml", read_toml)
    monkeypatch.setattr(gi_library, "tomllib", SimpleNamespace(load=load, TOMLDecodeError=tomllib.TOMLDecodeError))
    yield seen
    for cache in (load_gpu, _load_technology, load_trafo_type, load_ups_type, gi_library._read):
        cache.cache_clear()


def _library_reads(seen: Counter) -> Counter:
    """The reads of library files: under models/ (the scenario file itself is not one)."""
    models = os.path.realpath(MODELS_DIR)
    return Counter({p: n for p, n in seen.items() if p.startswith(models + os.sep)})


def _named(sc) -> set[str]:
    """The library files the scenario names (bundled names: none of its references is a path)."""
    def file(sub, name):
        return os.path.realpath(name if files.is_explicit_path(name) else MODELS_DIR / sub / f"{name}.toml")

    out = {file("gpus", j.gpu) for j in sc.jobs}
    g = sc.grid
    out |= {file("trafos", t) for t in (g.trafo_type, g.lv_trafo_type) if t}
    out |= {file("ups", g.ups_type)} if g.ups_type else set()
    for name in ("rack_storage", "ups", "bess"):
        st = getattr(sc, name)
        out |= {file("storage", t) for t in ([st.technology] if st.technology else []) + list(st.technologies or [])}
    if sc.spec.base:
        out.add(file("specs", sc.spec.base))
    return out


def _assert_once(seen: Counter, sc) -> None:
    lib = _library_reads(seen)
    assert {p: n for p, n in lib.items() if n != 1} == {}, "library files read more than once"
    assert set(lib) == _named(sc)


def test_loading_reads_each_named_library_file_once(reads):
    sc = load_scenario(SIZING)
    assert _library_reads(reads)
    _assert_once(reads, sc)
    # the sizing scenario names its GPU model and the default UPS type
    assert {Path(p).relative_to(os.path.realpath(MODELS_DIR)).as_posix() for p in _library_reads(reads)} \
        == {"gpus/b200.toml", "ups/double_conversion.toml"}


def test_loading_reads_technologies_trafos_and_spec_once(reads):
    sc = load_scenario(REPO / "scenarios" / "default.toml",
                       ["grid.trafo_type=sub_230_34p5_200mva", "grid.lv_trafo_type=pad_34p5_0p48_3mva",
                        "spec=ercot_2026_proposal", "bess.technology=lfp_2h", "bess.enabled=true",
                        "bess.p_rated_mw=5", "bess.e_rated_mwh=10"])
    _assert_once(reads, sc)
    assert len(_library_reads(reads)) == 6   # GPU, two transformers, UPS, spec, technology


def test_a_size_run_reads_each_named_library_file_once(reads, tmp_path):
    from facility.sizing import size_scenario

    sc = load_scenario(SIZING, ["time.horizon_s=600", "jobs.0.stop_s=480"])
    size_scenario(sc, out_dir=tmp_path / "out", plots=False)
    _assert_once(reads, sc)


def test_grid_impact_models_are_read_once_each(reads, tmp_path):
    """With [grid_impact] on, a run reads each grid-impact file at most once: the library tells
    a shaft from a mode set by reading its files (six small TOML files, cached), so files the
    scenario does not name are read too, but none twice."""
    from facility.run import run_scenario

    sc = load_scenario(REPO / "scenarios" / "default.toml",
                       ["time.horizon_s=20", "grid_impact.enabled=true",
                        "grid_impact.generator_share_frac=0.3", "grid_impact.mode_set=kundur_two_area"])
    run_scenario(sc, out_dir=tmp_path / "out", plots=False)
    lib = _library_reads(reads)
    assert {p: n for p, n in lib.items() if n != 1} == {}, "library files read more than once"
    gi = os.path.realpath(MODELS_DIR / "grid_impact")
    assert {os.path.realpath(MODELS_DIR / "grid_impact" / f) for f in ("ieee_fbm.toml", "kundur_two_area.toml")} \
        <= {p for p in lib if p.startswith(gi + os.sep)}
    assert _named(sc) <= set(lib)
