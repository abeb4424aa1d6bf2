"""The MLflow REST client against an in-process fake of MLflow's API (tests/unit/tracking/
fake_mlflow.py): the run lifecycle a pipeline run makes, auth, retries, clear errors, artifact
uploads, and which client `tracking_client` picks. The same client against the real MLflow
server: tests/integration/test_pipeline_on_stack.py."""

from __future__ import annotations

import base64
import json
import socket

import pytest

from breadth.tracking.clients import SdkTracking, speaks_rest, tracking_client
from breadth.tracking.rest import MlflowRequestError, MlflowRest
from breadth.tracking.runs import (
    RunHandle,
    TrackingError,
    TrackingServerDown,
    check_tracking_server,
    log_curves,
    start_child_run,
    start_run,
    wait_for_tracking_server,
)
from breadth.tracking.uploads import is_permanent
from tests.unit.tracking.fake_mlflow import FakeMlflow

AUTH_VARIABLES = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                  "MLFLOW_TRACKING_AUTH", "MLFLOW_TRACKING_CLIENT_CERT_PATH",
                  "MLFLOW_TRACKING_AWS_SIGV4", "MLFLOW_HTTP_REQUEST_MAX_RETRIES")


@pytest.fixture(autouse=True)
def _no_auth_settings(monkeypatch, tmp_path):
    for name in AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.mlflow/credentials


@pytest.fixture
def fake():
    with FakeMlflow() as server:
        yield server


def _no_sleep(seconds: float) -> None:
    pass


def test_a_run_is_opened_logged_and_closed_over_rest(fake, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
    with start_run("exp", "parent", tags={"seed": 3}) as parent:
        parent.log_params({"lr": 0.1, "long": "x" * 600})
        parent.log_metrics({"eval/pass@4": 0.5, "nan": float("nan")}, step=2)
        parent.set_tags({"dataset.hash": "abc"})
        child = start_child_run(parent, "sft")
        child.finish()
    assert fake.experiments[parent.experiment_id] == "exp"
    stored = fake.runs[parent.run_id]
    assert stored["info"]["status"] == "FINISHED" and stored["info"]["end_time"] > 0
    tags = fake.tags(parent.run_id)
    assert tags["seed"] == "3" and tags["mlflow.runName"] == "parent" and tags["dataset.hash"] == "abc"
    assert "breadth.process" in tags
    params = {p["key"]: p["value"] for p in stored["data"]["params"]}
    assert params["lr"] == "0.1" and len(params["long"]) == 500
    (metric,) = stored["data"]["metrics"]  # the NaN is not sent
    assert (metric["key"], metric["value"], metric["step"]) == ("eval/pass_at_4", 0.5, 2)
    assert fake.tags(child.run_id)["mlflow.parentRunId"] == parent.run_id
    assert fake.runs[child.run_id]["info"]["experiment_id"] == parent.experiment_id
    # The second start_run found the experiment by name instead of creating another.
    assert start_run("exp", "again").experiment_id == parent.experiment_id


def test_curves_and_metrics_go_in_one_request(fake, monkeypatch):
    # publish_report logs every model's headline metrics and pass@k curve on each run, cached
    # or not: one round trip.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
    run = start_run("exp", "curves")
    before = len(fake.requests)
    log_curves(run, {"rl/eval/pass_at_k": [(1, 0.5), (4, 0.8)]}, {"rl/eval/pass@4": 0.8})
    assert [path for _, path, _ in fake.requests[before:]] == ["/api/2.0/mlflow/runs/log-batch"]
    points = {(m["key"], m["step"], m["value"]) for m in fake.runs[run.run_id]["data"]["metrics"]}
    assert points == {("rl/eval/pass_at_k", 1, 0.5), ("rl/eval/pass_at_k", 4, 0.8),
                      ("rl/eval/pass_at_4", 0, 0.8)}


def test_a_failing_block_marks_the_run_failed_with_the_error(fake, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
    run = start_run("exp", "raises")
    with pytest.raises(RuntimeError), run:
        raise RuntimeError("inside training")
    assert fake.runs[run.run_id]["info"]["status"] == "FAILED"
    assert fake.tags(run.run_id)["breadth.error"] == "RuntimeError: inside training"
    assert run.get_run().status == "FAILED"


def test_a_cancelled_run_says_so_in_its_error_tag(fake, monkeypatch):
    from prefect.exceptions import TerminationSignal

    monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
    run = start_run("exp", "cancelled")
    # Prefect raises it, with no message, when a cancellation sends the process SIGTERM.
    with pytest.raises(TerminationSignal), run:
        raise TerminationSignal(signal=15)
    assert fake.runs[run.run_id]["info"]["status"] == "KILLED"
    assert fake.tags(run.run_id)["breadth.error"] == "cancelled (TerminationSignal: SIGTERM)"
    interrupted = start_run("exp", "interrupted")
    with pytest.raises(KeyboardInterrupt), interrupted:
        raise KeyboardInterrupt
    assert fake.tags(interrupted.run_id)["breadth.error"].startswith("interrupted (")
    silent = start_run("exp", "silent")
    with pytest.raises(ValueError), silent:
        raise ValueError
    assert fake.tags(silent.run_id)["breadth.error"] == "ValueError (no message)"


def test_credentials_in_the_uri_become_basic_auth_and_leave_the_url(fake):
    host = fake.url.removeprefix("http://")
    client = MlflowRest(f"http://me:s%40cret@{host}")
    assert client.experiment_ids() == ["0"] and client.base == fake.url
    _, _, headers = fake.requests[-1]
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"me:s@cret").decode()


def test_credentials_from_the_environment(fake, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    MlflowRest(fake.url).experiment_ids()
    assert fake.requests[-1][2]["Authorization"] == "Bearer tok"
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "u")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "p")
    MlflowRest(fake.url).experiment_ids()  # MLflow's order: basic auth before a token
    assert fake.requests[-1][2]["Authorization"] == "Basic " + base64.b64encode(b"u:p").decode()


def test_an_error_names_the_endpoint_and_mlflows_message_and_is_not_retried(fake):
    client = MlflowRest(fake.url, sleep=_no_sleep)
    with pytest.raises(MlflowRequestError) as caught:
        client.get_run("nope")
    message = str(caught.value)
    assert "GET /api/2.0/mlflow/runs/get" in message and "HTTP 404" in message
    assert "RESOURCE_DOES_NOT_EXIST: Run with id=nope not found" in message
    assert is_permanent(caught.value) and len(fake.requests) == 1
    assert client.experiment_id("no-such-experiment") is None  # a 404 that means "absent"


def test_transient_answers_are_retried_like_mlflows_client(fake, monkeypatch):
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", raising=False)  # MLflow's 2
    slept = []
    client = MlflowRest(fake.url, sleep=slept.append)
    fake.failures = [(503, {"message": "busy"}), (429, {"message": "slow down"})]
    assert client.experiment_ids() == ["0"]
    assert len(fake.requests) == 3
    assert [int(s) for s in slept] == [2, 4]  # 2 * 2**attempt s, plus up to 1 s of jitter
    fake.failures = [(500, {"error_code": "INTERNAL_ERROR", "message": "db locked"})] * 8
    with pytest.raises(MlflowRequestError, match="HTTP 500: INTERNAL_ERROR: db locked") as caught:
        client.experiment_ids()
    assert not is_permanent(caught.value)  # a background lane keeps retrying it


def test_refused_credentials_name_the_settings_that_carry_them(fake):
    fake.failures = [(401, {"error_code": "UNAUTHENTICATED", "message": "Not authenticated."})]
    with pytest.raises(MlflowRequestError) as caught:
        MlflowRest(fake.url, sleep=_no_sleep).experiment_ids()
    message = str(caught.value)
    assert "HTTP 401: UNAUTHENTICATED: Not authenticated. Set MLFLOW_TRACKING_USERNAME" in message
    assert "MLFLOW_TRACKING_TOKEN" in message


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


def test_a_server_that_is_down_is_named_with_the_fix(monkeypatch):
    port = _closed_port()
    url = f"http://u:secret@127.0.0.1:{port}"
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port} did not answer POST") as down:
        MlflowRest(url, sleep=_no_sleep).experiment_ids()
    assert "breadth stack up" in str(down.value) and "secret" not in str(down.value)
    with pytest.raises(TrackingError) as caught:
        check_tracking_server(url)
    assert f"http://127.0.0.1:{port}" in str(caught.value) and "breadth stack up" in str(caught.value)
    assert "secret" not in str(caught.value)


def _server_answering_after(monkeypatch, refusals: int) -> None:
    """MLflow's /health refused `refusals` times (a server restarting), then answered."""
    answers = [OSError("Connection refused")] * refusals

    def health(self, timeout_s=5):
        if answers:
            raise answers.pop()

    monkeypatch.setattr(MlflowRest, "health", health)


def test_a_deployment_run_waits_out_a_restarting_server(monkeypatch):
    """A grid cell that started while MLflow restarted failed at once, and the grid lost it
    (tests/faults/test_night_of_faults.py): with wait_s, the start polls until it answers."""
    _server_answering_after(monkeypatch, refusals=2)
    slept: list[float] = []
    wait_for_tracking_server("http://127.0.0.1:5000", 60, poll_s=5, sleep=slept.append,
                             clock=lambda: 5.0 * len(slept))
    assert slept == [5, 5]


def test_waiting_for_the_server_ends_with_the_fix(monkeypatch):
    _server_answering_after(monkeypatch, refusals=100)
    slept: list[float] = []
    with pytest.raises(TrackingServerDown, match="waited 10s") as caught:
        wait_for_tracking_server("http://u:secret@127.0.0.1:5000", 10, poll_s=5,
                                 sleep=slept.append, clock=lambda: 5.0 * len(slept))
    assert slept == [5, 5]
    assert "http://127.0.0.1:5000" in str(caught.value) and "breadth stack up" in str(caught.value)
    assert "secret" not in str(caught.value)


def test_a_uri_naming_no_server_is_not_waited_for():
    slept: list[float] = []
    with pytest.raises(TrackingError, match="not an MLflow server URL"):
        wait_for_tracking_server("127.0.0.1:5000", 60, sleep=slept.append)
    assert slept == []


def test_start_run_waits_only_when_asked(monkeypatch):
    _server_answering_after(monkeypatch, refusals=1)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    with pytest.raises(TrackingServerDown):  # from the terminal: fails in seconds
        start_run("exp", "parent")
    waited = []
    monkeypatch.setattr("breadth.tracking.runs.wait_for_tracking_server",
                        lambda uri, wait_s: waited.append((uri, wait_s)))
    monkeypatch.setattr("breadth.tracking.runs._create_run", lambda *args: "opened")
    monkeypatch.setattr("breadth.tracking.runs.experiment_id_of", lambda client, name: "1")
    assert start_run("exp", "parent", wait_s=30) == "opened"
    assert waited == [("http://127.0.0.1:5000", 30)]


def test_search_runs_and_experiments_follow_pages(fake):
    client = MlflowRest(fake.url)
    experiments = [client.create_experiment(f"e{i}") for i in range(3)]
    runs = [client.create_run(e, "r", {"k": e}) for e in experiments for _ in range(2)]
    client.set_terminated(runs[0].run_id, "KILLED")
    assert client.experiment_ids() == ["0", *experiments]
    found = client.search_runs(experiments, "attributes.status = 'RUNNING'")
    assert {r.run_id for r in found} == {r.run_id for r in runs[1:]}
    assert found[0].tags["k"] == found[0].experiment_id
    assert len(client.search_runs(experiments, "", max_results=3)) == 3


def test_artifacts_are_uploaded_with_their_layout(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", fake.url)
    (tmp_path / "report" / "plots").mkdir(parents=True)
    (tmp_path / "report" / "report.md").write_text("# hi")
    (tmp_path / "report" / "plots" / "pass at k.json").write_text("{}")
    (tmp_path / "manifest.json").write_text(json.dumps({"n": 1}))
    run = start_run("exp", "artifacts")
    run.log_artifact(tmp_path / "report", "report")
    run.log_artifact(tmp_path / "manifest.json")
    root = f"{run.experiment_id}/{run.run_id}/artifacts"
    assert fake.artifacts[f"{root}/report/report.md"] == (b"# hi", "text/markdown")
    assert fake.artifacts[f"{root}/report/plots/pass at k.json"][1] == "application/json"
    assert fake.artifacts[f"{root}/manifest.json"][0] == b'{"n": 1}'
    # An artifact host that does not answer is named, not the tracking server.
    port = _closed_port()
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    with pytest.raises(ConnectionError, match=f"MLflow at http://127.0.0.1:{port} did not answer"):
        MlflowRest(fake.url).upload(f"mlflow-artifacts://127.0.0.1:{port}/1/r/artifacts",
                                    tmp_path / "manifest.json")
    # A store the server does not proxy (s3://, file:) is left to the mlflow package.
    assert MlflowRest(fake.url).upload("s3://bucket/1/x/artifacts", tmp_path / "manifest.json") is False


def test_the_rest_client_is_used_only_where_it_speaks_the_servers_auth(monkeypatch, tmp_path,
                                                                       mlflow_db):
    assert speaks_rest("http://127.0.0.1:5000") and speaks_rest("https://u:p@mlflow.example.com")
    mlflow_db(tmp_path / "mlflow.db")
    assert not speaks_rest(f"sqlite:///{tmp_path}/mlflow.db") and not speaks_rest("databricks")
    assert isinstance(tracking_client(f"sqlite:///{tmp_path}/mlflow.db"), SdkTracking)
    monkeypatch.setenv("MLFLOW_TRACKING_AUTH", "my-plugin")
    assert not speaks_rest("http://127.0.0.1:5000")
    monkeypatch.delenv("MLFLOW_TRACKING_AUTH")
    (tmp_path / ".mlflow").mkdir()
    (tmp_path / ".mlflow" / "credentials").write_text("[mlflow]\nmlflow_tracking_username = u\n")
    assert not speaks_rest("http://127.0.0.1:5000")  # only mlflow reads that file
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    assert speaks_rest("http://127.0.0.1:5000")


def test_run_handles_stay_picklable_and_name_no_credentials():
    import pickle

    run = RunHandle("r1", "3", "http://u:pw@mlflow:5000")
    assert pickle.loads(pickle.dumps(run)) == run
    # Model training, not the GenAI pages a first visit opens on.
    assert run.url() == "http://mlflow:5000/#/experiments/3/runs/r1?workflowType=machine_learning"


def test_search_runs_reads_metrics_and_times_and_sends_the_order(fake):
    client = MlflowRest(fake.url)
    run = client.create_run("0", "r", {})
    client.log_batch(run.run_id, metrics=[("rl/eval/pass_at_1", 0.25, 1, 0)])
    client.set_terminated(run.run_id)
    fake.runs[run.run_id]["info"]["start_time"] = 1000
    (found,) = client.search_runs(["0"], "", order_by=["attributes.start_time DESC"])
    assert found.metrics == {"rl/eval/pass_at_1": 0.25}
    assert found.start_time == 1000
    assert isinstance(found.end_time, int) and found.end_time > found.start_time
    assert fake.bodies[-1]["order_by"] == ["attributes.start_time DESC"]
    assert client.experiment_names() == {"0": "Default"}


@pytest.mark.parametrize("server", ["rest", "sdk"])
def test_metric_histories_and_artifacts_read_back_alike_on_both_clients(
    server, fake, tmp_path, monkeypatch, mlflow_db
):
    """What `breadth compare` reads: a curve's every point (across pages), a folder's listing,
    and the folder or one file downloaded with its layout, as `MlflowClient` lays it out;
    through the REST client (the fake server) and `SdkTracking` (a sqlite store) alike."""
    monkeypatch.chdir(tmp_path)  # a sqlite store keeps its artifacts under ./mlruns
    uri = fake.url if server == "rest" else f"sqlite:///{mlflow_db(tmp_path / 'mlflow.db')}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    (tmp_path / "report" / "plots").mkdir(parents=True)
    (tmp_path / "report" / "per_problem_rl.parquet").write_bytes(b"PAR1\x00\xff")
    (tmp_path / "report" / "plots" / "pass at k.png").write_bytes(b"\x89PNG")
    run = start_run("exp", "reader")
    run.log_metrics({"eval/pass_at_k": 0.25}, step=1)
    run.log_metrics({"eval/pass_at_k": 0.5}, step=2)
    run.log_metrics({"eval/pass_at_k": 0.75}, step=4)
    run.log_metrics({"other": 1.0}, step=0)
    run.log_artifact(tmp_path / "report", "report")
    client = tracking_client(uri)
    assert isinstance(client, MlflowRest if server == "rest" else SdkTracking)
    # Three points and the fake's page size of two: the second page is followed.
    history = client.metric_history(run.run_id, "eval/pass_at_k")
    assert sorted((p.step, p.value) for p in history) == [(1, 0.25), (2, 0.5), (4, 0.75)]
    assert sorted(client.list_artifacts(run.run_id, "report")) == [
        ("report/per_problem_rl.parquet", False), ("report/plots", True)]
    assert client.list_artifacts(run.run_id, "nothing") == []
    local = client.download_artifacts(run.run_id, "report", tmp_path / "down")
    assert local == tmp_path / "down" / "report"
    assert (local / "per_problem_rl.parquet").read_bytes() == b"PAR1\x00\xff"
    assert (local / "plots" / "pass at k.png").read_bytes() == b"\x89PNG"
    one = client.download_artifacts(run.run_id, "report/plots/pass at k.png", tmp_path / "one")
    assert one.read_bytes() == b"\x89PNG"
    if server == "rest":
        with pytest.raises(MlflowRequestError, match="HTTP 404"):
            client.download_artifacts(run.run_id, "report/missing.json", tmp_path / "none")


def test_every_page_of_runs_and_experiments_is_read_from_a_local_store(tmp_path, monkeypatch,
                                                                       mlflow_db):
    """`breadth compare` asks for every matching run (max_results=None); `SdkTracking` must
    follow MLflow's pages for runs and experiments rather than stop at the first."""
    client = SdkTracking(f"sqlite:///{mlflow_db(tmp_path / 'mlflow.db')}")
    monkeypatch.chdir(tmp_path)
    experiment = client.create_experiment("paged")
    for index in range(5):
        client.create_run(experiment, f"run{index}", {})
    pages = []
    search = client.client.search_runs
    monkeypatch.setattr(client.client, "search_runs", lambda *args, **kwargs: pages.append(
        kwargs["page_token"]) or search(*args, **{**kwargs, "max_results": 2}))
    assert len(client.search_runs([experiment], "", max_results=None)) == 5
    assert len(pages) == 3  # 2 + 2 + 1
    assert len(client.search_runs([experiment], "", max_results=3)) == 3
    experiments = client.client.search_experiments
    monkeypatch.setattr(client.client, "search_experiments",
                        lambda **kwargs: experiments(**kwargs, max_results=1))
    assert set(client.experiment_names().values()) == {"Default", "paged"}
    assert set(client.experiment_ids()) == {"0", experiment}


@pytest.mark.parametrize("server", ["rest", "sdk"])
def test_experiments_open_on_runs_and_runs_log_their_datasets_on_both_clients(
    server, fake, tmp_path, monkeypatch, mlflow_db
):
    """MLflow 3 opened every experiment on its GenAI pages (no `mlflow.experimentKind`), and
    the parent run showed "Datasets: None"."""
    from breadth.tracking.datasets import dataset_inputs

    monkeypatch.chdir(tmp_path)
    uri = fake.url if server == "rest" else f"sqlite:///{mlflow_db(tmp_path / 'mlflow.db')}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    files = {"train.parquet": {"sha256": "ab" * 32, "rows": 600},
             "eval.parquet": {"sha256": "cd" * 32, "rows": 32}}
    run = start_run("kinds", "parent")
    run.log_inputs(dataset_inputs("jsonl:/d/train.jsonl", "hf:openai/gsm8k:main", files,
                                  "s3://bucket/datasets/h", "h"))
    client = tracking_client(uri)
    # An experiment made before (by an older breadth, by hand) is marked when next used.
    older = client.create_experiment("older")
    start_run("older", "again")
    if server == "rest":
        kinds = {fake.experiments[e]: tags.get("mlflow.experimentKind")
                 for e, tags in fake.experiment_tags.items()}
        (sent,) = [body for body in fake.bodies if "datasets" in body]
        logged = sent["datasets"]
    else:
        mlflow = client.client
        kinds = {name: mlflow.get_experiment_by_name(name).tags.get("mlflow.experimentKind")
                 for name in ("kinds", "older")}
        logged = [{"tags": [{"key": t.key, "value": t.value} for t in i.tags],
                   "dataset": {"name": i.dataset.name, "digest": i.dataset.digest,
                               "source_type": i.dataset.source_type, "source": i.dataset.source,
                               "profile": i.dataset.profile}}
                  for i in mlflow.get_run(run.run_id).inputs.dataset_inputs]
    assert kinds["kinds"] == kinds["older"] == "custom_model_development", older
    by_context = {next(t["value"] for t in entry["tags"] if t["key"] == "mlflow.data.context"):
                  entry["dataset"] for entry in logged}
    assert by_context["train"]["name"] == "train.jsonl·train"
    assert by_context["eval"]["name"] == "openai/gsm8k:main·eval"
    assert by_context["eval"]["digest"] == "cd" * 8
    assert by_context["eval"]["source_type"] == "s3"
    assert json.loads(by_context["eval"]["source"]) == {"uri": "s3://bucket/datasets/h/eval.parquet"}
    assert json.loads(by_context["train"]["profile"]) == {"num_rows": 600}
