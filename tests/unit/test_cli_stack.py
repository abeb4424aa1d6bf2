"""`breadth stack up|status|logs`, `breadth env`, `breadth worker` and the hint after `deploy`,
without starting a service: a stand-in process holds the pid file, a tiny HTTP server answers
the health check, and the worker's exec is captured instead of run."""

from __future__ import annotations

import http.server
import io
import json
import os
import shlex
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from breadth_tasks.dead_runs import HEARTBEAT_S
from typer.testing import CliRunner

from breadth import cli
from breadth.stack.local import LocalStack, StackSettings

EXTERNAL = ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT",
            "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
CLIENT_KEYS = {"PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT",
               "BREADTH_S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty BREADTH_HOME with no service given by the environment, on ports nothing
    answers (a stack running on this machine's default ports is another home's)."""
    for name in EXTERNAL:
        monkeypatch.delenv(name, raising=False)
    for name in ("S3", "MLFLOW", "PREFECT"):
        monkeypatch.setenv(f"BREADTH_{name}_PORT", str(_free_port()))
    folder = tmp_path / "elsewhere"
    monkeypatch.setenv("BREADTH_HOME", str(folder))
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def local_mlflow(home, monkeypatch):
    """A healthy "mlflow" this stack started: a pid file naming a live process, and an HTTP
    server answering its health check on its port."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("BREADTH_MLFLOW_PORT", str(server.server_address[1]))
    process = subprocess.Popen(["sleep", "60"])
    (home / "run").mkdir(parents=True)
    (home / "run" / "mlflow.pid").write_text(str(process.pid))
    yield process.pid
    server.shutdown()
    process.kill()
    process.wait()


def _row(rows, service):
    return next(row for row in rows if row["service"] == service)


def test_a_service_this_stack_started_is_not_reported_external(local_mlflow, monkeypatch):
    # After `up`, clients' environment points at the local services; they are still ours.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", StackSettings().mlflow_url)
    rows = LocalStack(StackSettings()).status()
    assert _row(rows, "mlflow") | {"url": None} == {
        "service": "mlflow", "url": None, "state": f"running (pid {local_mlflow})",
        "pid": local_mlflow, "healthy": True, "managed": "local"}
    started = LocalStack(StackSettings()).status(started=["mlflow"])
    assert _row(started, "mlflow")["state"] == f"started (pid {local_mlflow})"
    assert _row(started, "s3")["state"] == "stopped"


def test_stack_up_says_started_and_where_the_secret_is(local_mlflow, home, monkeypatch):
    monkeypatch.setattr(LocalStack, "up", lambda self, only=None, reconcile=True: {"mlflow": "started"})
    result = runner.invoke(cli.app, ["stack", "up"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    assert f"started (pid {local_mlflow})" in text and "external" not in text
    assert f"in {home / 'credentials.json'}" in text  # BREADTH_HOME, not .breadth/
    secret = json.loads((home / "credentials.json").read_text())["AWS_SECRET_ACCESS_KEY"]
    assert secret not in result.output
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "mine")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "my-secret")
    mine = runner.invoke(cli.app, ["stack", "up"]).output
    assert "from your environment" in mine and "my-secret" not in mine


@pytest.fixture
def kept_environ():
    """bring_up_stack exports the client environment into this process: undone after."""
    before = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(before)


def test_bringing_up_the_stack_says_what_starts_and_how_long_it_took(
    local_mlflow, home, monkeypatch, capsys, kept_environ
):
    """`make demo` (`breadth run`) printed nothing for ~30 s while the stack started."""
    monkeypatch.setattr(LocalStack, "up", lambda self, only=None, reconcile=True: {
        "s3": "started", "mlflow": "running", "prefect": "started"})
    settings = StackSettings()
    cli.stack.bring_up_stack(reconcile=False)
    text = " ".join(capsys.readouterr().out.split())
    # mlflow already runs (local_mlflow): only what starts is named.
    assert (f"Starting the local stack (S3 :{settings.s3_port}, Prefect :{settings.prefect_port}; "
            "it keeps running after this command: `breadth stack down` stops it) ...") in text
    assert "MLflow" not in text and "Local stack up in " in text


def test_bringing_up_a_running_stack_says_nothing(home, monkeypatch, capsys, kept_environ):
    monkeypatch.setattr(LocalStack, "to_start", lambda self: [])
    monkeypatch.setattr(LocalStack, "up", lambda self, only=None, reconcile=True: {
        "s3": "running", "mlflow": "running", "prefect": "running"})
    cli.stack.bring_up_stack(reconcile=False)
    assert capsys.readouterr().out == ""


def test_stack_status_json_parses(local_mlflow):
    for args in (["stack", "status", "--json"], ["stack", "up", "--json"]):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(LocalStack, "up", lambda self, only=None, reconcile=True: {})
            result = runner.invoke(cli.app, args)
        assert result.exit_code == 0, result.output
        rows = json.loads(result.output)
        assert [row["service"] for row in rows] == ["s3", "mlflow", "prefect"]
        assert _row(rows, "mlflow")["pid"] == local_mlflow and _row(rows, "s3")["pid"] is None


def test_a_server_answering_without_this_homes_pid_file_is_not_called_stopped(home, monkeypatch):
    """`stack status` run from another directory (BREADTH_HOME defaults to `.breadth` there)
    called the stack's healthy servers "stopped": it looked only for pid files."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("BREADTH_MLFLOW_PORT", str(server.server_address[1]))
    try:
        text = runner.invoke(cli.app, ["stack", "status"])
        as_json = runner.invoke(cli.app, ["stack", "status", "--json"])
    finally:
        server.shutdown()
    assert text.exit_code == 0 and as_json.exit_code == 0, text.output + as_json.output
    state = (f"answering, but not started from BREADTH_HOME={home} (another BREADTH_HOME's "
             "stack, or started by hand)")
    mlflow = _row(json.loads(as_json.output), "mlflow")
    assert (mlflow["state"], mlflow["managed"], mlflow["healthy"]) == (state, "other", True)
    assert _row(json.loads(as_json.output), "s3")["state"] == "stopped"  # nothing answers there

    def squeezed(output):  # the table wraps a long cell over lines between its borders
        return "".join(output.replace("│", " ").split())

    assert squeezed(state) in squeezed(text.output)


def test_stack_up_says_which_port_another_homes_stack_holds_and_the_ways_out(home, monkeypatch):
    """`stack up` from another directory said only "port ... is already in use by another
    process" where `status` said the server answered but was not started from this home."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    monkeypatch.setenv("BREADTH_S3_PORT", str(port))  # S3 starts first: nothing is started
    try:
        result = runner.invoke(cli.app, ["stack", "up"])
    finally:
        server.shutdown()
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert (f"error: cannot start s3: port {port} on 127.0.0.1 is taken by a server that answers "
            f"s3's health check at http://127.0.0.1:{port}, but BREADTH_HOME={home} did not "
            "start it") in text
    for way_out in ("`breadth stack up` / `breadth stack down` with that stack's BREADTH_HOME",
                    'eval "$(breadth env)"', "BREADTH_S3_PORT=<port>"):
        assert way_out in text
    assert not (home / "run").exists()  # no pid file: nothing was started


def _write_log(home, service, count):
    (home / "logs").mkdir(parents=True, exist_ok=True)
    path = home / "logs" / f"{service}.log"
    path.write_text("".join(f"{service} line {i}\n" for i in range(count)))
    return path


def test_stack_logs_shows_the_last_lines_of_one_service_or_all(home):
    _write_log(home, "mlflow", 5000)
    _write_log(home, "s3", 3)
    one = runner.invoke(cli.app, ["stack", "logs", "mlflow", "-n", "4"])
    assert one.exit_code == 0, one.output
    assert one.output.splitlines() == [f"mlflow line {i}" for i in range(4996, 5000)]
    every = runner.invoke(cli.app, ["stack", "logs", "--lines", "2"])
    assert every.exit_code == 0, every.output
    assert "s3 line 2" in every.output and "mlflow line 4999" in every.output
    assert "mlflow line 4997" not in every.output and "prefect" not in every.output


def test_stack_logs_follow_prints_appended_lines(home, monkeypatch):
    path = _write_log(home, "prefect", 2)
    polls = []

    def sleep(seconds):
        polls.append(seconds)
        if len(polls) == 1:
            with path.open("a") as handle:
                handle.write("appended line\nhalf a li")
        else:
            raise KeyboardInterrupt  # the user's Ctrl-C

    monkeypatch.setattr(cli.stack.time, "sleep", sleep)
    result = runner.invoke(cli.app, ["stack", "logs", "prefect", "-n", "1", "--follow"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["prefect line 1", "appended line"]


@pytest.mark.parametrize(("args", "must_mention"), [
    (["stack", "logs", "mlfow"], ["unknown service 'mlfow'", "Did you mean 'mlflow'?"]),
    (["stack", "logs", "s3"], ["no log at", "s3.log", "breadth stack up"]),
])
def test_stack_logs_errors_name_the_fix(home, args, must_mention):
    result = runner.invoke(cli.app, args)
    text = " ".join(result.output.split())
    assert result.exit_code == 2
    assert all(part in text for part in must_mention), text


def test_env_prints_the_whole_client_environment_for_eval(home, tmp_path):
    expected = StackSettings().client_env()
    result = runner.invoke(cli.app, ["env"])
    assert result.exit_code == 0, result.output
    assert CLIENT_KEYS <= set(expected)
    # What a shell's `eval "$(breadth env)"` sets is exactly the client environment.
    script = tmp_path / "env.sh"
    script.write_text(result.output + "env -0\n")
    shell = subprocess.run(["bash", "-c", f"source {shlex.quote(str(script))}"],
                           capture_output=True, text=True, env={}, check=True)
    exported = dict(item.split("=", 1) for item in shell.stdout.split("\0") if "=" in item)
    assert {key: exported[key] for key in expected} == expected
    as_json = runner.invoke(cli.app, ["env", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output) == expected


def test_worker_starts_prefect_with_the_whole_client_environment(home, monkeypatch):
    monkeypatch.setattr(LocalStack, "up", lambda self, only=None, reconcile=True: {})
    started = []
    monkeypatch.setattr(cli.stack, "replace_process", lambda argv, env: started.append((argv, env)))
    before = dict(os.environ)
    result = runner.invoke(cli.app, ["worker", "--pool", "gpu-pool", "--limit", "2", "--run-once"])
    assert result.exit_code == 0, result.output
    [(argv, env)] = started
    assert argv[0].endswith("prefect") and argv[1:] == ["worker", "start", "--pool", "gpu-pool",
                                                         "--limit", "2", "--run-once"]
    assert CLIENT_KEYS <= set(env) and env["PATH"] == os.environ["PATH"]
    assert {key: env[key] for key in CLIENT_KEYS} == {
        key: StackSettings().client_env()[key] for key in CLIENT_KEYS}
    assert dict(os.environ) == before  # the test process's own environment is untouched


ID = "-ba7a-4371-844e-e4a0e296f553"  # the rest of a deployment id (a UUID)


def _prefect_deploy(calls, registers=None, returncode=0, preamble=""):
    """A stand-in for subprocess.run: records each command, with the prefect.yaml `prefect
    deploy` was given, and reports what the real one prints: a panel per deployment, wrapped
    at 80 columns (registers: the deployment names it reports, default all of the file's)."""
    import yaml
    from rich.console import Console
    from rich.panel import Panel

    flow_names = {"flows/grid_flow.py:grid": "breadth-grid", "flows/pipeline.py:pipeline": "breadth-pipeline"}

    def run(argv, **kwargs):
        spec = None
        if "deploy" in argv:
            spec = yaml.safe_load(Path(argv[argv.index("--prefect-file") + 1]).read_text())
        calls.append((argv, kwargs, spec))
        if spec is None:
            return subprocess.CompletedProcess(argv, 1 if "inspect" in argv else 0, "", "")
        out = Console(width=80, file=io.StringIO())
        out.print(preamble, markup=False)
        for deployment in spec["deployments"]:
            if registers is None or deployment["name"] in registers:
                name = f"{flow_names[deployment['entrypoint']]}/{deployment['name']}"
                out.print(Panel(f"Deployment '{name}' successfully created with id "
                                f"'{deployment['name']}{ID}'."))
                out.print(f"\n\t$ prefect worker start --pool {deployment['work_pool']['name']!r}\n")
        return subprocess.CompletedProcess(argv, returncode, out.file.getvalue(), "")

    return run


def test_deploy_puts_every_deployment_on_the_chosen_pool_and_names_them(monkeypatch):
    """`deploy --work-pool pool-x` created pool-x and said to start its worker, while prefect.yaml
    kept both deployments on breadth-cpu: that worker waited forever. And only the last 2000
    characters of Prefect's output were printed, which cut off the nightly's line."""
    import yaml

    monkeypatch.setattr(cli.stack, "bring_up_stack", lambda: {"PREFECT_UI_URL": "http://ui:4200"})
    calls = []
    monkeypatch.setattr(cli.stack.subprocess, "run", _prefect_deploy(calls, preamble="x" * 3000))
    # The dead-worker automation talks to the stack's Prefect server (its own test is on the
    # stack); here, with no server, Prefect started an ephemeral one, which timed out under load.
    automations = []
    monkeypatch.setattr(cli.stack, "_ensure_dead_worker_automation",
                        lambda: automations.append(True))
    result = runner.invoke(cli.app, ["deploy", "--work-pool", "pool-x"])
    assert result.exit_code == 0, result.output
    assert automations == [True]
    created = [argv[1:] for argv, _, _ in calls if "create" in argv]
    assert created == [["work-pool", "create", "pool-x", "--type", "process"]]
    [(argv, kwargs, spec)] = [call for call in calls if call[2] is not None]
    assert argv[1:4] == ["--no-prompt", "deploy", "--all"]
    assert kwargs["cwd"] == cli.stack.PROJECT_DIR  # entrypoints and the workers' code are there
    original = yaml.safe_load((cli.stack.PROJECT_DIR / "prefect.yaml").read_text())
    assert [d["work_pool"]["name"] for d in original["deployments"]] == ["breadth-cpu"] * len(original["deployments"])
    for deployment in original["deployments"]:
        deployment["work_pool"]["name"] = "pool-x"
        # Flow runs on any worker send heartbeats as often as the dead-worker automation
        # expects (Prefect's default, 180 s, is past its window); other job variables stay.
        env = deployment["work_pool"].setdefault("job_variables", {}).setdefault("env", {})
        env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] = str(HEARTBEAT_S)
    assert spec == original  # the pool moved, the heartbeat added, nothing else changed
    lines = result.output.splitlines()
    assert "Deployed on work pool pool-x:" in lines
    assert "  breadth-grid/nightly  http://ui:4200/deployments/deployment/nightly" + ID in lines
    assert "  breadth-pipeline/adhoc  http://ui:4200/deployments/deployment/adhoc" + ID in lines
    assert "xxx" not in result.output  # Prefect's own output, on success, is left out
    assert "breadth worker --pool pool-x" in result.output
    assert 'eval "$(breadth env)" && prefect worker start --pool pool-x' in result.output


@pytest.mark.parametrize(("registers", "returncode", "says"), [
    (["adhoc"], 0, "prefect deploy did not register nightly"),
    (None, 1, "prefect deploy failed"),
])
def test_deploy_that_registers_less_than_the_file_fails_with_prefects_whole_output(
    monkeypatch, registers, returncode, says
):
    monkeypatch.setattr(cli.stack, "bring_up_stack", dict)
    calls = []
    preamble = "[/] Skipping deployment configuration due to validation errors. " + "x" * 4000
    monkeypatch.setattr(cli.stack.subprocess, "run",
                        _prefect_deploy(calls, registers, returncode, preamble))
    automations = []
    monkeypatch.setattr(cli.stack, "_ensure_dead_worker_automation",
                        lambda: automations.append(True))
    result = runner.invoke(cli.app, ["deploy"])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert automations == []  # nothing is set up on the server after a failed deploy
    assert says in text and "[/] Skipping deployment configuration" in text
    assert "breadth worker" not in text
