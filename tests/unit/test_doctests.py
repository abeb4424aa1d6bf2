"""The `>>>` examples in the docstrings of every module under src/breadth hold."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import breadth

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(breadth.__path__, prefix="breadth.")
)


def test_every_module_is_collected():
    assert {"breadth.config", "breadth.rewards.registry", "breadth.evaluation.metrics"} <= set(
        MODULES
    )


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
