"""Benchmark: the CPU crossover behind `rollout.backend=auto`, vLLM / transformers samples per second.

Run: .venv/bin/python benchmarks/bench_crossover.py [--sizes default,4m] [--new-tokens 8,48]
     [--problems 64] [--samples 16] [--pairs 3] [--sft-epochs 8,0] [--markdown FILE]

For each model size and each --sft-epochs value a policy is built and SFT-trained briefly (a
trained one answers and stops like a real policy; an untrained one runs to the token limit), one vLLM server is started for it (its start is timed on its own, not in the
ratio), and for each --new-tokens value our two backends sample the same problems side by side
(benchmarks/side_by_side.py: warm-up, then transformers and vLLM alternate for --pairs rounds).
The ratio printed is vLLM / transformers throughput per pair: min, median, max, and the load.
With --markdown the table is written there, headed by the command that produced it.
Needs the vLLM environment (scripts/tools/install_vllm_env.sh, or BREADTH_VLLM_ENV).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_rollout import make_problems
from side_by_side import compare, load_line

from breadth.config import ModelConfig, RolloutConfig, SFTConfig
from breadth.rollout.backend_choice import parameter_count
from breadth.rollout.transformers_backend import rollout_transformers
from breadth.rollout.vllm_backend import rollout_vllm
from breadth.rollout.vllm_server import VLLMServer

# Model sizes by name: the default tiny model, and one about 12x larger.
SIZES = {
    "default": ModelConfig(),
    "4m": ModelConfig(hidden_size=256, num_layers=4, num_heads=4, intermediate_size=1024),
}


def train_policy(model_config: ModelConfig, problems: list, out: Path, epochs: int) -> Path:
    from breadth.models.tiny import build_char_tokenizer, build_tiny_model
    from breadth.training.sft import train_sft

    tokenizer = build_char_tokenizer()
    model = build_tiny_model(model_config, tokenizer, seed=0)
    if not epochs:  # untrained: rarely emits EOS, so every sample runs to the token limit
        model.save_pretrained(out / "final")
        tokenizer.save_pretrained(out / "final")
        return out / "final"
    train_sft(model, tokenizer, problems * 4, SFTConfig(epochs=epochs, batch_size=32),
              output_dir=out, seed=0)
    return out / "final"


def measure(size: str, epochs: int, new_tokens: list[int], args, scratch: Path) -> list[dict]:
    from breadth.models.tiny import load_policy

    problems = make_problems(args.problems)
    policy = train_policy(SIZES[size], problems, scratch / f"{size}-{epochs}", epochs)
    model, tokenizer = load_policy(policy)
    rows = []
    started = time.perf_counter()
    with VLLMServer(Path(policy), home=scratch, seed=0) as server:
        start_seconds = time.perf_counter() - started
        for tokens in new_tokens:
            config = RolloutConfig(num_samples=args.samples, max_new_tokens=tokens,
                                   vllm_url=server.url)

            def hf(config: RolloutConfig = config) -> list:
                return rollout_transformers(model, tokenizer, problems, config, model_name="b",
                                            seed=0, progress=False)

            def vllm(config: RolloutConfig = config) -> list:
                return rollout_vllm(policy, problems, config, model_name="b", seed=0,
                                    progress=False)

            result = compare(("transformers", hf), ("vLLM", vllm), pairs=args.pairs)
            print(result.report(f"{size}, SFT {epochs} epochs, {tokens} new tokens"), flush=True)
            throughput = sorted(1.0 / r for r in result.ratios())
            new = [len(r["text"]) for r in hf()]  # characters: tokens, for the character model
            rows.append({
                "size": size, "epochs": epochs, "parameters": parameter_count(policy), "tokens": tokens,
                "mean_new": statistics.mean(new), "median": statistics.median(throughput),
                "min": throughput[0], "max": throughput[-1],
                "hf_s": statistics.median(result.wall["transformers"]),
                "vllm_s": statistics.median(result.wall["vLLM"]),
                "server_start_s": start_seconds, "load": result.load_after,
                "break_even": break_even(result, len(problems) * args.samples, start_seconds),
            })
    return rows


def break_even(result, samples: int, start_seconds: float) -> str:
    """Samples per rollout stage above which vLLM's faster sampling repays its server start
    (medians); "never" when vLLM is not faster per sample."""
    saved = statistics.median(result.wall["transformers"]) - statistics.median(result.wall["vLLM"])
    return f"{start_seconds / (saved / samples):,.0f}" if saved > 0 else "never"


def markdown(rows: list[dict], args, wall_s: float) -> str:
    lines = [
        "# Rollout crossover on CPU: vLLM / transformers",
        "",
        "Written by `PYTHONPATH=src:benchmarks python " + " ".join(sys.argv) + "`.",
        (
            f"Machine: {platform.node()}, {os.cpu_count()} CPU cores, {platform.machine()}; "
            f"seed 0 for every model, policy and sampler; wall time {wall_s / 60:.1f} min."
        ),
        (
            f"{args.problems} problems x {args.samples} samples, {args.pairs} interleaved pairs "
            "after a warm-up; ratio = vLLM / transformers samples per second (> 1: vLLM faster). "
            "SFT epochs 0 = an untrained policy, which rarely stops, so its samples run to the "
            "token limit; a trained one answers in a few characters."
        ),
        "",
        (
            "| model | parameters | SFT epochs | max new tokens | mean new characters "
            "| transformers s | vLLM s "
            "| ratio median [min, max] | vLLM server start s | break-even samples | load after |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['size']} | {r['parameters'] / 1e6:.2f}M | {r['epochs']} | {r['tokens']} "
            f"| {r['mean_new']:.1f} "
            f"| {r['hf_s']:.2f} | {r['vllm_s']:.2f} | {r['median']:.2f} [{r['min']:.2f}, "
            f"{r['max']:.2f}] | {r['server_start_s']:.0f} | {r['break_even']} | {r['load']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="default,4m", help=f"comma list of {sorted(SIZES)}")
    parser.add_argument("--new-tokens", default="8,48")
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--sft-epochs",
        default="8,0",
        help="comma list: SFT epochs of each policy; 0 = untrained (long outputs)",
    )
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args()
    print(load_line(), flush=True)
    started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix="bench-crossover-"))
    tokens = [int(t) for t in args.new_tokens.split(",")]
    rows = [
        row
        for size in args.sizes.split(",")
        for epochs in (int(e) for e in args.sft_epochs.split(","))
        for row in measure(size, epochs, tokens, args, scratch)
    ]
    table = markdown(rows, args, time.perf_counter() - started)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
