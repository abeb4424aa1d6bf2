"""docs/results/gpu.md from `scripts/results/gpu.py`'s own figures (its gpu.json)."""

from __future__ import annotations

import statistics
from typing import Any

MEASURES = (("pass_at_1", "pass@1"), ("pass_at_n", "pass@n"),
            ("distinct_outcomes", "distinct outcomes"))


def spread(values: list[float] | None, fmt: str = "{:.3f}") -> str:
    """min / median / max, or the one value, or a dash."""
    values = [v for v in (values or []) if v is not None]
    if not values:
        return "—"
    if len(values) == 1:
        return fmt.format(values[0])
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def _or_dash(value: Any) -> str:
    return "—" if value is None else str(value)


def _interval(d: dict[str, Any]) -> str:
    return f"{d['estimate']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"


def header(e: dict[str, Any]) -> list[str]:
    lines = ["# GPU evidence (issue #27)", "",
             ("Written by `scripts/results/gpu.py` from its own output; the figures below are "
             "that run's, nothing is typed in by hand."), "",
             "```", e["command"], "```", "",
             f"- device: **{e['device']}**; host: {e['host']}; torch {e['torch']}",
             (f"- wall time: {e['wall_s']:.0f} s (deadline {e['deadline_s']:.0f} s); the parts ran "
             "as processes on the one machine (on its GPU, or on its CPU cores where section 5 "
             "says so), several at a time (below), so every absolute time was "
             "measured beside other work; the ratios are side by side in one process.")]
    if e["dry_run"]:
        lines += ["", ("**Dry run**: tiny counts on whatever device there was. It checks the "
                  "script end to end; its figures mean nothing.")]
    lines += ["", "| part | state | started at s | seconds |", "|---|---|---|---|"]
    lines += [f"| {name} | {j['state']} | {_or_dash(j['started_at_s'])} | {_or_dash(j['seconds'])} |"
              for name, j in e["jobs"].items()]
    tail = [line for line in (e["gpu_tests"] or "").strip().splitlines() if line.strip()]
    lines += ["", "## 1. `pytest -m gpu`", "",
              f"`{tail[-1]}`" if tail else "Not run in this run."]
    return lines


def reward_section(e: dict[str, Any]) -> list[str]:
    lines = ["", "## 2. The reward path against a bare TRL GRPOTrainer", "",
             ("`benchmarks/bench_reward_gpu.py`: the default preset's model and data, breadth's "
             "`rl_stage` under the spec against a GRPOTrainer with one plain reward, the same "
             "GRPOConfig. Each run's figure is its median step time after the first 10 steps; "
             "min / median / max over the pairs (A B interleaved)."), "",
             ("| spec | steps × pairs | bare TRL s/step | breadth s/step | ratio breadth / bare "
             "| goal ≤ 1.03 |"), "|---|---|---|---|---|---|"]
    for spec, r in e["reward"].items():
        if r is None:
            lines.append(f"| {spec} | — | — | — | not measured (see the parts table) | — |")
            continue
        runs = list(r["median_step_seconds"].values())
        bare, ours = runs + [[]] * (2 - len(runs))
        verdict = ("not decided: no pair finished" if r["median_ratio"] is None
                   else "met" if r["median_ratio"] <= r["target_ratio"] else "**not met**")
        lines.append(f"| {spec} | {r['steps']} × {r['pairs_done']} of {r['pairs']} | "
                     f"{spread(bare, '{:.4f}')} | "
                     f"{spread(ours, '{:.4f}')} | {spread(r['ratios'])} | {verdict} |")
    return lines


def big_model_section(e: dict[str, Any]) -> list[str]:
    b = e["big_model"]
    lines = ["", "## 3. and 4. A model of Qwen2.5-0.5B's shape", ""]
    if b is None:
        return lines + ["Not measured (see the parts table)."]
    if "from" in b:
        lines += [(f"From an earlier run of this script, on {b['device']}: its own output, "
                  f"`{b['from']}`."), ""]
    lines += [(f"`scripts/results/gpu_big_model.py`: shape {b['shape']}, breadth's character "
              "tokenizer: "
              f"{b['parameters'] / 1e6:.2f}M parameters, random weights (every sample runs to its "
              "token limit, in both arms)."), ""]
    r = b["rollout"]
    lines += [(f"**Rollouts**, {r['samples']} samples of {r['new_tokens']} new tokens, "
              f"{r['batch_size']} sequences per `generate`, {r['dtype']}; min / median / max over "
              "the pairs:"), "", "| arm | samples/s | tokens/s | peak GPU memory GiB |",
              "|---|---|---|---|"]
    for name, arm in r["arms"].items():
        lines.append(f"| {name} | {spread(arm['samples_per_s'], '{:,.0f}')} | "
                     f"{spread(arm['tokens_per_s'], '{:,.0f}')} | {spread([arm['peak_gib']], '{:.2f}')} |")
    lines += ["", (f"Time ratio breadth / bare: {spread(r['time_ratios_breadth_over_bare'])}. "
              "breadth's backend also keeps every step's logits to compute the sampled "
              "distribution's log-probs and entropy, and verifies each sample."), ""]
    g = b["grpo"]
    lines += [(f"**GRPO**, {g['steps']} steps (median over steps {g['timed_steps_from']}.."
              f"{g['steps']}), bf16 mixed precision where the device has it:"), "",
              "| arm | s/step | tokens/step | tokens/s | peak GPU memory GiB |", "|---|---|---|---|---|"]
    for name, arm in g["arms"].items():
        lines.append(f"| {name} | {arm['median_step_s']:.3f} | {spread([arm['tokens_per_step']], '{:,.0f}')} | "
                     f"{spread([arm['tokens_per_s']], '{:,.0f}')} | {spread([arm['peak_gib']], '{:.2f}')} |")
    lines += ["", f"Step time ratio breadth / bare: {g['time_ratio_breadth_over_bare']:.3f}."]
    return lines


def scale_section(e: dict[str, Any]) -> list[str]:
    intro = ["", "## 5. The study task at two model sizes", "",
             ("The chain task (`reasoning` preset: a reasoning trace, any order of work valid), "
             "SFT per (size, seed), then correctness at rl.scale_rewards=none (darling's "
             "step-size control) and darling from that same start. Δ is darling − control, paired "
             "by problem, 95% bootstrap interval over problems (report.md's method)."), ""]
    if not e["scale"]:
        return [*intro, "Not run in this run."]
    placement = e.get("scale_placement") or {}
    if placement:
        intro += ["Where each size ran: " + "; ".join(f"{size} on the {where}"
                                                      for size, where in placement.items())
                  + " (one process per cell).", ""]
    lines = [*intro,
             "| size | params | seed | SFT pass@1 | control pass@1 | darling pass@1 | "
             + " | ".join(f"Δ {label}" for _, label in MEASURES) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(MEASURES)]
    means: dict[str, dict[str, list[float]]] = {}
    for row in e["scale"]:
        arms = row["arms"]
        control, darling = arms.get("correctness@unscaled"), arms.get("darling")
        sft = control or darling
        params = f"{row['parameters'] / 1e6:.2f}M" if row["parameters"] else "—"
        cells = [row["size"], params, str(row["seed"]),
                 f"{sft['per_model']['sft']['pass_at_1'][0]:.3f}" if sft else "—",
                 *(f"{arms[arm]['per_model']['rl']['pass_at_1'][0]:.3f}" if arms.get(arm)
                   else "not finished" if arm in arms else "not run"  # a dry run runs one arm
                   for arm in ("correctness@unscaled", "darling"))]
        delta = row.get("darling_minus_control")
        for key, _ in MEASURES:
            if delta and key in delta["paired_delta"]:
                cells.append(_interval(delta["paired_delta"][key]))
                means.setdefault(row["size"], {}).setdefault(key, []).append(
                    delta["paired_delta"][key]["estimate"])
            else:
                cells.append("—")
        lines.append("| " + " | ".join(cells) + " |")
    if means:
        lines += ["", "Mean Δ over the seeds that finished (min / median / max of the seeds' Δ):", ""]
        for size, by_key in means.items():
            lines.append(f"- {size}: " + "; ".join(
                f"{label} {statistics.mean(by_key[key]):+.3f} ({spread(by_key[key], '{:+.3f}')}, "
                f"{len(by_key[key])} seeds)" for key, label in MEASURES if key in by_key))
    return lines + narrowing_table(e["scale"])


def narrowing_table(rows: list[dict[str, Any]]) -> list[str]:
    """Each arm's RL − SFT from its own start, paired by problem: whether RL's sharpening and
    narrowing change with the model's size."""
    lines = ["", "Each arm against its SFT start (RL − SFT, paired by problem, 95% interval):", "",
             "| size | seed | arm | " + " | ".join(f"Δ {label}" for _, label in MEASURES) + " |",
             "|---|---|---|" + "---|" * len(MEASURES)]
    for row in rows:
        for arm, figures in row["arms"].items():
            if figures:
                lines.append(f"| {row['size']} | {row['seed']} | {arm} | " + " | ".join(
                    _interval(figures["paired_delta"][key]) if key in figures["paired_delta"]
                    else "—" for key, _ in MEASURES) + " |")
    return lines


def markdown(e: dict[str, Any]) -> str:
    return "\n".join([*header(e), *reward_section(e), *big_model_section(e),
                      *scale_section(e)]) + "\n"
