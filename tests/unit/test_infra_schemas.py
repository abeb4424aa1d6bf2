"""infra/ against the published schemas, from pinned packages rather than hand-written checks.

- infra/compose.yaml against the Compose Specification's JSON schema, as vendored by
  check-jsonschema (its `vendor.compose-spec` builtin schema; read from the installed
  distribution's files, so the version is the one pinned in pyproject.toml).
- The Kubernetes Job that the `breadth-gpu` work pool submits, against the Kubernetes OpenAPI
  schemas in kubernetes-validate, in their strict form (an unknown or misspelt field is an
  error). The Job is built as the Kubernetes worker builds it (prefect-kubernetes' own job
  configuration, then `prepare_for_flow_run`), so what is validated is what a cluster receives.
"""

from __future__ import annotations

import copy
import inspect
import json
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "infra" / "compose.yaml"
JOB_TEMPLATE = REPO / "infra" / "k8s" / "work-pool-job-template.json"
# The oldest Kubernetes release still maintained by the big managed offerings, and the newest
# the schema package knows.
KUBERNETES_VERSIONS = ("1.30", "latest")
# prefect-kubernetes insists on these two in the pod template (its manifest check refuses a
# Job without them), where Kubernetes ignores them: they belong to the Job's spec, which
# defaults both to 1. They are the only fields taken out before the strict check.
WORKER_REQUIRED_POD_FIELDS = ("parallelism", "completions")


def distribution_file(distribution: str, relative: str) -> Path:
    """A data file shipped inside an installed distribution (found without importing it)."""
    try:
        located = metadata.distribution(distribution).locate_file(relative)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed: install the dev extra "
                    "(pip install -e '.[dev]')")
    path = Path(str(located))
    assert path.exists(), f"{distribution} {metadata.version(distribution)} has no {relative}"
    return path


def compose_validator() -> Any:
    import jsonschema

    schema_path = distribution_file(
        "check-jsonschema", "check_jsonschema/builtin_schemas/vendor/compose-spec.json"
    )
    schema = json.loads(schema_path.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)


def compose_errors(document: dict[str, Any]) -> list[str]:
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
        for error in compose_validator().iter_errors(document)
    ]


def test_compose_file_follows_the_compose_specification():
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    errors = compose_errors(document)
    assert not errors, "infra/compose.yaml breaks the Compose Specification:\n" + "\n".join(errors)


@pytest.mark.parametrize(
    ("path", "value", "complaint"),
    [
        (("services", "postgres", "restartt"), "always", "'restartt' was unexpected"),
        (("services", "mlflow", "depends_on", "postgres", "condition"), "service_ready",
         "service_ready"),
        (("services", "minio", "ports"), "9000:9000", "is not of type 'array'"),
    ],
)
def test_the_compose_schema_refuses_a_broken_file(path, value, complaint):
    """The check can fail: each edit is a mistake a person makes, and the schema names it."""
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    node = document
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    errors = compose_errors(document)
    assert any(complaint in error for error in errors), errors


class NoPrefectServer:
    """Stands in for a Prefect client: the job template must not need the server (no block
    or variable references), and any use of it fails the test."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"building the Job asked the Prefect server for {name!r}")


def worker_job_manifest(job_variables: dict[str, Any]) -> dict[str, Any]:
    """The Job manifest the Kubernetes worker submits for one flow run of the pool."""
    import asyncio

    worker = pytest.importorskip(
        "prefect_kubernetes.worker",
        reason="prefect-kubernetes (the Kubernetes worker) is not installed: install the dev "
        "extra (pip install -e '.[dev]')",
    )
    from prefect.client.schemas.objects import FlowRun

    template = json.loads(JOB_TEMPLATE.read_text())
    configuration = worker.KubernetesWorkerJobConfiguration.from_template_and_values(
        template, job_variables, client=NoPrefectServer()
    )
    if inspect.isawaitable(configuration):
        configuration = asyncio.run(configuration)
    flow_run = FlowRun(id=uuid.uuid4(), name="breadth-cell", flow_id=uuid.uuid4())
    configuration.prepare_for_flow_run(flow_run)
    return configuration.job_manifest


def kubernetes_errors(manifest: dict[str, Any], version: str) -> str | None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate",
        reason="kubernetes-validate (the Kubernetes OpenAPI schemas) is not installed: install "
        "the dev extra (pip install -e '.[dev]')",
    )
    if version == "latest":
        version = kubernetes_validate.latest_version()
    try:
        kubernetes_validate.validate(manifest, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        where = ".".join(map(str, error.path))
        return f"Kubernetes {error.version}: {where}: {error.message}"
    return None


def strict_view(manifest: dict[str, Any]) -> dict[str, Any]:
    manifest = copy.deepcopy(manifest)
    pod = manifest["spec"]["template"]["spec"]
    for name in WORKER_REQUIRED_POD_FIELDS:
        assert pod.pop(name) == 1, f"the worker's pod template must keep {name}: 1"
    return manifest


JOB_VARIABLE_SETS = {
    "defaults": {},
    "four GPUs, limits and a node selector": {
        "gpu_count": 4, "cpu_limit": "16", "memory_limit": "128Gi",
        "node_selector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        "image": "registry.example.com/breadth-gpu:0.1.0",
        "env": {"BREADTH_VLLM_URL": "http://vllm-0:8000,http://vllm-1:8000"},
    },
}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("variables", JOB_VARIABLE_SETS.values(), ids=JOB_VARIABLE_SETS.keys())
def test_the_gpu_pool_submits_a_valid_kubernetes_job(variables, version):
    manifest = worker_job_manifest(variables)
    container = manifest["spec"]["template"]["spec"]["containers"][0]
    gpus = variables.get("gpu_count", 1)
    assert container["resources"]["limits"]["nvidia.com/gpu"] == gpus
    assert container["resources"]["requests"]["nvidia.com/gpu"] == gpus
    error = kubernetes_errors(strict_view(manifest), version)
    assert error is None, f"{JOB_TEMPLATE.relative_to(REPO)} renders an invalid Job: {error}"


@pytest.mark.parametrize(
    ("edit", "complaint"),
    [
        (lambda pod: pod["containers"][0].update(resource={}), "'resource' was unexpected"),
        (lambda pod: pod["containers"][0].update(ports=[{"containerPort": "http"}]), "'http'"),
        (lambda pod: pod["volumes"][0]["emptyDir"].update(medium=7), "7 is not of type"),
    ],
)
def test_the_kubernetes_schema_refuses_a_broken_job(edit, complaint):
    """The check can fail: a misspelt field, a value outside an enum, a wrong type."""
    manifest = strict_view(worker_job_manifest({}))
    edit(manifest["spec"]["template"]["spec"])
    error = kubernetes_errors(manifest, "latest")
    assert error is not None and complaint in error, error
