"""The package's import graph: no circles, the optimizer's layer rule, pyomo, pandapower and
andes in their one package each.

The graph is read from the source with :mod:`ast`, not by importing anything. Every ``import``
and ``from ... import`` statement that can run counts, wherever it stands: at module level or
inside a function or method (the lazy imports, which close a circle as surely when they run).
Imports under ``if TYPE_CHECKING:`` do not count: they never run (annotations only).
``from a.b import c`` is an arrow
to the module ``a.b.c`` when that is a module of ``facility``, else to ``a.b``; relative
imports are resolved against the importing module's package. The parent packages that Python
runs on the way to a module (``facility/__init__.py`` for ``facility.x``) are not arrows: they
are the same for every module below them and would make every package a circle with its
facade.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "facility"

# The optimizer's rooms from the bottom up; a module may import its own room and those below.
OPTIMIZE_LAYERS = ("model", "solvers", "certificates", "strategies", "driver")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _runnable_nodes(tree: ast.AST):
    """Every node of ``tree`` but the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if _type_checking_only(node):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imports_of(path: Path, modules: set[str], root: Path = ROOT) -> set[tuple[str, str]]:
    """``(imported name, kind)`` pairs of one file: the facility modules it imports, and the
    top-level names of the others (``kind`` is ``"facility"`` or ``"external"``)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[tuple[str, str]] = set()
    for node in _runnable_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] == root.name:
                while t not in modules and "." in t:  # `import facility.a.b.attr` forms
                    t = t.rpartition(".")[0]
                out.add((t, "facility"))
            else:
                out.add((t.split(".")[0], "external"))
    return out


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The arrows among ``root``'s modules and each module's external top-level imports."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    external: dict[str, set[str]] = {}
    for name, path in files.items():
        found = imports_of(path, modules, root)
        graph[name] = {t for t, k in found if k == "facility" and t != name}
        external[name] = {t for t, k in found if k == "external"}
    return graph, external


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def optimize_room(module: str) -> str | None:
    """The room (``OPTIMIZE_LAYERS``) of a module of ``facility.optimize``, ``"facade"`` for the
    package itself, None outside it."""
    parts = module.split(".")
    if parts[:2] != ["facility", "optimize"]:
        return None
    return parts[2] if len(parts) > 2 else "facade"


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for src, targets in sorted(graph.items()):
        room = optimize_room(src)
        for dst in sorted(targets):
            to = optimize_room(dst)
            if to is None:
                continue
            if to == "facade":
                if room is not None:
                    bad.append(f"{src} -> {dst} (the facade imports the rooms, not back)")
                continue
            if to not in OPTIMIZE_LAYERS:
                bad.append(f"{dst}: a module of facility.optimize outside its rooms {OPTIMIZE_LAYERS}")
                continue
            if room is None or room == "facade":
                continue  # code outside the optimizer may use any room
            if room not in OPTIMIZE_LAYERS:
                bad.append(f"{src}: a module of facility.optimize outside its rooms")
            elif to == "driver" and room != "driver":
                bad.append(f"{src} -> {dst} (nothing in the optimizer imports the driver)")
            elif OPTIMIZE_LAYERS.index(to) > OPTIMIZE_LAYERS.index(room):
                bad.append(f"{src} -> {dst} ({room} imports {to}, a higher room)")
    return bad


GRAPH, EXTERNAL = import_graph()


def test_the_graph_is_read():
    # a known arrow of each kind: a module-level one and a lazy one in a function
    assert "facility.config.schema" in GRAPH["facility.config.load"]
    assert any("facility.optimize" in t for t in GRAPH["facility.cli"])
    assert "pyomo" in set().union(*EXTERNAL.values())


def test_no_import_circle_in_facility():
    assert circles(GRAPH) == []


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_the_packages_keep_their_floors():
    # issue 51: run_scenario (facility.run) sizes an extendable storage first (facility.sizing),
    # and the sizing verifies its designs by co-simulating them (facility.cosim): the
    # co-simulation of a fixed design reaches neither orchestrator, the sizing not the run
    def under(*pkgs):
        return {m for m in GRAPH for p in pkgs if m == p or m.startswith(p + ".")}

    cosim, sizing, run = under("facility.cosim"), under("facility.sizing"), under("facility.run")
    assert cosim and sizing and run, "the packages moved: the test reads the wrong tree"
    above_cosim = sizing | run | under("facility.cli", "facility.cli_grid", "facility.sweep")
    for m in sorted(cosim):
        assert sorted(reachable(GRAPH, m) & above_cosim) == [], m
    for m in sorted(sizing):
        assert sorted(reachable(GRAPH, m) & (run | under("facility.sweep", "facility.cli"))) == [], m
    assert "facility.cosim.design" in GRAPH["facility.sizing.pipeline"]
    assert {"facility.sizing.pipeline", "facility.cosim.design"} <= reachable(GRAPH, "facility.run.orchestrator")


# the ground floor: config (the schema, its own libraries and the checks that need only it)
# imports no domain; the domain checks live with their domain (issue 51)
ABOVE_CONFIG = ("workload", "electrical", "control", "optimize", "grid_impact", "gpu", "storage",
                "report", "sweep", "sizing", "cosim", "run", "scenario", "metrics", "cli",
                "cli_grid", "cli_logging")


def test_config_is_the_ground():
    config = sorted(m for m in GRAPH if m == "facility.config" or m.startswith("facility.config."))
    assert len(config) > 5
    up = {f"facility.{p}" for p in ABOVE_CONFIG}
    bad = {m: sorted(t for t in reachable(GRAPH, m) if t in up or t.rsplit(".", 1)[0] in up
                     or any(t.startswith(u + ".") for u in up))
           for m in config}
    assert {m: v for m, v in bad.items() if v} == {}
    # and nothing outside config and errors, even transitively
    assert sorted({t for m in config for t in reachable(GRAPH, m)}
                  - set(config) - {"facility.errors"}) == []


# The CLI modules may import lazily (start-up time of `python -m facility`); elsewhere an
# import inside a function needs a reason on its line, and there are few (issue 51).
CLI_MODULES = {"facility.cli", "facility.cli_grid", "facility.cli_logging", "facility.sweep.cli"}
MAX_FUNCTION_LEVEL_IMPORTS = 25
LAZY_REASON = "# lazy:"


def function_level_imports(root: Path = ROOT) -> list[tuple[str, int, str, bool]]:
    """``(module, line, imported module, has a reason)`` for every import of a facility module
    inside a function or method (``# lazy: <reason>`` on the import's first line), outside
    :data:`CLI_MODULES`."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    out = []
    for name, path in files.items():
        if name in CLI_MODULES:
            continue
        src = path.read_text(encoding="utf-8")
        lines = src.splitlines()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        seen = set()
        for fn in ast.walk(ast.parse(src, str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if id(node) in seen or not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                seen.add(id(node))
                if isinstance(node, ast.ImportFrom):
                    mod = node.module or ""
                    if node.level:
                        base = package.split(".")[: len(package.split(".")) - node.level + 1]
                        mod = ".".join(base + ([mod] if mod else []))
                    targets = [mod]
                else:
                    targets = [a.name for a in node.names]
                for t in targets:
                    if t.split(".")[0] == root.name:
                        out.append((name, node.lineno, t, LAZY_REASON in lines[node.lineno - 1]))
    return out


LAZY = function_level_imports()


def test_few_function_level_imports_each_with_its_reason():
    assert len(LAZY) <= MAX_FUNCTION_LEVEL_IMPORTS, "\n".join(f"{m}:{n} {t}" for m, n, t, _ in LAZY)
    assert [f"{m}:{n} imports {t}" for m, n, t, why in LAZY if not why] == []


def test_function_level_imports_are_found(tmp_path):
    """The count can fail: a made-up package with two lazy imports, one without its reason."""
    pkg = tmp_path / "facility"
    pkg.mkdir()
    for rel, text in {
        "__init__.py": "",
        "a.py": "def f():\n    from facility import b  # lazy: optional\n",
        "b.py": "class C:\n    def g(self):\n        import facility.a\n        import numpy\n",
        "cli.py": "def main():\n    from facility import a\n",
    }.items():
        (pkg / rel).write_text(text)
    found = function_level_imports(pkg)
    assert sorted((m, t, why) for m, _, t, why in found) == [
        ("facility.a", "facility", True), ("facility.b", "facility.a", False)]


# Library entries are looked up by name once, when the scenario is resolved; the layers take
# scenario.library (facility/config/resolved.py).
LOOKUPS = {"load_gpu", "load_technology", "load_trafo_type", "load_ups_type", "load_shaft",
           "load_mode_set", "read_library", "load_spec_table", "read_mode_set_file"}
MAY_LOOK_UP = ("facility.config", "facility.scenario", "facility.electrical.library",
               "facility.grid_impact.library", "facility.cli", "facility.cli_grid",
               # `facility grid-replay` takes a mode set name on its own command line
               "facility.grid_impact.dynamics.replay")


def library_lookups(root: Path = ROOT) -> list[str]:
    """``module:line name`` of every call of a library lookup by name outside
    :data:`MAY_LOOK_UP`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        if any(name == m or name.startswith(m + ".") for m in MAY_LOOK_UP):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if called in LOOKUPS:
                    out.append(f"{name}:{node.lineno} {called}")
    return out


def test_below_config_nothing_looks_a_library_up_by_name():
    assert library_lookups() == []


def test_library_lookups_are_found(tmp_path):
    pkg = tmp_path / "facility"
    (pkg / "workload").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "workload" / "__init__.py").write_text("")
    (pkg / "workload" / "gen.py").write_text(
        "from facility.config.library import load_gpu\n"
        "def f(s, job):\n    return load_gpu(job.gpu), s.library.gpu(job.gpu)\n")
    assert library_lookups(pkg) == ["facility.workload.gen:3 load_gpu"]


def test_the_top_level_keeps_the_face_the_cli_and_the_errors():
    top = sorted(p.stem for p in ROOT.glob("*.py"))
    assert top == ["__init__", "__main__", "cli", "cli_grid", "cli_logging", "errors"]


def test_the_optimizer_keeps_its_layer_rule():
    rooms = {optimize_room(m) for m in GRAPH} - {None, "facade"}
    assert rooms == set(OPTIMIZE_LAYERS)
    assert layer_violations(GRAPH) == []


@pytest.mark.parametrize("package, home", [("pyomo", "facility.optimize"),
                                           ("pandapower", "facility.electrical"),
                                           ("andes", "facility.grid_impact.dynamics")])
def test_heavy_packages_stay_in_their_package(package, home):
    users = sorted(m for m, ext in EXTERNAL.items() if package in ext)
    assert users, f"nobody imports {package}: the test reads the wrong tree"
    assert [m for m in users if not (m == home or m.startswith(home + "."))] == []


def test_circles_and_layers_are_found(tmp_path):
    """The checks can fail: a made-up package with a circle and a strategy importing the driver."""
    pkg = tmp_path / "facility"
    for rel, text in {
        "__init__.py": "",
        "a.py": "from facility import b\n",
        "b.py": "def f():\n    from facility.a import x\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from facility.d import y\n",
        "d.py": "from facility.c import z\n",
        "optimize/__init__.py": "from facility.optimize.driver.api import solve\n",
        "optimize/driver/__init__.py": "", "optimize/strategies/__init__.py": "",
        "optimize/driver/api.py": "from facility.optimize.strategies import full\n",
        "optimize/strategies/full.py": "from ..driver import api\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    graph, _ = import_graph(pkg)
    assert sorted(circles(graph)) == [["facility.a", "facility.b"],
                                      ["facility.optimize.driver.api",
                                       "facility.optimize.strategies.full"]]
    assert layer_violations(graph) == [
        "facility.optimize.strategies.full -> facility.optimize.driver.api "
        "(nothing in the optimizer imports the driver)"]
