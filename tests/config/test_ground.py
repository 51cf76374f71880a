"""facility.config is the ground (issue 51): it imports no facility package but itself and
facility.errors, and none of its imports (nor facility.scenario's) sit inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "facility"
ABOVE = ("workload", "electrical", "control", "optimize", "grid_impact", "report", "storage", "gpu",
         "sizing", "cosim", "run", "scenario")


def _imports(path: Path):
    """``(module, in a function)`` of every import of ``path`` (relative ones as '.')."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            yield from ((a.name, id(n) in inner) for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            yield ("." if n.level else n.module or ""), id(n) in inner


@pytest.mark.parametrize("path", sorted((PKG / "config").glob("*.py")), ids=lambda p: p.name)
def test_config_imports_nothing_above_it(path):
    bad = [m for m, _ in _imports(path)
           if m.startswith("facility.") and m.split(".")[1] in ABOVE]
    assert bad == []


@pytest.mark.parametrize("path", sorted((PKG / "config").glob("*.py")) + sorted((PKG / "scenario").glob("*.py")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_facility_import_inside_a_function(path):
    assert [m for m, inner in _imports(path) if inner and (m == "." or m.startswith("facility"))] == []
