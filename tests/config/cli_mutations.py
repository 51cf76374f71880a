"""Mutations of a command line, as a user meets them first: ``--set`` typos and bad values,
``--out`` places that must be refused, file names of the wrong kind, a user's file under
``--force``, an MPC with nothing to hold, a sweep resumed over damaged records.

Each :class:`CliCase` runs through ``facility.cli.main`` in-process (:func:`run_cli_case`),
cheap enough for hundreds per second: every case is refused before a simulation, or is a
``validate``, or (``sweep_resume``) a sweep of the synthetic case function. The contract
checked (:func:`cli_problems`): never exit 1, never a traceback, the exit code the case
expects, and a user's file is never changed or deleted.

=================== ============================================================================
kind                what it does
=================== ============================================================================
set_typo            ``validate --set`` of a real key with a typo (dropped / doubled / swapped
                    letter, unknown index or job name, an extra level)
set_value           ``validate --set`` of a real key with a bad or odd value
out_file            ``run --out`` an existing file
out_foreign         ``run``/``size``/``sweep --out`` a folder with a user's (hidden) file, with
                    or without ``--force`` / ``--resume``
out_unwritable      ``--out`` under /proc, under a file, ``.``, ``..``, the empty string
file_ext            ``trace``/``export-net``/``record --out`` with a name of the wrong kind
user_file_force     ``trace``/``export-net --out`` a user's file with ``--force``
bad_option          ``--max-memory-gib``/``--workers``/``--mode`` with a bad value (argparse)
mpc_no_limits       ``validate`` of an MPC scenario without ``[spec]`` limits
sweep_resume        ``sweep --resume`` over a finished sweep whose ``case.json`` was damaged
                    (truncated, empty, not JSON, another record, removed) beside a user's file
=================== ============================================================================
"""

from __future__ import annotations

import contextlib
import io
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"
SYNTHETIC = "facility.sweep.synthetic:synthetic_case"

CLI_KINDS = ("set_typo", "set_value", "out_file", "out_foreign", "out_unwritable", "file_ext",
             "user_file_force", "bad_option", "mpc_no_limits", "sweep_resume")
#: The kinds that take milliseconds (``sweep_resume`` runs a sweep and writes its study
#: outputs: ~2 s a case).
FAST_KINDS = tuple(k for k in CLI_KINDS if k != "sweep_resume")

#: Real keys of scenarios/default.toml (and of every scenario's schema) the typos start from.
_KEYS = ("rack_storage.p_rated_mw", "rack_storage.e_rated_mwh", "jobs.0.n_gpus", "jobs.pretrain.n_gpus",
         "jobs.0.period_s", "time.dt_s", "time.horizon_s", "spec.window_s", "spec.max_window_swing_mw",
         "controller.kind", "controller.window_s", "site.pue", "bess.enabled", "seed")
_VALUES = ("abc", "", "-1", "0", "1e400", "nan", "inf", "-inf", "[1,2]", "{a=1}", "true", "1e-300",
           "99999999999999999999", "'x'", "\"unterminated", "1,2,3", "10:20:0", "0x10")
_MARKER = "user data, keep\n"


@dataclass
class CliCase:
    """One mutated command line: ``argv`` (``{wd}`` is the case's work folder), the files a
    user owns there (``user_files``: relative path -> content), the exit codes allowed."""

    kind: str
    argv: list
    allowed: tuple = (0, 2)
    user_files: dict = field(default_factory=dict)
    setup: str = ""

    def __repr__(self) -> str:
        return f"{self.kind}({' '.join(map(str, self.argv))[:160]})"


def _typo(key: str, choose) -> str:
    parts = key.split(".")
    how = choose(("drop", "double", "swap", "index", "name", "deeper"))
    leaf = parts[-1]
    if how == "drop" and len(leaf) > 2:
        i = choose(range(len(leaf)))
        parts[-1] = leaf[:i] + leaf[i + 1:]
    elif how == "double":
        i = choose(range(len(leaf)))
        parts[-1] = leaf[:i] + leaf[i] + leaf[i:]
    elif how == "swap" and len(leaf) > 3:
        i = choose(range(len(leaf) - 1))
        parts[-1] = leaf[:i] + leaf[i + 1] + leaf[i] + leaf[i + 2:]
    elif how == "index":
        return f"jobs.{choose((1, 7, -1, 99))}.n_gpus"
    elif how == "name":
        return f"jobs.{choose(('pretrian', 'llm', 'x'))}.n_gpus"
    else:
        parts.append(choose(("x", "0", "max")))
    return ".".join(parts)


def draw_cli_case(choose, kinds=CLI_KINDS) -> CliCase:
    """One mutated command line (``choose(sequence)`` picks; see the module docstring)."""
    kind = choose(kinds)
    default = str(SCENARIOS / "default.toml")
    if kind == "set_typo":
        key = _typo(choose(_KEYS), choose)
        return CliCase(kind, ["validate", default, "--set", f"{key}={choose(('8000', '10', 'mpc'))}"])
    if kind == "set_value":
        return CliCase(kind, ["validate", default, "--set", f"{choose(_KEYS)}={choose(_VALUES)}"])
    if kind == "out_file":
        return CliCase(kind, [choose(("run", "size")), default, "--out", "{wd}/notes.txt",
                              *choose(((), ("--force",)))], allowed=(2,),
                       user_files={"notes.txt": _MARKER})
    if kind == "out_foreign":
        name = choose(("notes.txt", ".my_notes.txt", "cases/.keep_me", "cases/my_analysis/important.txt"))
        cmd = choose(("run", "size", "sweep"))
        extra = choose(((), ("--force",))) if cmd != "sweep" else choose(((), ("--force",), ("--resume",)))
        argv = [cmd, default, "--out", "{wd}/out", *extra]
        if cmd == "sweep":
            argv += ["--set", "rack_storage.p_rated_mw=10,20", "--case-fn", SYNTHETIC, "--workers", "1",
                     "--no-progress"]
        return CliCase(kind, argv, allowed=(2,), user_files={f"out/{name}": _MARKER})
    if kind == "out_unwritable":
        where = choose(("/proc/facility-x/y", "{wd}/a_file/run", ".", "..", "", "{wd}/sub/.."))
        cmd = choose(("run", "size", "trace", "export-net"))
        if cmd in ("trace", "export-net") and where not in (".", "..", "", "{wd}/sub/.."):
            where += ".json" if cmd == "export-net" else ".csv"
        return CliCase(kind, [cmd, default, "--out", where], allowed=(2,),
                       user_files={"a_file": _MARKER, "sub/keep.txt": _MARKER})
    if kind == "file_ext":
        cmd = choose(("trace", "export-net"))
        name = choose(("notes.txt", "net.csv", "t.xlsx", "noext", "x.json.bak")) if cmd == "export-net" \
            else choose(("notes.txt", "t.json", "t.xlsx", "noext"))
        return CliCase(kind, [cmd, default, "--out", f"{{wd}}/{name}", *choose(((), ("--force",)))],
                       allowed=(2,))
    if kind == "user_file_force":
        cmd = choose(("trace", "export-net"))
        name = "measured.csv" if cmd == "trace" else "net.json"
        return CliCase(kind, [cmd, default, "--out", f"{{wd}}/{name}", "--force"], allowed=(2,),
                       user_files={name: _MARKER})
    if kind == "bad_option":
        opt = choose((("--max-memory-gib", choose(("-1", "0", "abc", "inf", "nan"))),
                      ("--workers", choose(("0", "-2", "two"))), ("--mode", choose(("fast", ""))),
                      ("--executor", "slurm")))
        cmd = "sweep" if opt[0] in ("--workers", "--mode", "--executor") else choose(("validate", "run"))
        argv = [cmd, default, *opt]
        if cmd != "validate":
            argv += ["--out", "{wd}/never"]
        return CliCase(kind, argv, allowed=(2,))
    if kind == "mpc_no_limits":
        return CliCase(kind, ["validate", "{wd}/mpc.toml", "--set", f"time.horizon_s={choose((10, 60, 600))}"],
                       allowed=(0,), setup="mpc")
    if kind == "sweep_resume":
        how = choose(("truncate", "empty", "garbage", "list", "other_id", "remove", "binary"))
        return CliCase(kind, ["sweep", "{wd}/syn.toml", "--set", "spec=paper_example,caiso_2026_straw",
                              "--out", "{wd}/sw", "--resume", "--case-fn", SYNTHETIC, "--workers", "1",
                              "--no-progress"], allowed=(0,), setup=f"sweep:{how}",
                       user_files={"sw/cases/.keep_me": _MARKER})
    raise AssertionError(kind)  # pragma: no cover


def _mpc_scenario(path: Path) -> None:
    import tomllib

    import tomli_w

    raw = tomllib.loads((SCENARIOS / "default.toml").read_text())
    raw.pop("spec", None)
    raw["controller"] = {"kind": "mpc"}
    path.write_text(tomli_w.dumps(raw))


_SWEEP_CACHE: dict = {}


def _finished_sweep(wd: Path) -> Path:
    """A finished 2-case synthetic sweep, made once per process and copied."""
    from facility.sweep import run_sweep
    from facility.sweep.synthetic import SYNTHETIC_SCENARIO_TOML

    if "dir" not in _SWEEP_CACHE or not Path(_SWEEP_CACHE["dir"]).is_dir():
        import tempfile

        base = Path(tempfile.mkdtemp(prefix="facility-fuzz-sweep-"))
        (base / "syn.toml").write_text(SYNTHETIC_SCENARIO_TOML.format(description=""))
        run_sweep(base / "syn.toml", ["spec=paper_example,caiso_2026_straw"], base / "sw", case_fn=SYNTHETIC,
                  workers=1, progress=False)
        _SWEEP_CACHE["dir"] = str(base)
    base = Path(_SWEEP_CACHE["dir"])
    shutil.copy(base / "syn.toml", wd / "syn.toml")
    shutil.copytree(base / "sw", wd / "sw")
    return wd / "sw"


def _damage(sw: Path, how: str) -> None:
    rec = sorted(p for p in (sw / "cases").iterdir() if not p.name.startswith("."))[0] / "case.json"
    text = rec.read_text()
    if how == "truncate":
        rec.write_text(text[: len(text) // 3])
    elif how == "empty":
        rec.write_text("")
    elif how == "garbage":
        rec.write_text("not json {")
    elif how == "list":
        rec.write_text("[1, 2, 3]")
    elif how == "other_id":
        rec.write_text(text.replace('"case_id": "c', '"case_id": "x', 1))
    elif how == "binary":
        rec.write_bytes(b"\xff\xfe\x00\x01")
    else:
        rec.unlink()


def _setup(case: CliCase, wd: Path) -> list[str]:
    """Prepare ``wd`` for ``case`` (scenario, damaged sweep, the user's files); the argv."""
    wd.mkdir(parents=True, exist_ok=True)
    if case.setup == "mpc":
        _mpc_scenario(wd / "mpc.toml")
    elif case.setup.startswith("sweep:"):
        _damage(_finished_sweep(wd), case.setup.split(":", 1)[1])
    for rel, text in case.user_files.items():
        f = wd / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return [a.replace("{wd}", str(wd)) if isinstance(a, str) else a for a in case.argv]


def _changed(case: CliCase, wd: Path) -> list[str]:
    return [rel for rel, text in case.user_files.items()
            if not (wd / rel).is_file() or (wd / rel).read_text() != text]


def run_cli_case(case: CliCase, wd: Path) -> dict:
    """Set up ``case`` in ``wd`` (an empty folder), run it; ``rc``, ``err`` and what changed."""
    from facility.cli import main

    argv = _setup(case, wd)
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            rc = main(argv)
        except SystemExit as exc:   # argparse: its usage error is exit 2
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - an escape is a finding, not a crash of the run
            rc, err = 1, io.StringIO(f"escaped: {type(exc).__name__}: {exc}")
    return {"rc": rc, "err": err.getvalue(), "changed": _changed(case, wd)}


def run_cli_cases_as_processes(cases: list[CliCase], workdir: Path, timeout_s: float = 120.0) -> list[dict]:
    """Run each case as its own ``python -m facility`` process (all at once): the exit status
    the shell sees, stderr, and what changed — the in-process runner cannot see an exit
    status that only the interpreter's shutdown sets."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = []
    for i, case in enumerate(cases):
        wd = Path(workdir) / f"p{i}"
        argv = _setup(case, wd)
        procs.append((case, wd, subprocess.Popen([sys.executable, "-m", "facility", *argv], cwd=wd, env=env,
                                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    out = []
    for case, wd, p in procs:
        try:
            _, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        out.append({"rc": p.returncode, "err": err, "changed": _changed(case, wd)})
    return out


def cli_problems(case: CliCase, outcome: dict) -> list[str]:
    """What breaks the contract (empty = fine)."""
    out = []
    if outcome["rc"] == 1:
        out.append(f"exit 1: {outcome['err'].strip()[-400:]}")
    elif outcome["rc"] not in case.allowed:
        out.append(f"exit {outcome['rc']} (expected {case.allowed}): {outcome['err'].strip()[-400:]}")
    if "Traceback" in outcome["err"]:
        out.append("printed a traceback")
    if outcome["changed"]:
        out.append(f"a user's file was changed or deleted: {outcome['changed']}")
    return out


def fuzz_cli(n: int, seed: int, workdir: Path, kinds=CLI_KINDS) -> dict:
    """``n`` seeded CLI mutations; the exit codes, kinds and failures."""
    import collections

    rng = random.Random(seed)
    exits, kinds_seen, failures = collections.Counter(), collections.Counter(), []
    for i in range(n):
        case = draw_cli_case(rng.choice, kinds)
        wd = Path(workdir) / f"c{i}"
        o = run_cli_case(case, wd)
        shutil.rmtree(wd, ignore_errors=True)
        exits[str(o["rc"])] += 1
        kinds_seen[case.kind] += 1
        bad = cli_problems(case, o)
        if bad:
            failures.append({"i": i, "case": repr(case), "problems": bad})
    return {"mutations": n, "seed": seed, "exits": dict(exits), "kinds": dict(kinds_seen),
            "n_failures": len(failures), "failures": failures[:50]}
