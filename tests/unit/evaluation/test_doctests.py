"""The `>>>` examples in every evaluation module's docstrings hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["bootstrap", "diversity", "metrics", "report", "search", "summary", "transfer"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"breadth.evaluation.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
