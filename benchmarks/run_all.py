"""Run every benchmark in this folder; each prints one or more JSON lines.

Usage: ``python benchmarks/run_all.py [--only NAME ...]``. Machines are noisy: each benchmark
reports a ratio against the naive approach measured in the same run, not absolute seconds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", nargs="*", default=None, help="benchmark names (bench_<name>.py)")
    args = parser.parse_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.only]
    failed = 0
    for script in scripts:
        print(f"# {script.name}", flush=True)
        rc = subprocess.call([sys.executable, str(script)])
        if rc:
            print(f"# {script.name} exited {rc}", flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
