"""Benchmark: breadth's SFT stage vs a bare TRL SFTTrainer on the same data (target <= 1.05),
and whether packing or a larger batch reaches the same loss sooner.

Run: .venv/bin/python benchmarks/bench_sft.py [--pairs 3] [--set key=value ...] [--no-variants]

1. Side by side (benchmarks/side_by_side.py: warm-up, interleaved pairs, load average):
     A  bare TRL: SFTTrainer built here with the same arguments, on the same rows, no callbacks;
     B  breadth: `stages.sft_stage` (loads the base policy, reads the parquet, trains, saves).
2. Variants, one run each after the pairs: the default settings, packing, and larger batches
   with the learning rate scaled by sqrt(batch ratio). Each prints its wall time, its last
   logged training loss and its loss on the held-out split (completion tokens only, no
   packing), the figure that says whether it learned the same.
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from side_by_side import compare, load_line


def trl_arguments(sft, output_dir: Path, seed: int, **changes):
    """The TRL SFTConfig breadth's `train_sft` builds, with `changes` applied."""
    from trl import SFTConfig

    from breadth.training.common import device_arguments

    values = dict(
        output_dir=str(output_dir), num_train_epochs=sft.epochs, learning_rate=sft.learning_rate,
        per_device_train_batch_size=sft.batch_size, lr_scheduler_type="cosine", warmup_steps=10,
        seed=seed, data_seed=seed, save_strategy="no", max_length=None, **device_arguments(),
    )  # fmt: skip
    values.update(changes)
    return SFTConfig(**values)


def as_dataset(rows):
    from datasets import Dataset

    return Dataset.from_list([{"prompt": r["prompt"], "completion": r["target"]} for r in rows])


def bare_sft(config, data: Path, base: Path, out: Path, held_out: bool = False, **changes) -> dict:
    """A plain SFTTrainer run: wall seconds and last training loss, and with `held_out` the
    loss on the eval split (tokenised and evaluated after the clock stops)."""
    from trl import SFTTrainer

    from breadth.models.tiny import load_policy
    from breadth.stages import read_rows

    started = time.perf_counter()
    model, tokenizer = load_policy(base)
    train, held_out = (as_dataset(read_rows(data / f"{s}.parquet")) for s in ("train", "eval"))
    args = trl_arguments(config.sft, out, config.seed, eval_packing=False, **changes)
    trainer = SFTTrainer(model=model, args=args, train_dataset=train, eval_dataset=held_out,
                         processing_class=tokenizer)  # fmt: skip
    trainer.train()
    trainer.save_model(str(out / "final"))
    seconds = time.perf_counter() - started
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    return {
        "seconds": seconds,
        "train_loss": losses[-1],
        "held_out_loss": trainer.evaluate()["eval_loss"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--no-variants", action="store_true")
    args = parser.parse_args()

    import transformers

    from breadth.config import load_config
    from breadth.stages import init_model_stage, prepare_stage, sft_stage

    transformers.logging.set_verbosity_error()
    config = load_config("default", args.overrides)
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as scratch:
        root = Path(scratch)
        prepare_stage(config, root / "data")
        init_model_stage(config, root / "base")
        runs = iter(range(10_000))

        def fresh() -> Path:
            return root / f"run-{next(runs)}"

        # Imports and first-call costs, untimed, on a short run of each arm.
        short = config.model_copy(update={"sft": config.sft.model_copy(update={"epochs": 0.2})})
        bare_sft(short, root / "data", root / "base", fresh())
        sft_stage(short, root / "data", root / "base", fresh())
        result = compare(
            ("bare TRL SFTTrainer", lambda: bare_sft(config, root / "data", root / "base", fresh())),
            ("breadth sft_stage", lambda: sft_stage(config, root / "data", root / "base", fresh())),
            pairs=args.pairs, warm_up=False,
        )  # fmt: skip
        print(result.report(f"SFT, {config.sft.epochs} epochs, batch {config.sft.batch_size}"))
        print(f"ratio breadth / bare (median pair): {result.median_ratio():.3f} (target <= 1.05)")
        if args.no_variants:
            return

        base_batch, base_lr = config.sft.batch_size, config.sft.learning_rate
        variants = {"default settings": {}, "packing": {"packing": True}}
        for factor in (2, 4):
            variants[f"batch {base_batch * factor}, lr x{math.sqrt(factor):.2f}"] = {
                "per_device_train_batch_size": base_batch * factor,
                "learning_rate": base_lr * math.sqrt(factor),
            }
        print(f"\nvariants (one run each; {load_line()})")
        print(f"  {'variant':<28} {'seconds':>8} {'last train loss':>16} {'held-out loss':>14}")
        for name, changes in variants.items():
            out = bare_sft(config, root / "data", root / "base", fresh(), held_out=True, **changes)
            print(f"  {name:<28} {out['seconds']:>8.1f} {out['train_loss']:>16.4f} "
                  f"{out['held_out_loss']:>14.4f}")  # fmt: skip
        print(f"  after: {load_line()}")


if __name__ == "__main__":
    main()
