"""Rollouts with transformers `generate`: batched, seeded, exact per-token entropy from logits."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig, RolloutConfig
from breadth.display.progress import StageBar
from breadth.models.chat import render_prompts
from breadth.models.tiny import inference_device, load_policy, model_context
from breadth.preflight.sequence_fit import check_rows_fit
from breadth.rollout.rows import Sample, request_seed, rollout_rows


def decoding_arguments(temperature: float, top_p: float) -> dict[str, Any]:
    """`generate`'s decoding arguments: sampling at `temperature` and `top_p`, or greedy at
    temperature 0 (`rollout.temperature=0`), where neither applies and neither is passed.

    >>> decoding_arguments(0.0, 0.9)
    {'do_sample': False}
    >>> decoding_arguments(0.7, 0.9)
    {'do_sample': True, 'temperature': 0.7, 'top_p': 0.9}
    """
    if temperature == 0:
        return {"do_sample": False}
    return {"do_sample": True, "temperature": temperature, "top_p": top_p}


def generate_samples(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    *,
    num_samples: int,
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    seed: int,
) -> list[list[Sample]]:
    """`num_samples` completions per prompt, in one `generate` call, seeded by `seed`.
    `prompts` are the text the model sees (rendered: `breadth.models.chat`), tokenized
    without special tokens, as the vLLM backend sends them. At temperature 0, greedy
    (`decoding_arguments`)."""
    import torch

    model.eval()
    expanded = [prompt for prompt in prompts for _ in range(num_samples)]
    encoded = tokenizer(expanded, return_tensors="pt", padding=True, add_special_tokens=False)
    limit = model_context(model.config)
    if limit is not None:
        # Past the model's context transformers generates on (with one warning on stderr):
        # every sample of a too-long prompt was garbage, stopped at the length limit.
        lengths = encoded["attention_mask"].sum(dim=1).tolist()[::num_samples]
        check_rows_fit([n + max_new_tokens for n in lengths], limit,
                       what=f"a prompt + rollout.max_new_tokens={max_new_tokens}",
                       rows=list(prompts), fix="raise model.max_length (the tiny model), lower "
                       "rollout.max_new_tokens, or give shorter problems")
    encoded = {name: tensor.to(model.device) for name, tensor in encoded.items()}
    torch.manual_seed(seed)
    with torch.inference_mode():
        output = model.generate(
            **encoded,
            **decoding_arguments(temperature, top_p),
            max_new_tokens=max_new_tokens,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=tokenizer.pad_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
    new_tokens = output.sequences[:, encoded["input_ids"].shape[1] :]
    # Log-probs and entropy of the distribution actually sampled from (temperature applied);
    # greedy draws from none: there the model's own (temperature 1), which is what vLLM
    # returns for a greedy request (its processed log-probs skip the temperature at 0).
    logits = torch.stack(output.logits, dim=1).float() / (temperature or 1.0)
    log_probs = torch.log_softmax(logits, dim=-1)
    token_logprobs = log_probs.gather(-1, new_tokens.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1)
    eos = tokenizer.eos_token_id
    samples: list[Sample] = []
    for row in range(new_tokens.shape[0]):
        ids = new_tokens[row].tolist()
        length = ids.index(eos) + 1 if eos in ids else len(ids)
        finished = eos in ids[:length]
        content = ids[: length - 1] if finished else ids[:length]
        samples.append(
            Sample(
                text=tokenizer.decode(content, skip_special_tokens=True),
                token_ids=content,
                logprobs=token_logprobs[row, :length].tolist(),
                entropy=entropy[row, :length].tolist(),
                finish_reason="stop" if finished else "length",
            )
        )
    return [samples[i * num_samples : (i + 1) * num_samples] for i in range(len(prompts))]


def rollout_transformers(
    model: Any,
    tokenizer: Any,
    problems: Sequence[Mapping[str, Any]],
    config: RolloutConfig,
    *,
    model_name: str,
    seed: int,
    progress: bool = True,
    chat: ModelConfig | None = None,
) -> list[dict[str, Any]]:
    """n samples for every problem -> rollout rows. Deterministic for a given seed. Each
    prompt is rendered by `chat` (`breadth.models.chat`); the rows keep the problem's own."""
    per_batch = max(1, config.batch_size // config.num_samples)
    prompts = render_prompts(tokenizer, [problem["prompt"] for problem in problems], chat)
    rows: list[dict[str, Any]] = []
    with StageBar(f"rollout {model_name}", len(problems) * config.num_samples, "sample",
                  show=progress) as bar:
        for start in range(0, len(problems), per_batch):
            chunk = problems[start : start + per_batch]
            groups = generate_samples(
                model, tokenizer, prompts[start : start + per_batch],
                num_samples=config.num_samples, temperature=config.temperature,
                top_p=config.top_p, max_new_tokens=config.max_new_tokens,
                seed=request_seed(seed, chunk[0]["problem_id"]),
            )
            for problem, samples in zip(chunk, groups, strict=True):
                rows.extend(rollout_rows(problem, samples, model=model_name,
                                         backend="transformers", seed=seed))
            bar.update(len(chunk) * config.num_samples)
    return rows


def transformers_sampler(model: Any, tokenizer: Any, config: RolloutConfig, chunk: int = 64,
                         on_samples: Callable[[int], None] | None = None,
                         chat: ModelConfig | None = None):
    """A `breadth.evaluation.search.Sampler` over this backend: (prompts, n, seed) -> texts;
    `on_samples(count)` hears of each chunk's samples as they are drawn (progress); each
    prompt is rendered by `chat` first (`breadth.models.chat`)."""

    def sample(prompts: list[str], n: int, seed: int) -> list[list[str]]:
        prompts = render_prompts(tokenizer, prompts, chat)
        texts: list[list[str]] = []
        for start in range(0, len(prompts), chunk):
            groups = generate_samples(
                model, tokenizer, prompts[start : start + chunk], num_samples=n,
                temperature=config.temperature, top_p=config.top_p,
                max_new_tokens=config.max_new_tokens, seed=seed + start,
            )
            texts.extend([sample.text for sample in group] for group in groups)
            if on_samples is not None:
                on_samples(len(groups) * n)
        return texts

    return sample


class TransformersBackend:
    """`breadth.rollout.backends.RolloutBackend` over transformers `generate`, in process."""

    def rollout(
        self, policy_dir: Path, problems: Sequence[Mapping[str, Any]], config: RolloutConfig,
        *, model_name: str, seed: int, progress: bool = True, chat: ModelConfig | None = None,
    ) -> list[dict[str, Any]]:
        # On the GPU where there is one: a policy loaded on the CPU sampled there, GPU or not.
        model, tokenizer = load_policy(policy_dir, device=inference_device())
        return rollout_transformers(model, tokenizer, problems, config, model_name=model_name,
                                    seed=seed, progress=progress, chat=chat)

    @contextlib.contextmanager
    def sampler(
        self, policy_dir: Path, config: RolloutConfig, *, seed: int, chunk: int,
        on_samples: Callable[[int], None] | None = None, chat: ModelConfig | None = None,
    ) -> Iterator[Any]:
        # On the GPU where there is one: a policy loaded on the CPU sampled there, GPU or not.
        model, tokenizer = load_policy(policy_dir, device=inference_device())
        yield transformers_sampler(model, tokenizer, config, chunk=chunk, on_samples=on_samples,
                                   chat=chat)
