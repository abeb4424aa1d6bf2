"""Adversarial rollouts (empty, truncated, megabyte-long, non-UTF-8-looking) evaluate without
error and count as incorrect, both as given and when re-verified by breadth.data.verifiers."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from breadth.evaluation.summary import evaluate_rollouts

ADVERSARIAL_TEXTS = {
    "empty": "",
    "truncated": "Let me think step by step. First, 17 + 25 is the sum of",
    "megabyte": "12 + " * 200_000 + "...",  # 1 MB, finish_reason=length, no answer line
    "non_utf8_looking": "\udcff\x00\ufffd",
    "control_chars": "\x1b[31m\x07\r\n\t\x00" * 50,
    "none": None,
}


def adversarial_rollouts(model: str = "rl", num_good_problems: int = 2) -> pd.DataFrame:
    rows = []
    for i, (name, text) in enumerate(ADVERSARIAL_TEXTS.items()):
        rows.append(
            {
                "problem_id": "adv",
                "sample_index": i,
                "model": model,
                "format": "free_form",
                "prompt": "17+25=",
                "text": text,
                "token_ids": [] if text is None else [ord(c) % 256 for c in text[:64]],
                "logprobs": [],
                "entropy": [],
                "finish_reason": "length" if name == "megabyte" else "stop",
                "extracted": None,
                "outcome": None,
                "correct": False,
                "score": 0.0,
                "seed": i,
                "backend": "test",
                "answer": "42",
                "task": "arithmetic",
                "options": [],
                "letter": "",
                "meta": "{}",
            }
        )
    for p in range(num_good_problems):  # ordinary problems alongside, so curves are non-trivial
        for s in range(len(ADVERSARIAL_TEXTS)):
            rows.append(
                {
                    **rows[0],
                    "problem_id": f"ok{p}",
                    "sample_index": s,
                    "text": f"Answer: {40 + s}",
                    "outcome": str(40 + s),
                    "extracted": str(40 + s),
                    "correct": s == 2,
                    "score": float(s == 2),
                }
            )
    # Object columns: pandas' default (pyarrow) string dtype refuses lone surrogates such as
    # "\udcff", so a rollout writer must keep text as object (or sanitise it) -- see the report.
    return pd.DataFrame(
        {col: pd.Series([r[col] for r in rows], dtype=object) for col in rows[0]}
    ).astype({"sample_index": int, "correct": bool, "score": float, "seed": int})


def test_adversarial_rollouts_evaluate_and_count_as_incorrect(tmp_path):
    df = adversarial_rollouts()
    start = time.perf_counter()
    r = evaluate_rollouts(df, base=adversarial_rollouts("base"), num_bootstrap=50)
    assert time.perf_counter() - start < 20
    adv = r.per_problem.loc["adv"]
    assert adv["num_correct"] == 0 and adv["num_samples"] == len(ADVERSARIAL_TEXTS)
    assert adv["distinct_outcomes"] == 0 and adv["outcome_entropy"] == 0.0
    # The adversarial problem adds nothing to pass@k at any k.
    m = r.metrics()
    assert m["eval/pass_at_6"] == pytest.approx(2 / 3)
    # Six-way tie on each good problem, one of six correct: 1/6 each; adversarial: 0.
    assert m["eval/maj_at_6"] == pytest.approx((1 / 6 + 1 / 6 + 0) / 3)
    json.dumps(r.to_dict(include_per_problem=True), allow_nan=False)
    from breadth.evaluation.report import write_report

    paths = write_report({"rl": r}, tmp_path)
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)


def test_adversarial_texts_reverified_by_the_verifier_are_incorrect():
    tasks = pytest.importorskip("breadth.data.generators")
    df = adversarial_rollouts(num_good_problems=0)
    mcq_row = {
        "format": "mcq",
        "task": "arithmetic",
        "answer": "42",
        "options": ["41", "42", "43", "44"],
        "letter": "B",
        "meta": "{}",
    }
    verdicts = []
    for row in df.to_dict(orient="records"):
        for rendered in (row, mcq_row):
            start = time.perf_counter()
            v = tasks.verify(row["text"] if row["text"] is not None else "", rendered)
            assert time.perf_counter() - start < 5, "verifier must be bounded in time"
            assert v.correct is False, (row["sample_index"], v)
            assert v.score == 0.0
            verdicts.append(v)
    # Re-verified rows evaluate as well.
    df = df.assign(
        correct=[v.correct for v in verdicts[::2]],
        outcome=[v.outcome for v in verdicts[::2]],
        extracted=[v.extracted for v in verdicts[::2]],
        score=[v.score for v in verdicts[::2]],
    )
    r = evaluate_rollouts(df, num_bootstrap=20)
    assert r.metrics()["eval/pass_at_1"] == 0.0
    assert all(p.estimate == 0.0 for p in r.pass_at_k)
