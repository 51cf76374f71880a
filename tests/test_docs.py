"""Docs name only what a user of the repository has: no pointer outside it, no dead link."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

#: Text that points at files a clone of the repository does not have.
_OUTSIDE = re.compile(r"shared/(design\.md|spec|reference|hooks)|design\.md|facts file|/work/")


def _user_facing_files():
    pats = ["README.md", "docs/**/*.md", "docs/*.py", "scenarios/**/*", "facility/**/*.py", "benchmarks/*.py"]
    seen = set()
    for pat in pats:
        for p in REPO.glob(pat):
            if p.is_file() and p.suffix in (".md", ".py", ".toml", ".sh", ".csv") and "__pycache__" not in p.parts:
                seen.add(p)
    return sorted(seen)


def test_no_doc_points_outside_the_repository():
    bad = []
    for p in _user_facing_files():
        for i, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if _OUTSIDE.search(line):
                bad.append(f"{p.relative_to(REPO)}:{i}: {line.strip()}")
    assert not bad, "references outside the repository (move the content into docs/):\n" + "\n".join(bad)


@pytest.mark.parametrize("doc", sorted(str(p.relative_to(REPO)) for p in
                                       [REPO / "README.md", *REPO.glob("docs/*.md"), REPO / "scenarios" / "README.md"]))
def test_relative_links_resolve(doc):
    path = REPO / doc
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#", 1)[0]).exists():
            dead.append(target)
    assert not dead, f"{doc}: dead links {dead}"
