"""Prompts as the model sees them: the one home of chat-template rendering.

A row's `prompt` is plain text. An instruct model expects it as a user message inside its
chat template (`<|im_start|>user ... <|im_start|>assistant`), a system message first if
`model.system_prompt` says so. SFT, GRPO, both rollout backends and search all render prompts
through this module, so the text a model is trained on is the text it is sampled from:

- `render_prompt`: the text the model continues from (rollouts and search send it as is,
  tokenized without special tokens: the template carries its own);
- `as_messages`: the same prompt as TRL's conversational format (SFT and GRPO hand TRL the
  messages, and TRL applies the same template with `add_generation_prompt=True`).

`model.chat_template`: `auto` uses the tokenizer's template where it has one (the tiny
character model has none, so it keeps raw prompts), `on` requires one, `off` sends raw prompts.
A tokenizer that is not at hand (None: a remote-only vLLM policy) counts as one without a
template. No torch or transformers import: only the tokenizer object is used.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from breadth.config import ConfigError, ModelConfig

_DEFAULTS = ModelConfig()
MAX_TAG_CHARS = 5000


def has_chat_template(tokenizer: Any) -> bool:
    """Whether the tokenizer carries a chat template (None: no tokenizer, so no template)."""
    return bool(getattr(tokenizer, "chat_template", None))


def check_chat_template(tokenizer: Any, settings: ModelConfig | None = None, *,
                        model: str = "") -> None:
    """ConfigError when `settings` need a template the tokenizer lacks: model.chat_template=on
    or a model.system_prompt, with a tokenizer that has none. `model` names it in the message.

    >>> from types import SimpleNamespace
    >>> plain = SimpleNamespace(chat_template=None)
    >>> check_chat_template(plain, ModelConfig(name_or_path="m", chat_template="on"), model="m")
    Traceback (most recent call last):
    ...
    breadth.config.reader.ConfigError: model.chat_template=on, but the tokenizer of m has no chat template: set model.chat_template=auto (use its template where there is one) or off (raw prompts), or set model.name_or_path to a model whose tokenizer has one
    """
    settings = settings or _DEFAULTS
    if has_chat_template(tokenizer):
        return
    whose = f"the tokenizer of {model}" if model else "the model's tokenizer"
    lacks = ("could not be loaded here (so there is no chat template to apply)"
             if tokenizer is None else "has no chat template")
    if settings.chat_template == "on":
        raise ConfigError(
            f"model.chat_template=on, but {whose} {lacks}: set "
            "model.chat_template=auto (use its template where there is one) or off (raw "
            "prompts), or set model.name_or_path to a model whose tokenizer has one")
    if settings.system_prompt and settings.chat_template == "auto":
        raise ConfigError(
            f"model.system_prompt is set, but {whose} {lacks}, so the system prompt would be "
            "dropped: leave model.system_prompt empty, or set model.name_or_path to a "
            "model whose tokenizer has a chat template")


def uses_chat(tokenizer: Any, settings: ModelConfig | None = None) -> bool:
    """Whether prompts go through the chat template (after `check_chat_template`)."""
    settings = settings or _DEFAULTS
    check_chat_template(tokenizer, settings)
    return settings.chat_template != "off" and has_chat_template(tokenizer)


def as_messages(prompt: str, settings: ModelConfig | None = None) -> list[dict[str, str]]:
    """The prompt as chat messages: the system prompt (if any), then the user's prompt.

    >>> as_messages("1+2=", ModelConfig(name_or_path="m", system_prompt="Be brief."))
    [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': '1+2='}]
    """
    system = (settings or _DEFAULTS).system_prompt
    return [*([{"role": "system", "content": system}] if system else []),
            {"role": "user", "content": prompt}]


def render_prompt(tokenizer: Any, prompt: str, settings: ModelConfig | None = None) -> str:
    """The text the model sees for `prompt`: its messages through the chat template, ending
    where the assistant's answer begins, when chat applies (`uses_chat`); else `prompt`."""
    return render_prompts(tokenizer, [prompt], settings)[0]


def render_prompts(tokenizer: Any, prompts: Sequence[str],
                   settings: ModelConfig | None = None) -> list[str]:
    """`render_prompt` of each prompt (the settings checked once)."""
    if not uses_chat(tokenizer, settings):
        return [str(prompt) for prompt in prompts]
    return [tokenizer.apply_chat_template(as_messages(str(prompt), settings), tokenize=False,
                                          add_generation_prompt=True)
            for prompt in prompts]


def render_conversation(tokenizer: Any, prompt: str, target: str,
                        settings: ModelConfig | None = None) -> str:
    """The prompt's messages and `target` as the assistant's answer, through the chat template:
    the whole sequence SFT trains on (check `uses_chat` first)."""
    messages = [*as_messages(str(prompt), settings), {"role": "assistant", "content": str(target)}]
    return tokenizer.apply_chat_template(messages, tokenize=False)


def template_hash(tokenizer: Any) -> str:
    """sha256 of the tokenizer's chat template ("" when it has none): which template a run
    rendered with, as a tag.

    >>> from types import SimpleNamespace
    >>> template_hash(SimpleNamespace(chat_template="{{ x }}"))[:12], template_hash(None)
    ('e52c737297f7', '')
    """
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        return ""
    text = template if isinstance(template, str) else json.dumps(template, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def chat_record(tokenizer: Any, settings: ModelConfig | None, prompt: str) -> dict[str, str]:
    """What a run records of its prompting, as MLflow tags: whether the template applied
    (`chat.template`: applied | raw), its hash, and `prompt` as the model sees it (its first
    `MAX_TAG_CHARS` characters: MLflow's limit on a tag)."""
    settings = settings or _DEFAULTS
    applied = uses_chat(tokenizer, settings)
    return {
        "chat.template": "applied" if applied else "raw",
        "chat.template_hash": template_hash(tokenizer) if applied else "",
        "chat.rendered_prompt": render_prompt(tokenizer, prompt, settings)[:MAX_TAG_CHARS],
    }
