"""Benchmark: breadth's SFT stage vs a bare TRL SFTTrainer on the same data (target <= 1.05),
and whether packing or a larger batch reaches the same loss sooner.

Run: .venv/bin/python benchmarks/bench_sft.py [--pairs 3] [--set key=value ...] [--no-variants]

1. Side by side (benchmarks/side_by_side.py: warm-up, interleaved pairs, load average):
     A  bare TRL: SFTTrainer built here with the same arguments, on the same rows, no callbacks;
     B  breadth: `stages.sft_stage` (loads the base policy, reads the parquet, trains, saves).
2. Variants, in --variant-rounds rounds (each round runs every variant once, in a rotated
   order): the default settings, packing, and larger batches with the learning rate scaled by
   sqrt(batch ratio). Each prints its median wall time, its last logged training loss and its
   loss on the held-out split (completion tokens only, no packing), the figure that says
   whether it learned the same.
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from side_by_side import compare, load_line


def trl_arguments(sft, output_dir: Path, seed: int, **changes):
    """The TRL SFTConfig breadth's `train_sft` builds, with `changes` applied."""
    from trl import SFTConfig

    from breadth.training.trainer_setup import device_arguments

    values = dict(
        output_dir=str(output_dir), num_train_epochs=sft.epochs, learning_rate=sft.learning_rate,
        per_device_train_batch_size=sft.batch_size, lr_scheduler_type="cosine", warmup_steps=10,
        seed=seed, data_seed=seed, save_strategy="no", max_length=None, **device_arguments(),
    )
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
                         processing_class=tokenizer)
    trainer.train()
    trainer.save_model(str(out / "final"))
    seconds = time.perf_counter() - started
    logged = [(log["epoch"], log["loss"]) for log in trainer.state.log_history if "loss" in log]
    return {
        "seconds": seconds,
        "train_loss": logged[-1][1],
        "curve": loss_by_quarter(logged, config.sft.epochs),
        "held_out_loss": trainer.evaluate()["eval_loss"] if held_out else float("nan"),
    }


def loss_by_quarter(logged: list[tuple[float, float]], epochs: float) -> list[float]:
    """Mean logged training loss in each quarter of training, by examples seen (epochs), so
    that runs with different batch sizes (different step counts) compare point for point."""
    quarters: list[list[float]] = [[], [], [], []]
    for epoch, loss in logged:
        quarters[min(3, int(4 * epoch / epochs - 1e-9))].append(loss)
    return [statistics.fmean(q) if q else float("nan") for q in quarters]


# A variant "gives the same loss curve" when its held-out loss is within HELD_OUT_TOLERANCE
# of the default's and its training loss in every quarter within CURVE_TOLERANCE (relative,
# medians over rounds); it is worth applying only if it is also faster.
HELD_OUT_TOLERANCE = 0.02
CURVE_TOLERANCE = 0.05


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--no-variants", action="store_true")
    parser.add_argument("--no-pairs", action="store_true", help="only the variants")
    parser.add_argument("--variant-rounds", type=int, default=2)
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
        data, base = root / "data", root / "base"
        bare_sft(short, data, base, fresh())
        sft_stage(short, data, base, fresh())
        if not args.no_pairs:
            result = compare(
                ("bare TRL SFTTrainer", lambda: bare_sft(config, data, base, fresh())),
                ("breadth sft_stage", lambda: sft_stage(config, data, base, fresh())),
                pairs=args.pairs, warm_up=False,
            )
            print(result.report(f"SFT, {config.sft.epochs} epochs, batch {config.sft.batch_size}"))
            print(f"ratio breadth / bare (median pair): {result.median_ratio():.3f} "
                  "(target <= 1.05)")
        if not args.no_variants:
            compare_variants(config, data, base, fresh, rounds=args.variant_rounds)


def compare_variants(config, data: Path, base: Path, fresh, rounds: int) -> None:
    """Each variant once per round, in a rotated order per round; medians over rounds."""
    batch, learning_rate = config.sft.batch_size, config.sft.learning_rate
    # Packing needs a length to pack to: the model's context.
    variants = {"default settings": {},
                "packing": {"packing": True, "max_length": config.model.max_length}}
    for factor in (2, 4):
        variants[f"batch {batch * factor}, lr x{math.sqrt(factor):.2f}"] = {
            "per_device_train_batch_size": batch * factor,
            "learning_rate": learning_rate * math.sqrt(factor),
        }
    print(f"\nvariants, {rounds} rounds; before: {load_line()}")
    names = list(variants)
    outcomes: dict[str, list[dict]] = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            outcomes[name].append(
                bare_sft(config, data, base, fresh(), held_out=True, **variants[name])
            )
    print(f"  {'variant':<28} {'seconds (median)':>17} {'held-out loss':>14}  "
          "train loss by quarter of training  verdict")
    reference = _medians(outcomes[names[0]])
    for name in names:
        seconds, held_out, curve = _medians(outcomes[name])
        same = abs(held_out / reference[1] - 1) <= HELD_OUT_TOLERANCE and all(
            abs(c / r - 1) <= CURVE_TOLERANCE for c, r in zip(curve, reference[2])
        )
        faster = seconds < reference[0]
        verdict = ("reference" if name == names[0] else
                   f"{'same' if same else 'DIFFERENT'} loss, {seconds / reference[0]:.2f}x time"
                   + (" -> apply" if same and faster else ""))
        print(f"  {name:<28} {seconds:>17.1f} {held_out:>14.4f}  "
              f"{' '.join(f'{c:.3f}' for c in curve):<34} {verdict}")
    print(f"  same loss = held-out within {HELD_OUT_TOLERANCE:.0%} and every quarter's training "
          f"loss within {CURVE_TOLERANCE:.0%} of the default's (medians over rounds)")
    print(f"  after: {load_line()}")


def _medians(runs: list[dict]) -> tuple[float, float, list[float]]:
    return (
        statistics.median(r["seconds"] for r in runs),
        statistics.median(r["held_out_loss"] for r in runs),
        [statistics.median(r["curve"][q] for r in runs) for q in range(4)],
    )


if __name__ == "__main__":
    main()
