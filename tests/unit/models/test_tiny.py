"""breadth.models.tiny: loading a policy while another thread loads one."""

from __future__ import annotations

import threading

import pytest

from breadth.config import ModelConfig
from breadth.models.tiny import build_char_tokenizer, build_tiny_model, load_policy


def test_two_threads_load_policies_at_once_without_breaking_later_loads(tmp_path):
    """A rollout loading its policy while the background MLflow upload loaded another failed
    with "Cannot copy out of meta tensor" (8 of 10 loads), and so did every later load."""
    tokenizer = build_char_tokenizer()
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    errors: list[str] = []

    def load_a_few() -> None:
        for _ in range(3):
            try:
                load_policy(tmp_path)
            except Exception as error:  # noqa: BLE001 - collected for the assertion
                errors.append(repr(error)[:200])

    threads = [threading.Thread(target=load_a_few) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    model, _ = load_policy(tmp_path)
    assert sum(p.numel() for p in model.parameters()) > 0


def test_the_tokenizer_knows_the_models_context(tmp_path):
    """It said 4096 for a model of 96 positions: nothing warned of a longer sequence."""
    config = ModelConfig(max_length=64)
    tokenizer = build_char_tokenizer(config.max_length)
    assert tokenizer.model_max_length == 64
    build_tiny_model(config, tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    model, loaded = load_policy(tmp_path)
    assert loaded.model_max_length == model.config.max_position_embeddings == 64


def test_a_tokenizer_saved_with_4096_is_loaded_with_the_models_context(tmp_path):
    tokenizer = build_char_tokenizer(4096)
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert load_policy(tmp_path)[1].model_max_length == ModelConfig().max_length


@pytest.mark.parametrize(("text", "read_as"), [
    ("Janet\u2019s \u201cduck\u201d eggs\u2026", "Janet's \"duck\" eggs..."),
    ("3\u20134 \u2014 5\u00d76\u00f72, \u22127", "3-4 -- 5*6/2, -7"),
    ("a\u00a0b\tc\r\nd", "a b c\nd"),
])
def test_characters_with_an_ascii_spelling_are_read_as_it_not_as_unknown(tmp_path, text, read_as):
    tokenizer = build_char_tokenizer()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids
    assert tokenizer.decode(ids) == read_as
    # The saved tokenizer (what vLLM, TRL and the rollouts load) reads them the same way.
    tokenizer.save_pretrained(tmp_path)
    from transformers import AutoTokenizer

    assert AutoTokenizer.from_pretrained(tmp_path)(text)["input_ids"] == ids


def test_characters_without_one_stay_unknown():
    tokenizer = build_char_tokenizer()
    ids = tokenizer("350\u00b0 \u221a49 \u00bd", add_special_tokens=False)["input_ids"]
    assert ids.count(tokenizer.unk_token_id) == 3


def test_the_context_changes_no_weight_and_no_logit():
    """The mcq, countdown and study presets declare model.max_length=128 (their search prompts
    need it): with rotary positions the model is the one of 96."""
    import torch

    tokenizer = build_char_tokenizer()
    ids = tokenizer(["12+7=? A)1 B)2 C)3 D)4 Answer:" * 2], return_tensors="pt")["input_ids"]
    models = [build_tiny_model(ModelConfig(max_length=n), tokenizer, seed=0) for n in (96, 128)]
    for first, second in zip(*(model.parameters() for model in models), strict=True):
        assert torch.equal(first, second)
    with torch.no_grad():
        assert torch.equal(models[0](ids).logits, models[1](ids).logits)
