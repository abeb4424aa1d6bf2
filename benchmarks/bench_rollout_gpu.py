"""GPU benchmark: rollouts through a vLLM server vs transformers `generate`, 0.5B-class model.

Run on a CUDA machine with a CUDA vLLM environment (`BREADTH_VLLM_SPEC=vllm make vllm-env`)
and a model on disk (the GPU machine has no network):
    .venv/bin/python benchmarks/bench_rollout_gpu.py --model /models/Qwen2.5-0.5B-Instruct
        [--problems 256] [--samples 16] [--max-new-tokens 256] [--pairs 3]
Without a CUDA device, a vLLM environment or the model it prints why and exits 0.

Both arms are breadth's own backends on the same problems and sampling settings:
  A  transformers: `rollout_transformers` with the model on the GPU (bf16 where supported);
  B  vLLM: `rollout_vllm` against one server started before the pairs (its start-up is
     printed apart: a pipeline pays it once per model and stage).
Each arm warms up once, then the arms alternate A B A B for --pairs rounds. The figure is the
throughput ratio B / A (samples per second; goal >= 5), which also fixes the GPU side of the
`rollout.backend=auto` crossover.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from side_by_side import compare, load_line

TARGET_SPEED_UP = 5.0


def make_problems(count: int) -> list[dict]:
    from breadth.data.formats import render
    from breadth.data.generators import generate_arithmetic

    records = generate_arithmetic(count, seed=0, difficulty=3, split="train")
    return [render(record, "free_form") for record in records][:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a local 0.5B-class model folder")
    parser.add_argument("--problems", type=int, default=256)
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=512, help="transformers sequences/call")
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()

    import torch

    from breadth.rollout.vllm_server import default_env_dir, is_cpu_build

    env = default_env_dir()
    missing = [
        why for why, absent in (
            ("no CUDA device", not torch.cuda.is_available()),
            (f"no CUDA vLLM environment at {env}", not env.exists() or is_cpu_build(env)),
            ("no --model folder", args.model is None or not Path(args.model).is_dir()),
        ) if absent
    ]
    if missing:
        print(f"skipped: {'; '.join(missing)} (this benchmark needs all three)")
        return

    from breadth.config import RolloutConfig
    from breadth.models.tiny import load_policy
    from breadth.rollout.backend_choice import parameter_count
    from breadth.rollout.transformers_backend import rollout_transformers
    from breadth.rollout.vllm_backend import rollout_vllm
    from breadth.rollout.vllm_server import VLLMServer

    problems = make_problems(args.problems)
    config = RolloutConfig(num_samples=args.samples, max_new_tokens=args.max_new_tokens,
                           batch_size=args.batch_size, temperature=1.0)
    samples = len(problems) * args.samples
    dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
    print(f"{torch.cuda.get_device_name()}; {parameter_count(args.model) / 1e6:.0f}M parameters; "
          f"{len(problems)} problems x {args.samples} samples, <= {args.max_new_tokens} new "
          f"tokens; {load_line()}")

    model, tokenizer = load_policy(args.model, device="cuda")
    model = model.to(getattr(torch, dtype))

    def transformers_arm() -> None:
        rollout_transformers(model, tokenizer, problems, config, model_name="bench", seed=0,
                             progress=False)

    started = time.perf_counter()
    with VLLMServer(Path(args.model), seed=0, dtype=dtype) as server:
        print(f"vLLM server healthy after {time.perf_counter() - started:.1f} s (not in the pairs)")
        served = config.model_copy(update={"vllm_url": server.url})

        def vllm_arm() -> None:
            rollout_vllm(args.model, problems, served, model_name="bench", seed=0, progress=False)

        result = compare(("transformers generate", transformers_arm), ("vLLM server", vllm_arm),
                         pairs=args.pairs)
    print(result.report(f"{samples} samples per run"))
    speed_up = 1.0 / result.median_ratio()  # time ratio B / A -> throughput ratio A / B
    per_second = samples / min(result.wall["vLLM server"])
    verdict = "met" if speed_up >= TARGET_SPEED_UP else "BELOW"
    print(f"vLLM / transformers throughput (median pair): {speed_up:.2f}x "
          f"(goal >= {TARGET_SPEED_UP:.0f}x: {verdict}); vLLM best {per_second:,.0f} samples/s")


if __name__ == "__main__":  # vLLM's engine spawns workers: entry points need this guard
    main()
