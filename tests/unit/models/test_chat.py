"""Chat templates have one home (`breadth.models.chat`): SFT, GRPO, both rollout backends and
search feed the model the same rendered prompt; a forced template the tokenizer lacks is refused
naming the key and the fix; the character model keeps its raw prompts."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pandas as pd
import pytest

from breadth import stages
from breadth.config import ConfigError, ModelConfig, load_config
from breadth.data.formats import render_free_form
from breadth.data.generators import generate_arithmetic
from breadth.models.chat import (
    as_messages,
    chat_record,
    check_chat_template,
    render_prompt,
    render_prompts,
    template_hash,
)
from breadth.models.tiny import build_char_tokenizer, build_tiny_model

# A ChatML-like template in the character tokenizer's characters; each turn ends with the
# tokenizer's eos, as instruct models' templates end theirs with their end-of-turn token.
TEMPLATE = ("{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}"
            "{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
SYSTEM = "Answer with a number."


def chat_tokenizer(max_length: int = 256):
    tokenizer = build_char_tokenizer(max_length)
    tokenizer.chat_template = TEMPLATE
    return tokenizer


def settings(**changes) -> ModelConfig:
    return ModelConfig(name_or_path="a-chat-model", **changes)


def test_a_prompt_becomes_the_templates_text_with_the_system_prompt_first():
    tokenizer = chat_tokenizer()
    rendered = render_prompt(tokenizer, "1+5=", settings(system_prompt=SYSTEM))
    assert rendered == f"<|system|>\n{SYSTEM}<eos>\n<|user|>\n1+5=<eos>\n<|assistant|>\n"
    # Every character, and <eos> as the one special token, is in the character vocabulary.
    ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert tokenizer.unk_token_id not in ids and ids.count(tokenizer.eos_token_id) == 2
    assert render_prompt(tokenizer, "1+5=", settings()) == "<|user|>\n1+5=<eos>\n<|assistant|>\n"
    assert as_messages("1+5=", settings()) == [{"role": "user", "content": "1+5="}]
    assert render_prompt(tokenizer, "1+5=", settings(chat_template="off")) == "1+5="


def test_the_character_model_keeps_raw_prompts():
    tokenizer = build_char_tokenizer()
    prompts = ["1+5=", "Attempts (score, higher is better):\n[0.00] 7\n1+5="]
    for chat in (None, ModelConfig(), ModelConfig(chat_template="off")):
        assert render_prompts(tokenizer, prompts, chat) == prompts
    assert template_hash(tokenizer) == ""
    assert chat_record(tokenizer, None, "1+5=") == {
        "chat.template": "raw", "chat.template_hash": "", "chat.rendered_prompt": "1+5="}


def test_the_record_names_the_template_by_its_hash_and_shows_a_rendered_prompt():
    tokenizer = chat_tokenizer()
    record = chat_record(tokenizer, settings(), "1+5=")
    assert record["chat.template"] == "applied"
    assert len(record["chat.template_hash"]) == 64
    assert record["chat.template_hash"] == template_hash(chat_tokenizer())  # the text, not the object
    assert record["chat.rendered_prompt"] == "<|user|>\n1+5=<eos>\n<|assistant|>\n"


def test_a_forced_template_that_the_tokenizer_lacks_is_refused_with_the_key_and_the_fix():
    plain = build_char_tokenizer()
    with pytest.raises(ConfigError, match=r"model.chat_template=on, but the tokenizer of m has "
                                          r"no chat template: set model.chat_template=auto .* "
                                          r"or off .*model.name_or_path to a model whose"):
        check_chat_template(plain, settings(chat_template="on"), model="m")
    with pytest.raises(ConfigError, match=r"model.system_prompt is set, but the model's "
                                          r"tokenizer has no chat template"):
        render_prompts(plain, ["1+5="], settings(system_prompt=SYSTEM))
    # A tokenizer that could not be loaded (a remote-only vLLM policy) is said to be that.
    with pytest.raises(ConfigError, match="could not be loaded here"):
        render_prompts(None, ["1+5="], settings(chat_template="on"))


def test_settings_that_cannot_hold_are_refused_by_the_config():
    with pytest.raises(ValueError, match=r"model.system_prompt is set but "
                                         r"model.chat_template=off .*leave model.system_prompt"):
        load_config("default", ["model.name_or_path=m", "model.chat_template=off",
                                "model.system_prompt=Be brief."])
    # The tiny character model has no template: known without loading a tokenizer.
    for override in ("model.chat_template=on", "model.system_prompt=Be brief."):
        with pytest.raises(ValueError, match=r"the tiny character-level model .*has none: set "
                                             r"model.chat_template=auto or off"):
            load_config("default", [override])


@pytest.fixture(scope="module")
def plain_policy(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("plain-policy")
    tokenizer = build_char_tokenizer()
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_fit_check_refuses_a_forced_template_before_the_run(plain_policy, tmp_path,
                                                               monkeypatch):
    from breadth.preflight.checks import check_fit

    monkeypatch.setenv("BREADTH_HOME", str(tmp_path))
    config = load_config("default", [f"model.name_or_path={plain_policy}",
                                     "model.chat_template=on", "sft.enabled=false"])
    with pytest.raises(ConfigError, match=rf"model.chat_template=on, but the tokenizer of "
                                          rf"model.name_or_path={plain_policy} has no chat "
                                          r"template: set model.chat_template=auto"):
        check_fit(config)


# --- one rendered prompt, every consumer --------------------------------------------------


@pytest.fixture(scope="module")
def chat_policy(tmp_path_factory) -> Path:
    """A tiny model whose saved tokenizer carries TEMPLATE (save_pretrained keeps it)."""
    folder = tmp_path_factory.mktemp("chat-policy")
    tokenizer = chat_tokenizer()
    build_tiny_model(ModelConfig(max_length=256), tokenizer, seed=0).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def dataset(tmp_path) -> tuple[Path, dict]:
    """One problem, in both splits: SFT and GRPO read train, rollouts and search eval."""
    row = render_free_form(generate_arithmetic(1, seed=0, difficulty=1, split="train")[0])
    pd.DataFrame([row]).to_parquet(tmp_path / "train.parquet", index=False)
    pd.DataFrame([{**row, "split": "eval"}]).to_parquet(tmp_path / "eval.parquet", index=False)
    return tmp_path, row


class _Stop(Exception):
    pass


def _chat_config(policy: Path, *overrides: str):
    return load_config("default", [
        f"model.name_or_path={policy}", f"model.system_prompt={SYSTEM}",
        "rollout.num_samples=4", "rollout.max_new_tokens=3", "evaluation.search_budget=4",
        "rl.prompts_per_step=1", "rl.num_generations=2", *overrides])


def _sft_split(example: dict) -> tuple[list[int], list[int]]:
    """A tokenized SFT example's prompt and the tokens the loss is on (labels not -100)."""
    trained = [label != -100 for label in example["labels"]]
    start = trained.index(True)
    assert all(trained[start:]), "the loss is on one stretch at the end: the completion"
    return example["input_ids"][:start], example["input_ids"][start:]


def _fake_vllm(monkeypatch) -> list[dict]:
    """A vLLM server that records each completions request's body."""
    from breadth.rollout import vllm_backend, vllm_fleet

    bodies: list[dict] = []

    @contextlib.contextmanager
    def endpoints(policy_dir, config, *, seed):
        yield ["http://127.0.0.1:1"]

    def post(client, url, body, problem_id):
        bodies.append(body)
        return {"choices": [{"index": i, "text": "7", "token_ids": [10], "finish_reason": "length",
                             "logprobs": {"token_logprobs": [-0.5]}} for i in range(body["n"])]}

    monkeypatch.setattr(vllm_backend, "vllm_endpoints", endpoints)
    monkeypatch.setattr(vllm_fleet, "pick_served_model", lambda url, policy_dir, name: "served")
    monkeypatch.setattr(vllm_fleet, "post_completion", post)
    return bodies


def _generated_prompts(monkeypatch) -> list[str]:
    """Every prompt the transformers backend tokenizes and generates from."""
    from breadth.rollout import transformers_backend

    seen: list[str] = []
    generate = transformers_backend.generate_samples

    def recording(model, tokenizer, prompts, **kwargs):
        seen.extend(prompts)
        return generate(model, tokenizer, prompts, **kwargs)

    monkeypatch.setattr(transformers_backend, "generate_samples", recording)
    return seen


def test_sft_grpo_both_backends_and_search_feed_the_model_one_rendered_prompt(
        chat_policy, dataset, tmp_path, monkeypatch):
    from transformers import AutoTokenizer
    from trl import GRPOTrainer, SFTTrainer

    folder, row = dataset
    tokenizer = AutoTokenizer.from_pretrained(chat_policy)
    expected = f"<|system|>\n{SYSTEM}<eos>\n<|user|>\n{row['prompt']}<eos>\n<|assistant|>\n"
    config = _chat_config(chat_policy)
    assert render_prompt(tokenizer, row["prompt"], config.model) == expected

    def ids(text: str) -> list[int]:  # as both backends tokenize: the template holds its tokens
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    fed: dict[str, list[int]] = {}
    trainers = {}

    def stop_before_training(self, *args, **kwargs):
        trainers["grpo" if isinstance(self, GRPOTrainer) else "sft"] = self
        raise _Stop

    # SFT: TRL's own tokenization of the rows breadth built; the loss mask covers the
    # assistant's turn only (the target and the template's end of turn).
    monkeypatch.setattr(SFTTrainer, "train", stop_before_training)
    with pytest.raises(_Stop):
        stages.sft_stage(config, folder, chat_policy, tmp_path / "sft")
    prompt_ids, completion_ids = _sft_split(trainers["sft"].train_dataset[0])
    fed["sft"] = prompt_ids
    assert tokenizer.decode(completion_ids) == f"{row['target']}<eos>\n"

    # GRPO: the prompts TRL's trainer tokenizes for generation, from breadth's dataset rows.
    monkeypatch.setattr(GRPOTrainer, "train", stop_before_training)
    with pytest.raises(_Stop):
        stages.rl_stage(config, folder, chat_policy, tmp_path / "rl")
    grpo = trainers["grpo"]
    fed["grpo"] = grpo._tokenize_prompts([grpo.train_dataset[0]["prompt"]])[0][0]

    # The transformers backend: its rollouts, and search's first generation.
    generated = _generated_prompts(monkeypatch)
    stages.rollout_stage(config, folder, chat_policy, "sft", tmp_path / "t.parquet", progress=False)
    fed["transformers rollout"] = ids(generated[0])
    generated.clear()
    stages.search_stage(config, folder, chat_policy)
    fed["transformers search"] = ids(generated[0])
    # Child prompts (parents shown) are rendered too: the whole child prompt is the user's.
    assert len(generated) > 1 and all(p.startswith(f"<|system|>\n{SYSTEM}<eos>\n<|user|>\n")
                                      and p.endswith("<eos>\n<|assistant|>\n") for p in generated)

    # The vLLM backend: the text each completions request carries, tokenized as the server
    # is told to (add_special_tokens false).
    bodies = _fake_vllm(monkeypatch)
    vllm = _chat_config(chat_policy, "rollout.backend=vllm")
    stages.rollout_stage(vllm, folder, chat_policy, "sft", tmp_path / "v.parquet", progress=False)
    assert all(body["add_special_tokens"] is False for body in bodies)
    fed["vllm rollout"] = ids(bodies[0]["prompt"])
    bodies.clear()
    stages.search_stage(vllm, folder, chat_policy)
    fed["vllm search"] = ids(bodies[0]["prompt"])

    assert fed == dict.fromkeys(fed, ids(expected)), {k: tokenizer.decode(v) for k, v in fed.items()}
    assert len(fed) == 6


def test_without_a_template_every_consumer_keeps_the_raw_prompt(plain_policy, dataset, tmp_path,
                                                                monkeypatch):
    """The character model's path is unchanged: plain prompt-completion SFT with eos, plain
    GRPO prompts, raw text to both backends."""
    from trl import GRPOTrainer, SFTTrainer

    folder, row = dataset
    config = load_config("default", [f"model.name_or_path={plain_policy}",
                                     "rl.prompts_per_step=1", "rl.num_generations=2",
                                     "rollout.num_samples=4", "rollout.max_new_tokens=3"])
    trainers = []

    def stop_before_training(self, *args, **kwargs):
        trainers.append(self)
        raise _Stop

    monkeypatch.setattr(SFTTrainer, "train", stop_before_training)
    monkeypatch.setattr(GRPOTrainer, "train", stop_before_training)
    with pytest.raises(_Stop):
        stages.sft_stage(config, folder, plain_policy, tmp_path / "sft")
    with pytest.raises(_Stop):
        stages.rl_stage(config, folder, plain_policy, tmp_path / "rl")
    sft, grpo = trainers
    prompt_ids, completion_ids = _sft_split(sft.train_dataset[0])
    decode = sft.processing_class.decode
    assert (decode(prompt_ids), decode(completion_ids)) == (row["prompt"], f"{row['target']}<eos>")
    assert grpo.train_dataset[0]["prompt"] == row["prompt"]
    generated = _generated_prompts(monkeypatch)
    stages.rollout_stage(config, folder, plain_policy, "sft", tmp_path / "t.parquet",
                         progress=False)
    bodies = _fake_vllm(monkeypatch)
    vllm = config.model_copy(update={"rollout": config.rollout.model_copy(
        update={"backend": "vllm"})})
    stages.rollout_stage(vllm, folder, plain_policy, "sft", tmp_path / "v.parquet",
                         progress=False)
    assert generated == [row["prompt"]] and [b["prompt"] for b in bodies] == [row["prompt"]]
