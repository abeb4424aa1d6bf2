"""Benchmark: rollout throughput of our backends against the raw tools they wrap.

Run: .venv/bin/python benchmarks/bench_rollout.py [--policy DIR] [--problems P] [--samples N]
     [--large-n 64] [--max-new-tokens T] [--repeats R]

Ratios (throughput = samples per second), all from one run:
  (a) our vLLM backend (`rollout_vllm` against a running server) / the same completions
      requests sent straight to that server with plain HTTP at the same concurrency, keeping
      only the parsed JSON (target >= 0.95);
  (b) our transformers backend (`rollout_transformers`) / raw `model.generate` on the same
      prompts in the same batches, decoding the new tokens and nothing else (target >= 0.90);
  (c) vLLM / transformers, both our backends, at n = --large-n samples per problem.
(a) and (b) alternate ours and raw `--repeats` times after a warm-up and compare the best
time of each (other jobs on a shared machine only ever add time), medians printed beside. Without --policy the tiny model is built and
SFT-trained briefly (~20 s) so that it answers and stops like a real policy. Needs the vLLM
environment (scripts/install_vllm_env.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from breadth.config import ModelConfig, RolloutConfig, SFTConfig
from breadth.rollout.transformers_backend import rollout_transformers
from breadth.rollout.vllm_backend import MAX_IN_FLIGHT, completion_request, rollout_vllm
from breadth.rollout.vllm_server import VLLMServer, served_models

TARGETS = {"a": 0.95, "b": 0.90}


def make_problems(count: int) -> list[dict[str, Any]]:
    from breadth.data.formats import render
    from breadth.data.synthetic import generate_arithmetic

    easy = generate_arithmetic(85, seed=0, difficulty=1, split="train")
    harder = generate_arithmetic(max(0, count - len(easy)), seed=0, difficulty=2, split="train")
    return [render(record, "free_form") for record in easy + harder][:count]


def train_policy(problems: list[dict[str, Any]], out: Path) -> Path:
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.training.sft import train_sft

    tokenizer = build_char_tokenizer()
    model = build_tiny_model(ModelConfig(), tokenizer, seed=0)
    train_sft(model, tokenizer, problems * 4, SFTConfig(epochs=8, batch_size=32),
              output_dir=out, seed=0)  # fmt: skip
    return out / "final"


def raw_http(url: str, bodies: list[dict[str, Any]], in_flight: int) -> list[dict[str, Any]]:
    """The same requests with a plain httpx client: POST, parse JSON, nothing else."""
    import httpx

    with httpx.Client(timeout=900) as client, ThreadPoolExecutor(in_flight) as pool:

        def post(body: dict[str, Any]) -> dict[str, Any]:
            response = client.post(f"{url}/v1/completions", json=body)
            response.raise_for_status()
            return response.json()

        return list(pool.map(post, bodies))


def raw_generate(model: Any, tokenizer: Any, prompts: list[str], config: RolloutConfig) -> list:
    """`model.generate` on the same prompts in the same batches as rollout_transformers."""
    import torch

    per_batch = max(1, config.batch_size // config.num_samples)
    texts: list[str] = []
    for start in range(0, len(prompts), per_batch):
        chunk = [p for p in prompts[start : start + per_batch] for _ in range(config.num_samples)]
        encoded = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(start)
        with torch.inference_mode():
            output = model.generate(
                **encoded, do_sample=True, temperature=config.temperature, top_p=config.top_p,
                max_new_tokens=config.max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
            )  # fmt: skip
        new = output[:, encoded["input_ids"].shape[1] :]
        texts.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    return texts


def seconds(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(ours: Any, raw: Any, repeats: int, label: str) -> tuple[float, float]:
    """Best seconds of ours and raw, run alternately (raw first) `repeats` times each."""
    ours_times, raw_times = [], []
    for _ in range(repeats):
        raw_times.append(seconds(raw))
        ours_times.append(seconds(ours))
    print(f"{label}: median ratio {statistics.median(raw_times) / statistics.median(ours_times):.3f}"
          f" (ours {[round(t, 3) for t in ours_times]} s, raw {[round(t, 3) for t in raw_times]} s)")  # fmt: skip
    return min(ours_times), min(raw_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, help="model dir; default: tiny model + short SFT")
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--samples", type=int, default=16, help="n for (a) and (b)")
    parser.add_argument("--large-n", type=int, default=64, help="n for (c)")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    from breadth.models.tiny import load_policy

    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    problems = make_problems(args.problems)
    scratch = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    policy = args.policy or train_policy(problems, scratch / "sft")
    config = RolloutConfig(
        num_samples=args.samples, temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
    )  # fmt: skip
    samples = len(problems) * args.samples
    results: dict[str, float] = {}

    model, tokenizer = load_policy(policy)
    prompts = [p["prompt"] for p in problems]

    def ours_hf() -> list:
        return rollout_transformers(model, tokenizer, problems, config, model_name="bench",
                                    seed=0, progress=False)  # fmt: skip

    ours_hf()  # warm-up
    ours_s, raw_s = alternate(ours_hf, lambda: raw_generate(model, tokenizer, prompts, config),
                              args.repeats, "(b)")  # fmt: skip
    results["b"] = raw_s / ours_s
    print(f"(b) transformers: ours {samples / ours_s:,.0f} samples/s, raw generate "
          f"{samples / raw_s:,.0f} samples/s")  # fmt: skip

    started = time.perf_counter()
    with VLLMServer(Path(policy), home=scratch, seed=0) as server:
        print(f"vLLM server healthy after {time.perf_counter() - started:.1f} s")
        served = served_models(server.url)[0]
        url_config = config.model_copy(update={"vllm_url": server.url})
        bodies = [completion_request(p, config, model=served, seed=0) for p in problems]
        in_flight = max(1, min(MAX_IN_FLIGHT, config.batch_size // config.num_samples))

        def ours_vllm() -> list:
            return rollout_vllm(policy, problems, url_config, model_name="bench", seed=0,
                                progress=False)  # fmt: skip

        warm = seconds(ours_vllm)
        print(f"vLLM warm-up request batch: {warm:.1f} s")
        ours_s, raw_s = alternate(ours_vllm, lambda: raw_http(server.url, bodies, in_flight),
                                  args.repeats, "(a)")  # fmt: skip
        results["a"] = raw_s / ours_s
        print(f"(a) vLLM: ours {samples / ours_s:,.0f} samples/s, raw HTTP "
              f"{samples / raw_s:,.0f} samples/s")  # fmt: skip

        large = config.model_copy(update={"num_samples": args.large_n})
        large_url = large.model_copy(update={"vllm_url": server.url})
        # Warm the server up for n=64 requests first.
        rollout_vllm(policy, problems[:4], large_url, model_name="bench", seed=1, progress=False)
        vllm_s = seconds(lambda: rollout_vllm(policy, problems, large_url, model_name="bench",
                                              seed=0, progress=False))  # fmt: skip
    hf_s = seconds(lambda: rollout_transformers(model, tokenizer, problems, large,
                                                model_name="bench", seed=0, progress=False))  # fmt: skip
    large_samples = len(problems) * args.large_n
    results["c"] = hf_s / vllm_s
    print(f"(c) n={args.large_n}: vLLM {large_samples / vllm_s:,.0f} samples/s, transformers "
          f"{large_samples / hf_s:,.0f} samples/s")  # fmt: skip

    print(f"\n{len(problems)} problems, max_new_tokens={args.max_new_tokens}, "
          f"temperature={args.temperature}; load average after: {os.getloadavg()[0]:.2f}")  # fmt: skip
    labels = {
        "a": f"(a) our vLLM backend / raw HTTP to the server (n={args.samples})",
        "b": f"(b) our transformers backend / raw model.generate (n={args.samples})",
        "c": f"(c) vLLM / transformers throughput (n={args.large_n})",
    }
    for key in ("a", "b", "c"):
        target = TARGETS.get(key)
        verdict = "" if target is None else (" ok" if results[key] >= target else " BELOW TARGET")
        shown = "" if target is None else f"  (target >= {target:.2f}){verdict}"
        print(f"{labels[key]}: {results[key]:.3f}{shown}")


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
