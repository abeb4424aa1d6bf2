"""CPU and wall seconds of the data fit check (`breadth.preflight.checks.fit_report`).

    .venv/bin/python scripts/tools/measure_fit_check.py

Writes GSM8K-sized JSON Lines files (7,473 train and 1,319 test rows, seeded; question lengths
drawn so that the test file's median is about 220 characters and its longest about 800, like
GSM8K's test set) in a temporary folder, then times the check on the default preset, its mcq
form, the test file as the eval source, and both files. CPU seconds are this process's
user + system time; wall seconds grow with the machine's load.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path

WORDS = ["Janet\u2019s", "ducks", "lay", "eggs", "per", "day.", "She", "eats", "three", "for",
         "breakfast", "every", "morning", "and", "bakes", "muffins", "her", "friends", "with",
         "four.", "sells", "the", "remainder", "at", "farmers\u2019", "market", "daily",
         "dollars", "fresh", "duck", "egg"]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_gsm8k_style(path: Path, rows: int, rng: random.Random) -> list[int]:
    """GSM8K-style rows (question, answer ending in '#### N', an id column); returns the
    questions' lengths in characters."""
    lengths = []
    with path.open("w", encoding="utf-8") as out:
        for index in range(rows):
            words = max(8, int(rng.lognormvariate(3.6, 0.4)))
            question = " ".join(rng.choice(WORDS) for _ in range(words)) + f" ({index})?"
            answer = rng.randint(1, 999)
            out.write(json.dumps({"id": f"q-{index}", "question": question,
                                  "answer": f"{answer}-0=<<{answer}-0={answer}>>{answer}\n"
                                            f"#### {answer}"}, ensure_ascii=False) + "\n")
            lengths.append(len(question))
    return lengths


def main() -> None:
    started = cpu_seconds()
    from breadth.config import load_config
    from breadth.preflight.checks import fit_report

    print(f"imports: {cpu_seconds() - started:.1f} s CPU")
    with tempfile.TemporaryDirectory() as folder:
        rng = random.Random(0)
        train, test = Path(folder) / "train.jsonl", Path(folder) / "test.jsonl"
        write_gsm8k_style(train, 7473, rng)
        lengths = write_gsm8k_style(test, 1319, rng)
        print(f"test questions: median {statistics.median(lengths):.0f}, "
              f"max {max(lengths)} characters")
        cases = {
            "default": [],
            "default, mcq": ["data.format=mcq"],
            "1,319-row eval file": [f"data.eval_source=jsonl:{test}"],
            "7,473 train + 1,319 eval files": [f"data.source=jsonl:{train}",
                                               f"data.eval_source=jsonl:{test}"],
        }
        for name, overrides in cases.items():
            cpu, wall = cpu_seconds(), time.monotonic()
            report = fit_report(load_config("default", overrides))
            print(f"{name}: {cpu_seconds() - cpu:.1f} s CPU, {time.monotonic() - wall:.1f} s "
                  f"wall, {len(report.found)} limit(s) exceeded")


if __name__ == "__main__":
    main()
