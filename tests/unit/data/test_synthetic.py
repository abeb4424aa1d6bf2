"""Synthetic generators: determinism, disjoint splits, correct golds, and a difficulty that matters."""

from __future__ import annotations

import statistics

import pytest

from breadth.data.expressions import evaluate, numbers_used, parse_expression
from breadth.data.generators import generate_arithmetic, generate_countdown, get_task, problem_key
from breadth.data.synthetic import split_of
from breadth.data.verifiers import verify_countdown

GENERATORS = [generate_arithmetic, generate_countdown]


@pytest.mark.parametrize("generate", GENERATORS)
def test_same_seed_same_records(generate) -> None:
    first = generate(50, seed=7, difficulty=2, split="train")
    again = generate(50, seed=7, difficulty=2, split="train")
    other = generate(50, seed=8, difficulty=2, split="train")
    assert first == again
    assert [r.id for r in first] != [r.id for r in other]


@pytest.mark.parametrize("generate", GENERATORS)
@pytest.mark.parametrize("difficulty", [1, 2, 3, None])
def test_train_and_eval_share_no_problem(generate, difficulty) -> None:
    # Difficulty-1 arithmetic has 100 prompts of 55 problems (keys): 90 prompts train, 6
    # problems evaluate. Take every one.
    train = generate(90, seed=0, difficulty=difficulty, split="train")
    evaluation = generate(6, seed=0, difficulty=difficulty, split="eval")
    assert {problem_key(r) for r in train}.isdisjoint(problem_key(r) for r in evaluation)
    assert len({r.id for r in train}) == len(train)
    assert len({problem_key(r) for r in evaluation}) == len(evaluation)
    assert {r.split for r in train} == {"train"} and {r.split for r in evaluation} == {"eval"}


def test_countdown_splits_are_disjoint_up_to_number_order() -> None:
    def key(record):
        return (tuple(sorted(record.meta["numbers"])), record.meta["target"])

    train = generate_countdown(600, seed=1, difficulty=1, split="train")
    evaluation = generate_countdown(150, seed=1, difficulty=1, split="eval")
    assert {key(r) for r in train}.isdisjoint(key(r) for r in evaluation)
    assert all(split_of(f"{sorted(r.meta['numbers'])}->{r.meta['target']}") == "eval"
               for r in evaluation)


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_arithmetic_gold_is_the_value(difficulty) -> None:
    for record in generate_arithmetic(80, seed=3, difficulty=difficulty, split="train"):
        assert evaluate(parse_expression(record.question)) == int(record.answer)
        assert record.solution.endswith(f"={record.answer}")
        assert record.task == "arithmetic" and record.difficulty == difficulty


@pytest.mark.parametrize("difficulty", [1, 2, 3])
def test_countdown_solution_verifies(difficulty) -> None:
    for record in generate_countdown(80, seed=3, difficulty=difficulty, split="train"):
        numbers, target = record.meta["numbers"], record.meta["target"]
        assert record.answer == str(target)
        assert record.question == f"Reach {target} with {' '.join(map(str, numbers))}"
        assert verify_countdown(record.solution, numbers, target).correct, record
        assert target not in numbers


def test_difficulty_raises_arithmetic_answer_size() -> None:
    means = [statistics.mean(int(r.answer) for r in
                             generate_arithmetic(80, seed=0, difficulty=d, split="train"))
             for d in (1, 2, 3)]
    assert means[0] < 20 < means[1] < means[2]


def test_difficulty_raises_countdown_work() -> None:
    def numbers_in_solution(difficulty):
        records = generate_countdown(200, seed=0, difficulty=difficulty, split="train")
        return statistics.mean(len(numbers_used(parse_expression(r.solution))) for r in records)

    def given(difficulty):
        records = generate_countdown(50, seed=0, difficulty=difficulty, split="train")
        return {len(r.meta["numbers"]) for r in records}

    used = [numbers_in_solution(d) for d in (1, 2, 3)]
    assert used[0] == 2 and used[1] == 3 and used[2] > 3
    assert given(1) == given(2) == {3} and given(3) == {4}


def test_mixed_difficulty_spans_levels() -> None:
    records = generate_arithmetic(240, seed=0, difficulty=None, split="train")
    assert {r.difficulty for r in records} == {1, 2, 3}
    assert len(records) == 240


def test_a_level_short_of_its_mixed_share_is_an_error_naming_it_and_the_fix() -> None:
    # Difficulty-1 arithmetic holds 90 training prompts: a third of 600 is 200.
    with pytest.raises(ValueError, match=r"level 1 of arithmetic holds only 90 .* share of 200 "
                                         r".* at most 270 \(data.num_train.*data.mixed_fill=true"):
        generate_arithmetic(600, seed=0, difficulty=None, split="train")


def test_mixed_fill_moves_what_a_small_level_lacks_to_the_next() -> None:
    records = get_task("arithmetic").generate(600, seed=0, difficulty=None, split="train",
                                              fill=True)
    counts = {d: sum(r.difficulty == d for r in records) for d in (1, 2, 3)}
    assert counts == {1: 90, 2: 310, 3: 200}


def test_no_problem_is_at_two_levels_of_a_mix() -> None:
    # Countdown's levels 1 and 2 share problems ("Reach 2 with 4 8 6"): a mix holds each once.
    for split, num in (("train", 1500), ("eval", 450)):
        records = get_task("countdown").generate(num, seed=0, difficulty=None, split=split)
        assert len({r.id for r in records}) == len(records) == num


def test_asking_for_more_than_exists_says_so() -> None:
    with pytest.raises(ValueError, match=r"arithmetic at difficulty 1 holds only 90 distinct "
                                         r"prompts .* data.num_train=500 .* at most 90"):
        generate_arithmetic(500, seed=0, difficulty=1, split="train")


@pytest.mark.parametrize("kwargs,message", [
    ({"difficulty": 4, "split": "train"}, "difficulty"),
    ({"difficulty": 1, "split": "test"}, "split"),
])
def test_bad_arguments_are_named(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        generate_arithmetic(5, seed=0, **kwargs)
