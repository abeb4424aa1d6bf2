"""scripts/tools/natural_pass_at_1.py's argument checks and summary line (no model loaded)."""

from __future__ import annotations

import argparse
import doctest

import pytest

from tests.unit.scripts.helpers import load_script

natural_pass_at_1 = load_script("tools/natural_pass_at_1.py")


def test_the_docstring_examples_hold():
    assert doctest.testmod(natural_pass_at_1).failed == 0


@pytest.mark.parametrize("text,message", [
    ("arithmetic:2", "TASK:LEVEL:FORMAT"),
    ("arithmetic:2:essay", "format must be one of"),
    ("chain:7:free_form", "chain has levels"),
    ("sudoku:1:mcq", "sudoku"),
])
def test_a_bad_task_is_refused_naming_the_fix(text, message):
    with pytest.raises((argparse.ArgumentTypeError, ValueError), match=message):
        natural_pass_at_1.parse_candidate(text)
