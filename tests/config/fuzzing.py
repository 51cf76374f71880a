"""Mutation fuzzing of the bundled scenarios, as a hostile user would try it.

One mutation changes one thing of a bundled scenario (``scenarios/*.toml``,
``scenarios/table1/*.toml``):

============== ===============================================================================
kind           what it does
============== ===============================================================================
wrong_type     a value of the wrong type (string, list, table, bool, number for a string)
nan / inf      NaN, +inf or -inf
zero           0
negative       a negative number (-1e-9, -1, -1e12 or minus the value)
huge           1e300, 1e30, 1e12, 2**63 - 1, 10**30
tiny           1e-300, 5e-324, 1e-12
scale          the value (or 1) times 10**k, k in -8..8 (odd but plausible numbers)
choice         another allowed value of a choice (workload, controller.kind, a library name ...)
toggle         a switch flipped (enables sections the scenario leaves off)
unknown_key    a key the schema does not have, in any section
swap_bounds    the values of a bound pair swapped (min_/max_, start/stop, band edges, ...)
delete         a key removed (required ones too)
empty_jobs     ``jobs = []``
long_text      a 300-character or NUL-holding string (names, library references, paths)
============== ===============================================================================

The families of the newer features (:data:`FAMILIES`: hybrid units, custom technology files,
sags, job failures, MPC grids, mixed units in trace cells, time gaps in traces) draw one
feature into the scenario at once, with the files it needs (:mod:`tests.config.fuzz_families`).

Mutations are chosen through a ``choose(sequence)`` callable, so the same generator serves
the hypothesis tests (``choose = lambda seq: draw(sampled_from(seq))``, shrinkable) and the
long run of :mod:`tests.config.fuzz_scenarios` (``choose = random.Random(seed).choice``).

:func:`check_mutation` runs ``facility validate`` (in-process, through ``facility.cli.main``)
on the mutated scenario and, when it validates, ``facility run`` on it with a short horizon,
and returns an :class:`Outcome`; :func:`problems` lists what breaks the contract (exit 1, a
traceback, a refusal that names none of the mutated keys, a non-finite metric).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import io
import json
import math
import shutil
import tempfile
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import tomli_w
from pydantic import BaseModel

from facility.config.load import _absolute_paths
from facility.config.messages import _inner_model
from facility.config.schema import Scenario
from tests.config.fuzz_families import DRAW as DRAW_FAMILY
from tests.config.fuzz_families import FAMILIES, apply_family

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "scenarios"

Choose = Callable[[Sequence[Any]], Any]

KINDS = ("wrong_type", "nan", "inf", "zero", "negative", "huge", "tiny", "scale", "choice",
         "toggle", "unknown_key", "swap_bounds", "delete", "empty_jobs", "long_text")

#: Horizon of the run stage (long enough for the 0.1 Hz band limits of the bundled scenarios). [s]
RUN_HORIZON_S = 10.0

_WRONG_TYPES: tuple = ("abc", "", [1, 2], {"x": 1}, True, "1e3", [])
_HUGE: tuple = (1e300, 1e30, 1e12, 1e7, 2**63 - 1, 10**30)
_TINY: tuple = (1e-300, 5e-324, 1e-12, 1e-6)
_NEGATIVE: tuple = (-1e-9, -1, -1e12, "minus")
_LONG: tuple = ("a" * 300, "x\x00y", "../../../../etc/passwd", "/", "../scenarios/default.toml",
                "a" * 300 + ".toml", "/dev/null")
_BOUND_PAIRS = (("min_soc_frac", "max_soc_frac"), ("min_p_rated_mw", "max_p_rated_mw"),
                ("min_e_rated_mwh", "max_e_rated_mwh"), ("start_s", "stop_s"),
                ("band_min_hz", "band_max_hz"), ("min_hz", "max_hz"), ("trigger_frac", "target_frac"),
                ("p_low_frac", "p_high_frac"), ("min_vm_pu", "max_vm_pu"), ("lv_kv", "mv_kv"),
                ("mv_kv", "vn_kv"), ("checkpoint_s", "checkpoint_every_s"),
                ("initial_soc_frac", "min_soc_frac"), ("backoff_s", "backoff_every_s"),
                ("secondary_floor_frac", "floor_frac"), ("dt_s", "horizon_s"))


@functools.lru_cache(maxsize=None)
def _bundled() -> dict[str, dict]:
    import tomllib

    out = {}
    for f in sorted(SCENARIOS.glob("*.toml")) + sorted((SCENARIOS / "table1").glob("*.toml")):
        raw = tomllib.loads(f.read_text())
        out[str(f.relative_to(SCENARIOS))] = _absolute_paths(raw, f.parent)
    return out


def scenario_names() -> list[str]:
    """Names (paths under scenarios/) of the bundled scenarios."""
    return list(_bundled())


def bundled(name: str) -> dict:
    """A fresh copy of a bundled scenario's raw table."""
    return copy.deepcopy(_bundled()[name])


def _fields(model: type[BaseModel], prefix: tuple) -> list[tuple[tuple, Any]]:
    return [(prefix + (name,), info) for name, info in model.model_fields.items()]


def targets(raw: dict) -> list[tuple[tuple, Any]]:
    """Every key path a mutation may hit, with its pydantic FieldInfo (None for a section):
    the fields of each section (set in the file or not), of each job and each spec band."""
    out: list[tuple[tuple, Any]] = []
    for name, info in Scenario.model_fields.items():
        out.append(((name,), info))
        model = _inner_model(info.annotation)
        if model is None:
            continue
        if name in ("jobs", "grid_events"):  # arrays of tables: the fields of each entry
            items = raw.get(name) if isinstance(raw.get(name), list) else []
            for i in range(len(items)):
                out.extend(_fields(model, (name, i)))
            continue
        out.extend(_fields(model, (name,)))
        if name == "spec":
            spec = raw.get("spec")
            bands = spec.get("bands") if isinstance(spec, dict) else None
            for i in range(len(bands) if isinstance(bands, list) else 0):
                out.extend(_fields(_inner_model(model.model_fields["bands"].annotation), ("spec", "bands", i)))
    return out


def _get(raw: Any, path: tuple) -> Any:
    node = raw
    for p in path:
        if isinstance(node, dict) and p in node:
            node = node[p]
        elif isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        else:
            return None
    return node


def _set(raw: dict, path: tuple, value: Any, delete: bool = False) -> None:
    node: Any = raw
    for p in path[:-1]:
        if isinstance(node, list):
            if not isinstance(p, int) or p >= len(node):
                return
            node = node[p]
            continue
        if not isinstance(node, dict):
            return
        if isinstance(node.get(p), str) and p == "spec":
            node[p] = {"base": node[p]}
        if not isinstance(node.get(p), (dict, list)):
            node[p] = {}
        node = node[p]
    last = path[-1]
    if isinstance(node, dict):
        if delete:
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        if delete:
            del node[last]
        else:
            node[last] = value


@functools.lru_cache(maxsize=1)
def _library_choices() -> dict[str, tuple]:
    """The library names a key may take (listed once: each listing walks a folder)."""
    from facility.config.library import list_gpus, list_specs
    from facility.electrical.library import list_trafo_types, list_ups_types

    trafos, specs = tuple(list_trafo_types()), tuple(list_specs())
    return {"gpu": tuple(list_gpus()), "base": specs, "spec": specs, "trafo_type": trafos,
            "lv_trafo_type": trafos, "ups_type": tuple(list_ups_types()),
            "trace_file": (str(REPO / "tests/data/synthetic_trace_p_gpu_w.csv"),)}


def _choices(path: tuple, info: Any) -> list:
    leaf = path[-1]
    if info is not None:
        for a in (info.annotation, *typing.get_args(info.annotation)):
            if typing.get_origin(a) is typing.Literal:
                return list(typing.get_args(a))
    return list(_library_choices().get(leaf, (None,)))


def _is_numeric(info: Any) -> bool:
    if info is None:
        return False
    anns = (info.annotation, *typing.get_args(info.annotation))
    return any(a in (int, float) for a in anns)


@dataclass
class Mutation:
    """One change to a scenario: ``kind``, the key path(s) it touches and the value set."""

    kind: str
    paths: tuple
    value: Any = None
    #: files a family writes next to the mutated scenario (name -> text; tests/config/fuzz_families.py)
    files: dict = field(default_factory=dict)
    #: whether it makes a storage extendable (the run then sizes; see check_mutation's run_sizing)
    sizes: bool = False

    def keys(self) -> list[str]:
        """Dotted key paths the mutation touched (what a refusal must name)."""
        return [".".join(map(str, p)) for p in self.paths]

    def __repr__(self) -> str:
        v = self.value
        shown = repr(v) if not isinstance(v, str) or len(v) < 40 else repr(v[:20] + "…")
        return f"{self.kind}({', '.join(self.keys())}{'' if v is None else ' = ' + shown})"


#: Kinds that keep a scenario plausible, so more of them validate and reach the run stage.
PLAUSIBLE = ("scale", "choice", "toggle", "swap_bounds", "zero", "tiny", "delete")


def draw_mutation(raw: dict, choose: Choose, kinds: Sequence[str] = KINDS) -> Mutation:
    """Pick one mutation of ``raw`` with ``choose`` (see the module docstring)."""
    kind = choose(kinds)
    if kind in FAMILIES:
        return DRAW_FAMILY[kind](raw, choose)
    if kind == "empty_jobs":
        return Mutation(kind, (("jobs",),), [])
    if kind == "swap_bounds":
        pairs = []
        for path, _ in targets(raw):
            for a, b in _BOUND_PAIRS:
                if path[-1] == a:
                    pairs.append((path, path[:-1] + (b,)))
        return Mutation(kind, choose(pairs))
    path, info = choose(targets(raw))
    cur = _get(raw, path)
    if kind == "unknown_key":
        sections = [()] + [p for p, i in targets(raw)
                           if i is not None and isinstance(i.annotation, type)
                           and issubclass(i.annotation, BaseModel)]
        sections += [("jobs", i) for i in range(len(raw["jobs"]) if isinstance(raw.get("jobs"), list) else 0)]
        sec = choose(sections)
        return Mutation(kind, (sec + (choose(("bogus", "capacity_mw", "dtS", "horizon")),),), 1)
    if kind == "delete":
        return Mutation(kind, (path,))
    if kind == "toggle":
        bools = [(p, i) for p, i in targets(raw) if i is not None and i.annotation is bool]
        path, _ = choose(bools)
        cur = _get(raw, path)
        return Mutation(kind, (path,), not bool(cur) if cur is not None else True)
    if kind == "choice":
        options = [(p, i) for p, i in targets(raw) if _choices(p, i) != [None]]
        path, info = choose(options)
        return Mutation(kind, (path,), choose(_choices(path, info)))
    if kind == "long_text":
        texty = [(p, i) for p, i in targets(raw)
                 if p[-1] in ("name", "gpu", "trafo_type", "lv_trafo_type", "ups_type", "trace_file",
                              "base", "spec", "solver", "description")]
        path, _ = choose(texty)
        return Mutation(kind, (path,), choose(_LONG))
    if kind == "wrong_type":
        return Mutation(kind, (path,), choose(_WRONG_TYPES))
    if kind == "nan":
        return Mutation(kind, (path,), math.nan)
    if kind == "inf":
        return Mutation(kind, (path,), choose((math.inf, -math.inf)))
    if kind == "zero":
        return Mutation(kind, (path,), choose((0, 0.0)))
    base = cur if isinstance(cur, (int, float)) and not isinstance(cur, bool) else 1.0
    if kind == "negative":
        v = choose(_NEGATIVE)
        return Mutation(kind, (path,), -abs(base) if v == "minus" else v)
    if kind == "huge":
        return Mutation(kind, (path,), choose(_HUGE))
    if kind == "tiny":
        return Mutation(kind, (path,), choose(_TINY))
    if kind == "scale":
        k = choose(range(-8, 9))
        v = base * 10.0 ** k
        if isinstance(base, int) and abs(v) >= 1:
            v = int(v)
        return Mutation(kind, (path,), v)
    raise AssertionError(kind)  # pragma: no cover


def apply_mutation(raw: dict, m: Mutation) -> dict:
    """``raw`` with ``m`` applied (a new table)."""
    out = copy.deepcopy(raw)
    if m.kind in FAMILIES:
        apply_family(out, m)
    elif m.kind == "swap_bounds":
        a, b = m.paths
        va, vb = _get(out, a), _get(out, b)
        if va is None and vb is None:
            return out
        _set(out, a, vb, delete=vb is None)
        _set(out, b, va, delete=va is None)
    elif m.kind == "delete":
        _set(out, m.paths[0], None, delete=True)
    else:
        _set(out, m.paths[0], m.value)
    return out


def draw_mutations(choose: Choose, max_mutations: int = 3,
                   kinds: Sequence[str] = KINDS) -> tuple[str, list[Mutation]]:
    """A bundled scenario and 1..max_mutations mutations of it (of the given kinds)."""
    name = choose(scenario_names())
    raw = bundled(name)
    n = choose(range(1, max_mutations + 1))
    muts = []
    for _ in range(n):
        m = draw_mutation(raw, choose, kinds)
        raw = apply_mutation(raw, m)
        muts.append(m)
    return name, muts


@dataclass
class Outcome:
    """What ``validate`` and (if it validated) ``run`` did with a mutated scenario."""

    scenario: str
    mutations: list
    validate_rc: int | None = None
    validate_err: str = ""
    run_rc: int | None = None
    run_err: str = ""
    nonfinite: list = field(default_factory=list)
    error: str = ""           # an exception that escaped the CLI, or a file we could not write

    def keys(self) -> list[str]:
        return [k for m in self.mutations for k in m.keys()]


def _cli(argv: list[str]) -> tuple[int, str]:
    from facility.cli import main

    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(argv)
    return rc, err.getvalue()


def _leaves(obj: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(obj, dict):
        return [kv for k, v in obj.items() for kv in _leaves(v, f"{prefix}{k}.")]
    return [(prefix.rstrip("."), obj)]


def _short_horizon(raw: dict, horizon_s: float) -> dict:
    out = copy.deepcopy(raw)
    t = out.get("time")
    if isinstance(t, dict):
        h = t.get("horizon_s", 60.0)
        if isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h > horizon_s:
            t["horizon_s"] = horizon_s
    return out


def check_mutation(name: str, mutations: list[Mutation], workdir: Path | None = None,
                   run: bool = True, horizon_s: float = RUN_HORIZON_S, run_sizing: bool = True) -> Outcome:
    """Validate (and run, with a short horizon) a mutated bundled scenario through the CLI.

    ``run_sizing = False`` validates, but does not run, a case whose family mutation made a
    storage extendable (the run then sizes a hybrid of up to three units: minutes each on a
    loaded machine)."""
    if not run_sizing and any(m.sizes for m in mutations):
        run = False
    raw = bundled(name)
    for m in mutations:
        raw = apply_mutation(raw, m)
    res = Outcome(scenario=name, mutations=mutations)
    with contextlib.ExitStack() as stack:
        wd = Path(workdir) if workdir is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if any(m.files for m in mutations):   # a folder of its own: no file of an earlier case is read
            wd = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=wd)))
        f = wd / "mutated.toml"
        for m in mutations:             # a family's files, next to the scenario (relative paths)
            for fname, text in m.files.items():
                (wd / fname).write_text(text)
        try:
            f.write_text(tomli_w.dumps(raw))
        except (TypeError, ValueError) as exc:     # not representable in TOML: nothing to test
            res.error = f"skip: {exc}"
            return res
        res.validate_rc, res.validate_err = _cli(["validate", str(f)])
        if not run or res.validate_rc != 0:
            return res
        f.write_text(tomli_w.dumps(_short_horizon(raw, horizon_s)))
        if _cli(["validate", str(f)])[0] != 0:
            return res
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=wd))
        out = run_dir / "out"            # a new folder each time (--out never replaces silently)
        try:
            res.run_rc, res.run_err = _cli(["run", str(f), "--out", str(out), "--no-plots", "--no-progress"])
            if res.run_rc == 0:
                metrics = json.loads((out / "metrics.json").read_text())
                res.nonfinite = [k for k, v in _leaves(metrics)
                                 if v is None or (isinstance(v, float) and not math.isfinite(v))]
        finally:
            shutil.rmtree(run_dir, ignore_errors=True)
    return res


def problems(o: Outcome) -> list[str]:
    """What in an outcome breaks the contract (empty = fine)."""
    out = []
    if o.error and not o.error.startswith("skip:"):
        out.append(o.error)
    for label, rc, err, allowed in (("validate", o.validate_rc, o.validate_err, (0, 2)),
                                    ("run", o.run_rc, o.run_err, (0, 3, 4))):
        if rc is None:
            continue
        if rc not in allowed:
            out.append(f"{label} exit {rc}: {err.strip()[-600:]}")
        if "Traceback" in err:
            out.append(f"{label} printed a traceback")
    if o.validate_rc == 2 and not any(_names(o.validate_err, k) for k in o.keys()):
        out.append(f"validate refused without naming {o.keys()}: {o.validate_err.strip()[:600]}")
    if o.nonfinite:
        out.append(f"run: non-finite metrics {o.nonfinite[:8]}")
    return out


def _names(message: str, key: str) -> bool:
    """Whether a refusal names ``key``: its dotted path, the path with the job index as
    ``*`` (``jobs.*.n_gpus`` in a message about every job), or its section and its field
    (``grid_impact: sync_coeff_gen_mw_per_rad and sync_coeff_rest_mw_per_rad go together``)."""
    import re

    section, _, leaf = key.rpartition(".")
    return (key in message or re.sub(r"^jobs\.\d+\.", "jobs.*.", key) in message
            or (bool(section) and f"{section}: " in message and re.search(rf"\b{re.escape(leaf)}\b", message)
                is not None))
