"""The pure parts of benchmarks/bench_real_lm_backends.py: where two generations part, the
tokens counted, the agreement tally and the logits read at a divergence."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_real_lm_backends import (
    arithmetic_problems,
    first_divergence,
    generated_tokens,
    greedy_agreement,
    spread,
    with_stop,
)

EOS = 2


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([5, 6, EOS], [5, 6, EOS], None),
        ([], [], None),
        ([5, 6, EOS], [5, 7, EOS], 1),
        ([9], [5], 0),
        ([5, 6, EOS], [5, 6, 8, EOS], 2),  # one stopped where the other went on
        ([5, 6, 8, EOS], [5, 6, EOS], 2),
        ([5, 6], [5, 6, EOS], 2),  # cut at the token limit against a stop
    ],
)
def test_first_divergence(a, b, expected):
    assert first_divergence(a, b) == expected


def test_generated_tokens_count_eos_where_a_sample_stopped_on_it():
    rows = [{"token_ids": [5, 6], "finish_reason": "stop"},
            {"token_ids": [7, 8, 9], "finish_reason": "length"},
            {"token_ids": [], "finish_reason": "stop"}]
    assert generated_tokens(rows) == 3 + 3 + 1
    assert [with_stop(row, EOS) for row in rows] == [[5, 6, EOS], [7, 8, 9], [EOS]]


def test_spread_is_median_min_max():
    assert spread([4.0, 1.0, 2.0, 10.0], 1) == "3.0 [1.0, 10.0]"


def test_problems_are_asked_in_words_with_the_rows_own_answer():
    problems = arithmetic_problems(4)
    assert len({p["problem_id"] for p in problems}) == 4
    for problem in problems:
        assert problem["prompt"].startswith("What is ")
        assert problem["prompt"].endswith("End your answer with a line 'The answer is N'.")
        assert " + " in problem["prompt"] or " - " in problem["prompt"]
        left, sign, right = re.fullmatch(r"(\d+)([+-])(\d+)", problem["question"]).groups()
        assert int(problem["answer"]) == int(left) + (1 if sign == "+" else -1) * int(right)


class FakeTokenizer:
    eos_token_id = EOS

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) % 10 for c in text]}

    def convert_ids_to_tokens(self, token_id):
        return f"t{token_id}"


class FakeModel:
    """Logits that favour token 5 over token 4 by 0.25 wherever it is asked."""

    def __init__(self):
        self.calls = []

    def __call__(self, ids):
        import torch

        self.calls.append(ids.tolist()[0])
        logits = torch.zeros(1, ids.shape[1], 10)
        logits[0, -1, 5], logits[0, -1, 4] = 2.0, 1.75
        return SimpleNamespace(logits=logits)


def row(pid, ids, finish="stop", text=None, correct=False):
    return {"problem_id": pid, "token_ids": ids, "finish_reason": finish,
            "text": text if text is not None else str(ids), "correct": correct}


def test_greedy_agreement_tallies_and_reads_the_logits_where_the_backends_part():
    hf = [row("same", [7, 8]), row("text", [7], text="a"), row("part", [7, 5, 9]),
          row("cut", [7, 8], finish="length", correct=True)]
    vl = [row("same", [7, 8]), row("text", [7], text="b"), row("part", [7, 4]),
          row("cut", [7, 8])]
    model = FakeModel()
    result = greedy_agreement(hf, vl, model, FakeTokenizer(), {p: "ab" for p in
                                                               ("same", "text", "part", "cut")})
    assert (result.problems, result.identical, result.same_ids_other_text) == (4, 2, 1)
    assert result.same_verdict == 3
    # "cut" differs (one hit the limit where the other stopped) but has no token to compare.
    [divergence] = result.divergences
    assert (divergence.problem_id, divergence.index) == ("part", 1)
    assert (divergence.transformers_token, divergence.vllm_token) == ("t5", "t4")
    assert divergence.top_two_gap == pytest.approx(0.25)
    assert divergence.chosen_gap == pytest.approx(0.25)
    assert divergence.unpadded_pick == "transformers"
    # Teacher-forced on the prompt's ids and the common prefix, one sequence.
    assert model.calls == [FakeTokenizer()("ab")["input_ids"] + [7]]
