"""The three orchestration packages' rule (issue 51): :mod:`facility.cosim` imports neither
:mod:`facility.sizing` nor :mod:`facility.run`; :mod:`facility.sizing` imports
:mod:`facility.cosim` but not :mod:`facility.run`; their modules import at the top."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import ROOT, import_graph

PACKAGES = ("facility.cosim", "facility.sizing", "facility.run")


def _in(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_cosim_sits_below_sizing_and_sizing_below_run():
    graph, _ = import_graph()
    bad = [(m, t) for m, ts in graph.items() for t in ts
           if (_in(m, "facility.cosim") and (_in(t, "facility.sizing") or _in(t, "facility.run")))
           or (_in(m, "facility.sizing") and _in(t, "facility.run"))]
    assert not bad, bad


def test_the_orchestration_packages_import_at_the_top():
    lazy = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg.split(".")[1]).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for fn in ast.walk(tree):
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lazy += [f"{Path(path).name}:{n.lineno}" for n in ast.walk(fn)
                             if (isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("facility")))
                             or (isinstance(n, ast.Import) and any(a.name.startswith("facility") for a in n.names))]
    assert not lazy, lazy
