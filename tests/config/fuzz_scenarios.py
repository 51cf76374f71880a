"""The long fuzz run: many random mutations of the bundled scenarios through ``validate`` and
``run`` (see :mod:`tests.config.fuzzing`); prints its figures as one JSON line.

    PYTHONPATH=$PWD python -m tests.config.fuzz_scenarios --n 5000 --seed 1 [--no-run] [--log FILE]
        [--cli-share 0.5] [--run-share 0.05] [--family-share 0.4]

``--family-share`` of the scenario mutations draw from the families of the newer features
(:data:`tests.config.fuzzing.FAMILIES`: hybrid units, custom technology files, sags, job
failures, MPC grids, mixed units in trace cells, time gaps in traces); ``--cli-share`` of the mutations are command lines (:mod:`tests.config.cli_mutations`) instead
of scenario mutations; ``--run-share`` of the scenario mutations that validate also run.

Exit status 0 when no mutation broke the contract (no exit 1, no traceback, every refusal
names a mutated key, finite metrics), 1 otherwise (the failures are listed).
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import random
import sys
import tempfile
import time
import warnings
from pathlib import Path

from tests.config.fuzzing import FAMILIES, KINDS, PLAUSIBLE, check_mutation, draw_mutations, problems


def fuzz(n: int, seed: int, run: bool = True, log=None, max_mutations: int = 3,
         plausible_share: float = 0.5, cli_share: float = 0.0, run_share: float = 1.0,
         family_share: float = 0.0, run_sizing: bool = True) -> dict:
    """Run ``n`` random mutations; return the figures (counts of exits, failures, time)."""
    from tests.config.cli_mutations import FAST_KINDS, cli_problems, draw_cli_case, run_cli_case

    rng = random.Random(seed)
    t0 = time.perf_counter()
    validate = collections.Counter()
    runs = collections.Counter()
    counts = collections.Counter()
    cli = collections.Counter()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            if rng.random() < cli_share:
                # a sweep resumed over a damaged record takes seconds, the other kinds milliseconds
                case = draw_cli_case(rng.choice, ("sweep_resume",) if rng.random() < 0.03 else FAST_KINDS)
                counts[f"cli:{case.kind}"] += 1
                o = run_cli_case(case, Path(tmp) / f"cli{i}")
                cli[str(o["rc"])] += 1
                bad = cli_problems(case, o)
                if bad:
                    failures.append({"i": i, "cli": repr(case), "problems": bad})
                if log is not None:
                    log.write(json.dumps({"i": i, "cli": repr(case), "rc": o["rc"], "problems": bad}) + "\n")
                    log.flush()
                continue
            if rng.random() < family_share:
                kinds = FAMILIES
            else:
                kinds = PLAUSIBLE if rng.random() < plausible_share else KINDS
            name, muts = draw_mutations(rng.choice, max_mutations, kinds)
            counts.update(m.kind for m in muts)
            o = check_mutation(name, muts, Path(tmp), run=run and rng.random() < run_share, run_sizing=run_sizing)
            validate[str(o.validate_rc)] += 1
            if o.run_rc is not None:
                runs[str(o.run_rc)] += 1
            bad = problems(o)
            if bad:
                failures.append({"i": i, "scenario": name, "mutations": [repr(m) for m in muts],
                                 "problems": bad})
            if log is not None:
                log.write(json.dumps({"i": i, "scenario": name, "mutations": [repr(m) for m in muts],
                                      "validate": o.validate_rc, "run": o.run_rc, "problems": bad}) + "\n")
                log.flush()
    return {"mutations": n, "seed": seed, "wall_s": round(time.perf_counter() - t0, 1),
            "validate_exits": dict(validate), "run_exits": dict(runs), "cli_exits": dict(cli),
            "kinds": dict(counts),
            "n_failures": len(failures), "failures": failures[:50]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="number of mutated scenarios")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-run", action="store_true", help="validate only")
    ap.add_argument("--log", type=Path, default=None, help="one JSON line per mutation")
    ap.add_argument("--plausible-share", type=float, default=0.5,
                    help="share of cases drawn from the plausible kinds only (more reach the run)")
    ap.add_argument("--cli-share", type=float, default=0.0,
                    help="share of command-line mutations (tests/config/cli_mutations.py)")
    ap.add_argument("--family-share", type=float, default=0.4,
                    help="share of the scenario mutations drawn from the families of the newer features")
    ap.add_argument("--no-run-sizing-families", action="store_true",
                    help="validate, but do not run, the family cases that make a storage extendable")
    ap.add_argument("--run-share", type=float, default=1.0,
                    help="share of the validating scenario mutations that also run")
    args = ap.parse_args(argv)
    logging.disable(logging.WARNING)   # the scenarios' own warnings are not failures
    warnings.simplefilter("ignore")
    log = args.log.open("w") if args.log else None
    figures = fuzz(args.n, args.seed, run=not args.no_run, log=log, plausible_share=args.plausible_share,
                   cli_share=args.cli_share, run_share=args.run_share, family_share=args.family_share,
                   run_sizing=not args.no_run_sizing_families)
    print(json.dumps(figures))
    return 0 if figures["n_failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
