"""training/grpo.py: the dataset names each prompt's row and the scorer holds its reward
columns; what the reward functions read must be what TRL passed when the dataset carried them."""

from __future__ import annotations

import pytest

from breadth.data.prepare import prepare_dataset, read_rows
from breadth.training.grpo import REWARD_COLUMNS


@pytest.mark.parametrize("source, fmt, reasoning", [
    ("synthetic:arithmetic", "free_form", False),
    ("synthetic:arithmetic", "mcq", False),
    ("synthetic:chain", "free_form", True),
    ("synthetic:countdown", "free_form", False),
    ("synthetic:pairs", "mcq", True),
])
def test_the_reward_rows_are_what_trl_passed_from_the_dataset(tmp_path, source, fmt, reasoning):
    from datasets import Dataset

    prepare_dataset(source, fmt=fmt, out_dir=tmp_path, num_train=24, num_eval=4,
                    reasoning=reasoning)
    rows = read_rows(tmp_path / "train.parquet")
    reward_rows = [{c: row[c] for c in REWARD_COLUMNS} for row in rows]
    # Before, each row's reward columns went through an Arrow dataset and TRL's data loader
    # (`__getitems__`); now the scorer reads them from these rows directly.
    through_trl = Dataset.from_list(reward_rows).__getitems__(list(range(len(reward_rows))))
    assert through_trl == reward_rows
    # == holds for 1 and 1.0, or True and 1: the types must be the same as well.
    assert [[type(v) for v in row.values()] for row in through_trl] == [
        [type(v) for v in row.values()] for row in reward_rows]
