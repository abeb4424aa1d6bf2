"""The rollout task logs what the model wrote as an MLflow table (the file and tag
`MlflowClient.log_table` writes) and how its prompts were rendered, against a fake MLflow server
and moto's S3."""

from __future__ import annotations

import json

import pandas as pd
from breadth_tasks.common import StageResult

from breadth.config import load_config
from breadth.models.tiny import build_char_tokenizer
from breadth.rollout.sample_table import SAMPLE_TABLE_ROWS
from breadth.tracking.runs import start_run
from breadth.tracking.tables import LOGGED_ARTIFACTS_TAG
from tests.unit.tracking.fake_mlflow import FakeMlflow

TEMPLATE = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}<assistant> {% endif %}")


def test_a_rollout_logs_a_seeded_sample_table_and_its_prompting(s3, tmp_path, monkeypatch):
    import breadth_tasks.rollout as task

    policy = tmp_path / "policy"
    tokenizer = build_char_tokenizer()
    tokenizer.chat_template = TEMPLATE
    tokenizer.save_pretrained(policy)
    (tmp_path / "data").mkdir()
    rows = [{"problem_id": f"p{p}", "sample_index": s, "prompt": f"{p}+1=", "text": f"= {s}",
             "extracted": [str(p + 1), "0", None][s % 3], "correct": s % 3 == 0}
            for p in range(20) for s in range(6)]

    def rollout_stage(config, dataset_dir, policy_dir, model_name, out_path, progress=True):
        pd.DataFrame(rows).to_parquet(out_path, index=False)  # what the backend would write
        return out_path

    monkeypatch.setattr(task, "rollout_stage", rollout_stage)
    monkeypatch.setenv("BREADTH_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BREADTH_WORK_DIR", str(tmp_path / "work"))
    config = load_config("default", [f"model.name_or_path={policy}",
                                     "model.system_prompt=Be brief.", "seed=3"])
    with FakeMlflow() as fake:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
        with start_run("exp", "parent") as parent:
            result = task.rollout.fn(
                config, "rollout-key", parent, StageResult("prepare", "d", str(tmp_path / "data"),
                                                           "", ""),
                StageResult("sft", "s", str(policy), "", ""), "sft")
        tags = fake.tags(result.mlflow_run_id)
        table_key = next(key for key in fake.artifacts if key.endswith("/samples/rollout-sft.json"))
        table = json.loads(fake.artifacts[table_key][0])
    assert json.loads(tags[LOGGED_ARTIFACTS_TAG]) == [
        {"path": "samples/rollout-sft.json", "type": "table"}]
    assert table["columns"] == ["problem_id", "sample_index", "prompt", "completion", "extracted",
                                "verdict"]
    assert len(table["data"]) == SAMPLE_TABLE_ROWS
    logged = [dict(zip(table["columns"], values)) for values in table["data"]]
    assert {row["verdict"] for row in logged} == {"correct", "wrong", "no answer extracted"}
    first = logged[0]
    assert first["prompt"] == f"<system> Be brief.\n<user> {first['problem_id'][1:]}+1=\n<assistant> "
    assert tags["chat.template"] == "applied" and len(tags["chat.template_hash"]) == 64
    assert tags["chat.rendered_prompt"] == "<system> Be brief.\n<user> 0+1=\n<assistant> "
