"""Benchmark: rollout throughput of our backends against the raw tools they wrap.

Run: .venv/bin/python benchmarks/bench_rollout.py [--policy DIR] [--problems P] [--samples N]
     [--large-n 64] [--max-new-tokens T] [--pairs R]

Ratios (throughput = samples per second), all from one run:
  (a) our vLLM backend (`rollout_vllm` against a running server) / the same completions
      requests sent straight to that server with plain HTTP at the same concurrency, keeping
      only the parsed JSON (target >= 0.95);
  (b) our transformers backend (`rollout_transformers`) / raw `model.generate` on the same
      prompts in the same batches, decoding the new tokens and nothing else (target >= 0.90);
  (c) vLLM / transformers, both our backends, at n = --large-n samples per problem.
Every ratio is measured the same way (benchmarks/side_by_side.py): both arms warm up, then
alternate A B A B for --pairs rounds; each ratio is the median of the per-pair ratios, printed
with its min and max and the load average. Without --policy the tiny model is built and
SFT-trained briefly (~20 s) so that it answers and stops like a real policy. Needs the vLLM
environment (scripts/tools/install_vllm_env.sh).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from side_by_side import compare, load_line

from breadth.config import ModelConfig, RolloutConfig, SFTConfig
from breadth.rollout.transformers_backend import rollout_transformers
from breadth.rollout.vllm_backend import MAX_IN_FLIGHT, completion_request, rollout_vllm
from breadth.rollout.vllm_server import VLLMServer, served_models

TARGETS = {"a": 0.95, "b": 0.90}


def make_problems(count: int) -> list[dict[str, Any]]:
    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic

    easy = generate_arithmetic(85, seed=0, difficulty=1, split="train")
    harder = generate_arithmetic(max(0, count - len(easy)), seed=0, difficulty=2, split="train")
    return [render(record, "free_form") for record in easy + harder][:count]


def train_policy(problems: list[dict[str, Any]], out: Path) -> Path:
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.training.sft import train_sft

    tokenizer = build_char_tokenizer()
    model = build_tiny_model(ModelConfig(), tokenizer, seed=0)
    train_sft(model, tokenizer, problems * 4, SFTConfig(epochs=8, batch_size=32),
              output_dir=out, seed=0)
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
            )
        new = output[:, encoded["input_ids"].shape[1] :]
        texts.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", type=Path, help="model dir; default: tiny model + short SFT")
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--samples", type=int, default=16, help="n for (a) and (b)")
    parser.add_argument("--large-n", type=int, default=64, help="n for (c)")
    parser.add_argument("--max-new-tokens", type=int, default=8)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()

    from breadth.models.tiny import load_policy

    print(load_line())
    problems = make_problems(args.problems)
    scratch = Path(tempfile.mkdtemp(prefix="bench-rollout-"))
    policy = args.policy or train_policy(problems, scratch / "sft")
    config = RolloutConfig(
        num_samples=args.samples, temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
    )
    large = config.model_copy(update={"num_samples": args.large_n})
    model, tokenizer = load_policy(policy)
    prompts = [p["prompt"] for p in problems]
    results = {}

    def ours_hf(settings: RolloutConfig = config) -> list:
        return rollout_transformers(model, tokenizer, problems, settings, model_name="bench",
                                    seed=0, progress=False)

    results["b"] = compare(("raw model.generate", lambda: raw_generate(model, tokenizer, prompts,
                                                                       config)),
                           ("our transformers backend", ours_hf), pairs=args.pairs)
    print(results["b"].report("(b)"))

    started = time.perf_counter()
    with VLLMServer(Path(policy), home=scratch, seed=0) as server:
        print(f"vLLM server healthy after {time.perf_counter() - started:.1f} s (not timed below)")
        served = served_models(server.url)[0]
        bodies = [completion_request(p, config, model=served, seed=0) for p in problems]
        in_flight = max(1, min(MAX_IN_FLIGHT, config.batch_size // config.num_samples))

        def ours_vllm(settings: RolloutConfig = config) -> list:
            return rollout_vllm(policy, problems, settings.model_copy(update={"vllm_url": server.url}),
                                model_name="bench", seed=0, progress=False)

        results["a"] = compare(("raw HTTP", lambda: raw_http(server.url, bodies, in_flight)),
                               ("our vLLM backend", ours_vllm), pairs=args.pairs)
        print(results["a"].report("(a)"))
        results["c"] = compare(("transformers", lambda: ours_hf(large)),
                               ("vLLM", lambda: ours_vllm(large)), pairs=args.pairs)
        print(results["c"].report(f"(c) n={args.large_n}"))

    print(f"\n{len(problems)} problems, max_new_tokens={args.max_new_tokens}, "
          f"temperature={args.temperature}")
    labels = {
        "a": f"(a) our vLLM backend / raw HTTP to the server (n={args.samples})",
        "b": f"(b) our transformers backend / raw model.generate (n={args.samples})",
        "c": f"(c) vLLM / transformers throughput (n={args.large_n})",
    }
    for key in ("a", "b", "c"):
        # Time ratio B / A per pair -> throughput ratio A / B; min and max swap places.
        throughput = sorted(1.0 / r for r in results[key].ratios())
        median = 1.0 / results[key].median_ratio()
        target = TARGETS.get(key)
        verdict = "" if target is None else (" ok" if median >= target else " BELOW TARGET")
        shown = "" if target is None else f"  (target >= {target:.2f}){verdict}"
        print(f"{labels[key]}: median {median:.3f} [min {throughput[0]:.3f}, "
              f"max {throughput[-1]:.3f}]{shown}")


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
