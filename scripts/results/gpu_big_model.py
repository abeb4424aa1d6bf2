"""Rollout and GRPO throughput on a model of Qwen2.5-0.5B's shape, beside the bare engines.

    PYTHONPATH=src:benchmarks python3 scripts/results/gpu_big_model.py --json big.json [--dry-run]

The model is built from scratch (no hub, no weights needed): Qwen2.5-0.5B's layer sizes
(hidden 896, 24 layers, 14 query and 2 key-value heads, MLP 4864, tied embeddings) with
breadth's character tokenizer, so it has ~0.36B parameters instead of 0.49B (its vocabulary is
small). Random weights never emit EOS, so every sample runs to its token limit: tokens/s are
exact, and the same in both arms.

- Rollouts: breadth's transformers backend (`rollout_transformers`: one `generate` per batch
  with per-token logits, entropy and verification) against a bare `model.generate` loop over
  the same prompts, batch size and sampling; bf16 on the GPU in both. Pairs alternate A B.
- GRPO: breadth's `rl_stage` (reward adapters, callbacks, verifiers) against a bare TRL
  GRPOTrainer with one plain reward (`bench_reward_gpu`'s two arms), the same GRPOConfig
  (bf16 where the device has it), median step time after the first steps, tokens per step from
  TRL's own log, and peak GPU memory of each.

`--dry-run` shrinks the shape and the counts so the whole path runs on a CPU in a minute: it
checks the script, not the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

QWEN25_05B_SHAPE = {"hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
                    "num_key_value_heads": 2, "intermediate_size": 4864}
DRY_RUN_SHAPE = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                 "num_key_value_heads": 1, "intermediate_size": 128}


def build_model_dir(shape: dict[str, int], out: Path, max_length: int) -> Path:
    """A randomly initialised Qwen2 model of `shape` with breadth's tokenizer, saved to `out`."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from breadth.models.tiny import build_char_tokenizer

    tokenizer = build_char_tokenizer(max_length)
    config = Qwen2Config(vocab_size=len(tokenizer), max_position_embeddings=max_length,
                         tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         **shape)
    torch.manual_seed(0)
    Qwen2ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _peak_gib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.max_memory_allocated() / 2**30


def _reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def _synchronised_seconds(fn: Any) -> float:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def rollout_throughput(model_dir: Path, problems: list[dict], *, samples: int, new_tokens: int,
                       batch_size: int, pairs: int) -> dict[str, Any]:
    """Samples/s, tokens/s and peak memory of breadth's backend and of a bare generate loop."""
    import torch

    from breadth.config import RolloutConfig
    from breadth.models.tiny import inference_device, load_policy
    from breadth.rollout.transformers_backend import rollout_transformers

    model, tokenizer = load_policy(model_dir, device=inference_device())
    if torch.cuda.is_available():
        model = model.to(torch.bfloat16)
    config = RolloutConfig(num_samples=samples, max_new_tokens=new_tokens, batch_size=batch_size,
                           temperature=1.0)
    prompts = [p["prompt"] for p in problems]
    per_call = max(1, batch_size // samples)

    def breadth_arm() -> None:
        rollout_transformers(model, tokenizer, problems, config, model_name="bench", seed=0,
                             progress=False)

    def bare_arm() -> None:
        torch.manual_seed(0)
        for start in range(0, len(prompts), per_call):
            batch = [p for p in prompts[start:start + per_call] for _ in range(samples)]
            encoded = tokenizer(batch, return_tensors="pt", padding=True,
                                add_special_tokens=False).to(model.device)
            with torch.inference_mode():
                model.generate(**encoded, do_sample=True, temperature=1.0, top_p=1.0,
                               max_new_tokens=new_tokens, pad_token_id=tokenizer.pad_token_id,
                               eos_token_id=tokenizer.eos_token_id)

    arms = {"bare generate": bare_arm, "breadth transformers backend": breadth_arm}
    seconds: dict[str, list[float]] = {name: [] for name in arms}
    peak: dict[str, float | None] = {}
    for name, arm in arms.items():  # warm-up: CUDA kernels, allocator, verifier imports
        _reset_peak()
        arm()
        peak[name] = _peak_gib()
    for _ in range(pairs):
        for name, arm in arms.items():
            seconds[name].append(_synchronised_seconds(arm))
    total = len(prompts) * samples
    per_arm = {name: {"seconds": s, "samples_per_s": [total / x for x in s],
                      "tokens_per_s": [total * new_tokens / x for x in s],
                      "peak_gib": peak[name]} for name, s in seconds.items()}
    ratios = [b / a for a, b in zip(seconds["bare generate"],
                                    seconds["breadth transformers backend"])]
    return {"samples": total, "new_tokens": new_tokens, "batch_size": batch_size,
            "dtype": str(model.dtype).removeprefix("torch."), "arms": per_arm,
            "time_ratios_breadth_over_bare": ratios}


def grpo_throughput(config: Any, data_dir: Path, model_dir: Path, work: Path,
                    steps: int) -> dict[str, Any]:
    """Median step time, tokens/s and peak memory of breadth's GRPO and a bare TRL GRPOTrainer."""
    from bench_reward_gpu import SKIPPED_STEPS, bare_trl, breadth_path

    arms = {"bare TRL GRPOTrainer": bare_trl, "breadth rl_stage": breadth_path}
    first = SKIPPED_STEPS + 1 if steps > SKIPPED_STEPS else 1  # bench_reward_gpu.median_step
    result: dict[str, Any] = {"steps": steps, "timed_steps_from": first,
                              "arms": {}}
    for index, (name, arm) in enumerate(arms.items()):
        out = work / f"grpo-{index}"
        _reset_peak()
        started = time.perf_counter()
        step = arm(config, data_dir, model_dir, out, steps)
        wall = time.perf_counter() - started
        tokens = _tokens_per_step(out)
        result["arms"][name] = {
            "median_step_s": step, "wall_s": wall, "peak_gib": _peak_gib(),
            "tokens_per_step": tokens,
            "tokens_per_s": None if tokens is None else tokens / step,
        }
    a, b = (result["arms"][name]["median_step_s"] for name in arms)
    result["time_ratio_breadth_over_bare"] = b / a
    return result


def _tokens_per_step(out: Path) -> float | None:
    """Prompt + completion tokens one step processed, from TRL's cumulative `num_tokens` in the
    run's log (breadth's train_log.jsonl, or the trainer state of the bare arm)."""
    counts = []
    log = out / "train_log.jsonl"
    if log.exists():
        counts = [(r["step"], r["num_tokens"]) for r in map(json.loads, log.read_text().splitlines())
                  if "num_tokens" in r and "step" in r]
    else:
        for state in sorted(out.glob("**/trainer_state.json")):
            history = json.loads(state.read_text()).get("log_history", [])
            counts = [(r["step"], r["num_tokens"]) for r in history if "num_tokens" in r]
    if len(counts) < 2:
        return None
    (first_step, first), (last_step, last) = counts[0], counts[-1]
    return (last - first) / (last_step - first_step) if last_step > first_step else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--dry-run", action="store_true", help="tiny shape and counts, any device")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temp)")
    args = parser.parse_args()

    import torch

    from breadth.config import load_config
    from breadth.data.prepare import read_rows
    from breadth.rollout.backend_choice import parameter_count
    from breadth.stages import prepare_stage

    dry = args.dry_run
    shape = DRY_RUN_SHAPE if dry else QWEN25_05B_SHAPE
    # The chain task (reasoning preset): free-form prompts and completions of the study's kind.
    # A dry run's GRPO: 2 steps of short completions, the fewest that give tokens per step.
    config = load_config("reasoning", ["rl.max_steps=2", "rl.max_completion_length=16"] if dry
                         else ["rl.max_steps=16"])
    with tempfile.TemporaryDirectory(prefix="gpu-big-") as scratch:
        work = args.work or Path(scratch)
        data = work / "data"
        prepare_stage(config, data)
        model_dir = build_model_dir(shape, work / "model", config.model.max_length)
        problems = read_rows(data / "eval.parquet")[: 8 if dry else 128]
        report: dict[str, Any] = {
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU",
            "shape": shape, "parameters": parameter_count(model_dir), "dry_run": dry,
        }
        started = time.perf_counter()
        report["rollout"] = rollout_throughput(
            model_dir, problems, samples=2 if dry else 16, new_tokens=8 if dry else 80,
            batch_size=8 if dry else 1024, pairs=1 if dry else 3)
        report["rollout"]["wall_s"] = time.perf_counter() - started
        started = time.perf_counter()
        report["grpo"] = grpo_throughput(config, data, model_dir, work, config.rl.max_steps)
        report["grpo"]["wall_s"] = time.perf_counter() - started
    args.json.write_text(json.dumps(report, indent=1))
    ratios = report["rollout"]["time_ratios_breadth_over_bare"]
    print(f"rollout time ratio breadth/bare: median {statistics.median(ratios):.3f}; "
          f"GRPO step ratio {report['grpo']['time_ratio_breadth_over_bare']:.3f}")


if __name__ == "__main__":
    main()
