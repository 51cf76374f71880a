"""The examples in the sweep docstrings run."""

from __future__ import annotations

import doctest

import pytest

import facility.sweep.cases
import facility.sweep.table


@pytest.mark.parametrize("module", [facility.sweep.cases, facility.sweep.table])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
