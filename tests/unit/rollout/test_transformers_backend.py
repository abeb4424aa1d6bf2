"""The transformers backend refuses a prompt with no room for its completion in the model, and
decodes greedily at temperature 0."""

from __future__ import annotations

import pytest

from breadth.config import ModelConfig
from breadth.models.tiny import build_char_tokenizer, build_tiny_model
from breadth.rollout.transformers_backend import decoding_arguments, generate_samples


@pytest.mark.parametrize(
    ("temperature", "top_p", "expected"),
    [
        (0.0, 1.0, {"do_sample": False}),
        (0.0, 0.9, {"do_sample": False}),  # top-p applies to sampling only
        (0.7, 0.9, {"do_sample": True, "temperature": 0.7, "top_p": 0.9}),
        (1.0, 1.0, {"do_sample": True, "temperature": 1.0, "top_p": 1.0}),
    ],
)
def test_temperature_zero_is_greedy_and_passes_no_sampling_settings(temperature, top_p,
                                                                    expected):
    assert decoding_arguments(temperature, top_p) == expected


def test_greedy_samples_take_the_models_most_likely_token_whatever_the_seed():
    """At temperature 0 every token is the argmax of the model's logits on the prefix, and
    its log-prob is the model's own (temperature 1: what vLLM reports for a greedy request)."""
    import torch

    tokenizer = build_char_tokenizer(32)
    model = build_tiny_model(ModelConfig(max_length=32), tokenizer, seed=0)
    prompts = ["1+2=", "7-3="]
    kwargs = {"num_samples": 1, "temperature": 0.0, "top_p": 0.5, "max_new_tokens": 6}
    greedy = generate_samples(model, tokenizer, prompts, seed=0, **kwargs)
    assert [[s.token_ids for s in group] for group in greedy] == [
        [s.token_ids for s in group]
        for group in generate_samples(model, tokenizer, prompts, seed=123, **kwargs)]
    for prompt, (sample,) in zip(prompts, greedy, strict=True):
        ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        generated = sample.token_ids + ([tokenizer.eos_token_id]
                                        if sample.finish_reason == "stop" else [])
        assert len(generated) == len(sample.logprobs) >= 1
        with torch.inference_mode():
            logits = model(torch.tensor([ids + generated])).logits[0, len(ids) - 1 : -1]
        log_probs = torch.log_softmax(logits.float(), dim=-1)
        assert generated == log_probs.argmax(-1).tolist()
        assert sample.logprobs == pytest.approx(log_probs.max(-1).values.tolist(), abs=1e-4)
        assert min(sample.entropy) > 0  # the model's distribution, not the point mass


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


def test_the_backend_samples_on_the_gpu_where_torch_sees_one(tmp_path, monkeypatch):
    """It loaded every policy on the CPU, so a GPU machine sampled its rollouts there."""
    import torch

    from breadth.config import RolloutConfig
    from breadth.rollout import transformers_backend

    tokenizer = build_char_tokenizer()
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    placed = []
    load_on_cpu = transformers_backend.load_policy

    def load_and_record(path, *, device="cpu"):
        placed.append(device)
        return load_on_cpu(path)  # the model itself stays on the CPU here

    monkeypatch.setattr(transformers_backend, "load_policy", load_and_record)
    for cuda in (False, True):
        monkeypatch.setattr(torch.cuda, "is_available", lambda cuda=cuda: cuda)
        with transformers_backend.TransformersBackend().sampler(
                tmp_path, RolloutConfig(num_samples=2, max_new_tokens=4), seed=0, chunk=1):
            pass
    assert placed == ["cpu", "cuda"]
