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


def test_the_cosimulation_stays_below_the_orchestrators():
    # issue 44: run_scenario sizes an extendable storage first and the sizing verifies its
    # designs by simulating them; the co-simulation of a fixed design (facility.cosim.design) is the
    # room both build on, so it reaches neither of them
    above = {"facility.run.orchestrator", "facility.cli", "facility.sweep.worker"} | {
        m for m in GRAPH if m.startswith("facility.sizing.pipeline")}
    assert sorted(reachable(GRAPH, "facility.cosim.design") & above) == []
    assert "facility.cosim.design" in GRAPH["facility.sizing.pipeline"] and "facility.cosim.design" in GRAPH["facility.run.orchestrator"]
    assert "facility.run.orchestrator" not in GRAPH["facility.sizing.pipeline"] | GRAPH["facility.sizing.resize"]


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
