import pytest

from breadth.rewards.groups import IncompleteGroupError, group_rows

from ._cases import params


@pytest.mark.parametrize("case", params("groups"))
def test_group_rows_table(case):
    groups = group_rows(case["ids"], case["group_size"])
    assert [[g.problem_id, g.start, g.stop] for g in groups] == case["expected"]
    assert sum(g.size for g in groups) == len(case["ids"])


@pytest.mark.parametrize("case", params("groups", "errors"))
def test_group_rows_errors_name_the_problem_and_the_fix(case):
    with pytest.raises(IncompleteGroupError) as info:
        group_rows(case["ids"], case["group_size"])
    for fragment in case["match"]:
        assert fragment in str(info.value)


def test_rows_slice_selects_the_group():
    values = ["a0", "a1", "b0", "b1"]
    groups = group_rows(["a", "a", "b", "b"], 2)
    assert [values[g.rows] for g in groups] == [["a0", "a1"], ["b0", "b1"]]


def test_group_size_must_be_positive():
    with pytest.raises(ValueError, match="group_size must be >= 1"):
        group_rows(["a"], 0)
