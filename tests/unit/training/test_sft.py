"""SFT takes the model's context as its max_length and refuses rows past it, never cuts them."""

from __future__ import annotations

import pytest

from breadth.config import ModelConfig, SFTConfig
from breadth.models.tiny import build_char_tokenizer, build_tiny_model
from breadth.training import sft


def _tiny(max_length: int):
    tokenizer = build_char_tokenizer(max_length)
    model = build_tiny_model(ModelConfig(max_length=max_length), tokenizer, seed=0)
    return model, tokenizer


class _Stop(Exception):
    pass


def test_sft_passes_the_models_context_as_max_length(tmp_path, monkeypatch):
    """TRL was given max_length=None: nothing bounded a sequence by the model's 96 positions."""
    seen = {}

    class Trainer:
        def __init__(self, *, args, **kwargs):
            seen["max_length"] = args.max_length
            raise _Stop

    monkeypatch.setattr("trl.SFTTrainer", Trainer)
    model, tokenizer = _tiny(48)
    with pytest.raises(_Stop):
        sft.train_sft(model, tokenizer, [{"prompt": "1+2=", "target": "3"}], SFTConfig(),
                      output_dir=tmp_path, seed=0)
    assert seen["max_length"] == 48


def test_a_row_past_the_models_context_is_refused_before_training(tmp_path, monkeypatch):
    def started(**kwargs):
        raise _Stop

    monkeypatch.setattr("trl.SFTTrainer", started)
    model, tokenizer = _tiny(16)
    rows = [{"problem_id": "short", "prompt": "1+2=", "target": "3"},
            {"problem_id": "long", "prompt": "12+34+56+78+9=", "target": "189"}]  # 14 + 3 + eos
    with pytest.raises(ValueError, match=r"1 of 2 rows do not fit: SFT's prompt \+ target \+ "
                                         r"<eos> needs up to 18 tokens, over the limit of 16 "
                                         r"\(problem long"):
        sft.train_sft(model, tokenizer, rows, SFTConfig(), output_dir=tmp_path, seed=0)
    rows[1].update(prompt="12+34+56+78=", target="180")  # 12 + 3 + eos: fits exactly
    with pytest.raises(_Stop):
        sft.train_sft(model, tokenizer, rows, SFTConfig(), output_dir=tmp_path, seed=0)
