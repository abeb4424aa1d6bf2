"""The transformers backend refuses a prompt with no room for its completion in the model."""

from __future__ import annotations

import pytest

from breadth.config import ModelConfig
from breadth.models.tiny import build_char_tokenizer, build_tiny_model
from breadth.rollout.transformers_backend import generate_samples


def test_a_prompt_past_the_models_context_is_refused_not_generated_on():
    """transformers generated past the 96 positions with one warning on stderr: 99% of a
    GSM8K run's samples stopped at the length limit, none correct."""
    tokenizer = build_char_tokenizer(32)
    model = build_tiny_model(ModelConfig(max_length=32), tokenizer, seed=0)
    kwargs = {"num_samples": 2, "temperature": 1.0, "top_p": 1.0, "max_new_tokens": 8, "seed": 0}
    assert len(generate_samples(model, tokenizer, ["1+2=", "x" * 24], **kwargs)) == 2  # 24 + 8
    with pytest.raises(ValueError, match=r"1 of 2 rows do not fit: a prompt \+ "
                                         r"rollout.max_new_tokens=8 needs up to 33 tokens, "
                                         r"over the limit of 32 \(prompt 'xxxx"):
        generate_samples(model, tokenizer, ["1+2=", "x" * 25], **kwargs)
