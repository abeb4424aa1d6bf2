"""The user docs' Prefect CLI example (`prefect deployment run breadth-pipeline/adhoc --params
'{...}'`, in docs/guide/mlflow-and-prefect.md) names a real deployment, and its partial config passes both checks a run meets: the
server's JSON-schema check of the deployment's parameters, and the flow's own validation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from breadth_flows.pipeline import pipeline
from prefect.utilities.callables import parameter_schema
from prefect.utilities.schema_tools import ValidationError, validate

from breadth.config import load_config
from breadth.config.run_form import config_from_form

REPO = Path(__file__).resolve().parents[3]
COMMAND = re.compile(r"prefect deployment run (?P<name>\S+) --params '(?P<params>[^']+)'")


def _readme_example() -> tuple[str, dict]:
    docs = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md"))]
    found = next((hit for doc in docs if (hit := COMMAND.search(doc.read_text()))), None)
    assert found, "README.md and docs/guide/ have no `prefect deployment run NAME --params '{...}'`"
    return found["name"], json.loads(found["params"])


def test_the_readme_names_the_adhoc_deployment_of_the_pipeline_flow():
    name, _ = _readme_example()
    flow_name, deployment_name = name.split("/")
    deployments = yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]
    entrypoint = next(d["entrypoint"] for d in deployments if d["name"] == deployment_name)
    assert entrypoint == "flows/pipeline.py:pipeline" and flow_name == pipeline.name


def test_the_readme_params_validate_as_a_partial_config():
    _, params = _readme_example()
    validate(params, parameter_schema(pipeline).model_dump_for_openapi(), raise_on_error=True)
    config = config_from_form(None, pipeline.validate_parameters(params)["config"])
    assert config.seed == params["config"]["seed"]
    assert config.rl.max_steps == params["config"]["rl"]["max_steps"]
    assert config.rl.reward.spec == params["config"]["rl"]["reward"]["spec"]
    assert config.data == load_config("default").data  # what it leaves out keeps its default


def test_a_misspelt_key_is_refused_by_the_server_schema():
    _, params = _readme_example()
    params["config"]["rl"]["max_step"] = params["config"]["rl"].pop("max_steps")
    with pytest.raises(ValidationError, match="max_step"):
        validate(params, parameter_schema(pipeline).model_dump_for_openapi(), raise_on_error=True)
