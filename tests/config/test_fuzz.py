"""Property-based fuzzing of the bundled scenarios (hypothesis; mutations of
:mod:`tests.config.fuzzing`).

Properties:

* ``validate`` of a mutated scenario exits 0 or 2, never 1 and never with a traceback, and a
  refusal names one of the mutated keys;
* a mutated scenario that validates, run with a short horizon, exits 0, 3 or 4, and every
  leaf of its metrics.json is finite.

The default suite draws 300 validate-only cases and 25 validate + run cases (derandomized, so
CI is reproducible), 300 + 2 seeded command-line mutations in-process
(:mod:`tests.config.cli_mutations`; 1.3 s once the modules are imported, ~3 s CPU cold) and 5
of them as real ``python -m facility`` processes, 150 validate cases and 40 validate + run
cases of the families of the newer features (:mod:`tests.config.fuzz_families`; 6 s and 17 s,
8 of the 40 reach the run); ``-m slow`` adds 2,000 random ones. On a
2-core machine shared 4-fold the four tests took 38 s (the runs), 8.7 s, 6.3 s and 6.1 s. The
long run of >= 5,000 mutations is ``python -m tests.config.fuzz_scenarios --n 5000`` (figures
in its JSON line; ``--cli-share`` mixes in command-line mutations).
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.config.fuzzing import FAMILIES, KINDS, PLAUSIBLE, check_mutation, draw_mutations, problems

_SETTINGS = dict(deadline=None, database=None, suppress_health_check=list(HealthCheck),
                 print_blob=True)


def _mutations(kinds, max_mutations=3):
    @st.composite
    def strat(draw):
        return draw_mutations(lambda seq: draw(st.sampled_from(list(seq))), max_mutations, kinds)
    return strat()


@pytest.fixture(autouse=True)
def _quiet(caplog):
    caplog.set_level(logging.ERROR)      # scenario warnings (unsmoothed GPUs, ...) are expected


@settings(max_examples=300, derandomize=True, **_SETTINGS)
@given(case=_mutations(KINDS))
def test_validate_exits_0_or_2_naming_the_key(case, tmp_path_factory):
    name, muts = case
    o = check_mutation(name, muts, tmp_path_factory.mktemp("v"), run=False)
    assert problems(o) == [], (name, muts)


@settings(max_examples=25, derandomize=True, **_SETTINGS)
@given(case=_mutations(PLAUSIBLE, max_mutations=2))
def test_validated_mutations_run_to_0_3_4_with_finite_metrics(case, tmp_path_factory):
    name, muts = case
    o = check_mutation(name, muts, tmp_path_factory.mktemp("r"), run=True)
    assert problems(o) == [], (name, muts)


@settings(max_examples=150, derandomize=True, **_SETTINGS)
@given(case=_mutations(FAMILIES))
def test_families_validate_exits_0_or_2_naming_the_key(case, tmp_path_factory):
    """The families of the newer features (hybrid units, custom technology files, sags, job
    failures, MPC grids, mixed units in trace cells, time gaps in traces), up to three at once."""
    name, muts = case
    o = check_mutation(name, muts, tmp_path_factory.mktemp("f"), run=False)
    assert problems(o) == [], (name, muts)


@settings(max_examples=40, derandomize=True, **_SETTINGS)
@given(case=_mutations(FAMILIES, max_mutations=1))
def test_families_that_validate_run(case, tmp_path_factory):
    """What validate passes of a family, run takes (exit 0, 3 or 4; never 2); an extendable
    hybrid (a sizing run of minutes) is validated only."""
    name, muts = case
    o = check_mutation(name, muts, tmp_path_factory.mktemp("fr"), run=True, run_sizing=False)
    assert problems(o) == [], (name, muts)


@pytest.mark.slow
@settings(max_examples=2000, **_SETTINGS)
@given(case=st.one_of(_mutations(KINDS), _mutations(PLAUSIBLE), _mutations(FAMILIES)))
def test_fuzz_slow(case, tmp_path_factory):
    name, muts = case
    o = check_mutation(name, muts, tmp_path_factory.mktemp("s"), run=True)
    assert problems(o) == [], (name, muts)


def test_seeded_cli_mutations_never_exit_1(tmp_path):
    """300 seeded command-line mutations (tests/config/cli_mutations.py: --set typos and bad
    values, refused --out places, wrong file kinds, a user's file under --force, an MPC without
    limits, sweeps resumed over damaged records) through ``facility.cli.main`` in-process: none
    exits 1 or prints a traceback, each exits as its kind expects, no user file changes."""
    from tests.config.cli_mutations import FAST_KINDS, fuzz_cli

    figures = fuzz_cli(300, seed=40, workdir=tmp_path / "fast", kinds=FAST_KINDS)
    assert figures["n_failures"] == 0, figures["failures"][:5]
    assert "1" not in figures["exits"] and sum(figures["exits"].values()) == 300
    assert set(figures["kinds"]) == set(FAST_KINDS)       # every kind drawn (the seed is fixed)
    # and two of the slow kind (each writes the sweep's Pareto plot: ~1 s): a sweep resumed
    # over a damaged case.json beside a user's file
    figures = fuzz_cli(2, seed=40, workdir=tmp_path / "sweep", kinds=("sweep_resume",))
    assert figures["n_failures"] == 0, figures["failures"]


def test_seeded_cli_mutations_exit_as_processes(tmp_path):
    """A handful of the same mutations as real ``python -m facility`` processes (run side by
    side): the exit status the shell sees is the one expected, never 1, no traceback."""
    import random

    from tests.config.cli_mutations import cli_problems, draw_cli_case, run_cli_cases_as_processes

    rng = random.Random(40)
    cases = [draw_cli_case(rng.choice, (kind,)) for kind in ("out_unwritable", "bad_option", "file_ext",
                                                               "set_typo", "user_file_force")]
    outcomes = run_cli_cases_as_processes(cases, tmp_path)
    bad = {repr(c): cli_problems(c, o) for c, o in zip(cases, outcomes) if cli_problems(c, o)}
    assert bad == {}
    assert [o["rc"] for o in outcomes[:3]] == [2, 2, 2]
