"""A rollout's sample table: a seeded selection of rows, prompts as the model saw them, and a
verdict that keeps "no answer extracted" apart from "wrong"."""

from __future__ import annotations

import pandas as pd

from breadth.config import ModelConfig
from breadth.models.tiny import build_char_tokenizer
from breadth.rollout.sample_table import SAMPLE_TABLE_ROWS, rollout_samples, sample_table


def _rows(problems: int, samples: int) -> list[dict]:
    verdicts = [("4", True), ("5", False), (None, False)]
    return [{"problem_id": f"p{p}", "sample_index": s, "prompt": f"{p}+4=",
             "text": f"text {p}.{s}", "extracted": verdicts[s % 3][0],
             "correct": verdicts[s % 3][1]}
            for p in range(problems) for s in range(samples)]


def test_the_selection_is_seeded_in_rollout_order_and_at_most_the_size():
    rows = _rows(30, 8)
    same = [sample_table(rows, lambda prompts: prompts, seed=3) for _ in range(2)]
    assert same[0] == same[1] and len(same[0]) == SAMPLE_TABLE_ROWS
    other = sample_table(rows, lambda prompts: prompts, seed=4)
    assert other != same[0]
    order = [(r["problem_id"], r["sample_index"]) for r in same[0]]
    positions = [int(p[1:]) * 8 + s for p, s in order]
    assert positions == sorted(positions) and len(set(positions)) == SAMPLE_TABLE_ROWS
    few = sample_table(_rows(2, 3), lambda prompts: prompts, seed=0)
    assert len(few) == 6  # fewer rows than the size: all of them


def test_each_row_says_what_the_model_saw_and_wrote_and_how_it_was_judged():
    table = sample_table(_rows(1, 3), lambda prompts: [f"<{p}>" for p in prompts], seed=0)
    assert table == [
        {"problem_id": "p0", "sample_index": 0, "prompt": "<0+4=>", "completion": "text 0.0",
         "extracted": "4", "verdict": "correct"},
        {"problem_id": "p0", "sample_index": 1, "prompt": "<0+4=>", "completion": "text 0.1",
         "extracted": "5", "verdict": "wrong"},
        {"problem_id": "p0", "sample_index": 2, "prompt": "<0+4=>", "completion": "text 0.2",
         "extracted": None, "verdict": "no answer extracted"},
    ]


def test_a_rollouts_file_is_read_back_with_prompts_rendered_by_the_policys_template(tmp_path):
    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n"
                               "{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}")
    tokenizer.save_pretrained(tmp_path / "policy")
    pd.DataFrame(_rows(3, 3)).to_parquet(tmp_path / "sft.parquet", index=False)
    samples = rollout_samples(tmp_path / "sft.parquet", tmp_path / "policy",
                              ModelConfig(name_or_path="m", system_prompt="Be brief."), seed=0)
    assert len(samples.rows) == 9
    assert samples.rows[0]["prompt"] == "[system] Be brief.\n[user] 0+4=\n[assistant] "
    assert [r["verdict"] for r in samples.rows[:3]] == ["correct", "wrong", "no answer extracted"]
    assert samples.chat["chat.template"] == "applied"
    assert samples.chat["chat.rendered_prompt"] == samples.rows[0]["prompt"]
    assert len(samples.chat["chat.template_hash"]) == 64
