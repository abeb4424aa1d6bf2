"""Stack management without starting services: ports, pid files, external services."""

from __future__ import annotations

import os
import socket

import pytest

from breadth.stack.local import LocalStack, StackError, StackSettings, services


def test_port_in_use_gives_a_clear_error(tmp_path, monkeypatch):
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        monkeypatch.setenv("BREADTH_S3_PORT", str(port))
        stack = LocalStack(StackSettings(home=tmp_path))
        with pytest.raises(StackError) as caught:
            stack.up(only=["s3"])
    message = str(caught.value)
    assert f"port {port}" in message and "already in use" in message
    assert "BREADTH_S3_PORT" in message
    assert "health check" not in message  # it does not answer as S3 would: not another stack


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _without_external_services(monkeypatch) -> None:
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def test_a_port_held_by_a_stack_of_another_home_is_diagnosed(tmp_path, monkeypatch):
    """`stack up` run from another directory (the default BREADTH_HOME is relative) said only
    that the port was "already in use by another process", where `status` said the server
    answered but was not started from this home."""
    import http.server
    import threading

    class Healthy(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    _without_external_services(monkeypatch)
    server = http.server.HTTPServer(("127.0.0.1", 0), Healthy)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    monkeypatch.setenv("BREADTH_MLFLOW_PORT", str(port))
    try:
        with pytest.raises(StackError) as caught:
            LocalStack(StackSettings(home=tmp_path)).up(only=["mlflow"])
    finally:
        server.shutdown()
    message = " ".join(str(caught.value).split())
    # This test's own server: no stack's pid file names it, so no home is guessed.
    assert (f"cannot start mlflow: port {port} on 127.0.0.1 is taken by a server that answers "
            f"mlflow's health check at http://127.0.0.1:{port}, but BREADTH_HOME={tmp_path} did "
            "not start it: most likely the stack of another BREADTH_HOME") in message
    assert "already in use by another process" not in message
    assert 'eval "$(breadth env)"' in message and "BREADTH_MLFLOW_PORT=<port>" in message


def _serve_from(home, port: int, through_parent: bool):
    """An HTTP server on `port` started in `home` as a stack starts a service: its own session,
    `home` as its working directory; with `through_parent`, a child of the started process
    listens (as MLflow's uvicorn under `mlflow server`)."""
    import subprocess
    import sys
    import time

    serve = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]
    command = [sys.executable, "-c", f"import subprocess; subprocess.run({serve!r})"] \
        if through_parent else serve
    process = subprocess.Popen(command, cwd=home, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"the stand-in server did not listen on {port}")


@pytest.mark.parametrize(("through_parent", "pid_file_names_it"),
                         [(False, True), (True, True), (False, False)])
def test_up_and_status_name_the_home_whose_pid_file_names_the_server(
    tmp_path, monkeypatch, through_parent, pid_file_names_it
):
    """The other stack's home is named only when its `run/<service>.pid` names the process
    (or the ancestor of the process) that listens, in whose working directory it lies."""
    import signal

    _without_external_services(monkeypatch)
    other = tmp_path / "other home"
    (other / "run").mkdir(parents=True)
    port = _free_port()
    monkeypatch.setenv("BREADTH_MLFLOW_PORT", str(port))
    process = _serve_from(other, port, through_parent)
    try:
        (other / "run" / "mlflow.pid").write_text(
            str(process.pid if pid_file_names_it else os.getpid()))
        here = LocalStack(StackSettings(home=tmp_path / "here"))
        with pytest.raises(StackError) as caught:
            here.up(only=["mlflow"])
        (row,) = [row for row in here.status() if row["service"] == "mlflow"]
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    message = " ".join(str(caught.value).split())
    quoted = f"BREADTH_HOME='{other}'"
    if pid_file_names_it:
        assert f"it was started from BREADTH_HOME={other} (its pid file there names it)" in message
        assert f"`{quoted} breadth stack up` / `{quoted} breadth stack down`" in message
        assert f'eval "$({quoted} breadth env)"' in message
        assert row["state"].endswith(f"(started from BREADTH_HOME={other})")
    else:  # a pid file naming another process proves nothing: no home is named
        assert "most likely the stack of another BREADTH_HOME" in message
        assert str(other) not in message
        assert row["state"].endswith("(another BREADTH_HOME's stack, or started by hand)")
    assert row["managed"] == "other"


def test_stale_pid_file_is_detected_and_removed(tmp_path):
    stack = LocalStack(StackSettings(home=tmp_path))
    service = next(s for s in services(stack.settings) if s.name == "mlflow")
    pid_file = tmp_path / "run" / "mlflow.pid"
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text("999999")  # no such process
    assert stack._read_pid(service) is None
    assert not pid_file.exists()


@pytest.mark.parametrize(
    ("service", "variable", "suffix"),
    [("s3", "BREADTH_S3_ENDPOINT", ""), ("mlflow", "MLFLOW_TRACKING_URI", ""),
     ("prefect", "PREFECT_API_URL", "/api")],
)
def test_external_service_that_is_down_names_the_variable(
    service, variable, suffix, tmp_path, monkeypatch
):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    monkeypatch.setenv(variable, f"http://127.0.0.1:{dead_port}{suffix}")
    stack = LocalStack(StackSettings(home=tmp_path))
    with pytest.raises(StackError) as caught:
        stack.up(only=[service])
    message = str(caught.value)
    assert message.startswith(f"{service} at") and variable in message
    assert "does not answer" in message


def test_bad_port_variable_is_rejected(monkeypatch):
    monkeypatch.setenv("BREADTH_PREFECT_PORT", "http")
    with pytest.raises(StackError, match="BREADTH_PREFECT_PORT"):
        StackSettings()


def test_credentials_are_generated_once_and_private(tmp_path, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    settings = StackSettings(home=tmp_path)
    first, second = settings.credentials(), settings.credentials()
    assert first == second and len(first["AWS_SECRET_ACCESS_KEY"]) >= 30
    assert (tmp_path / "credentials.json").stat().st_mode & 0o077 == 0


def test_credentials_are_private_before_they_appear_under_their_name(tmp_path, monkeypatch):
    import os

    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    real_link, modes = os.link, []

    def link(source, target):
        modes.append(os.stat(source).st_mode & 0o777)
        real_link(source, target)

    monkeypatch.setattr(os, "link", link)
    old_umask = os.umask(0)  # the most permissive umask must not leak the secret either
    try:
        keys = StackSettings(home=tmp_path).credentials()
    finally:
        os.umask(old_umask)
    assert modes == [0o600]
    assert [p.name for p in tmp_path.iterdir()] == ["credentials.json"]  # no staging file left
    (tmp_path / "credentials.json").unlink()
    (tmp_path / "credentials.json").write_text('{"AWS_ACCESS_KEY_ID": "theirs"}')
    assert StackSettings(home=tmp_path).credentials() == {"AWS_ACCESS_KEY_ID": "theirs"}
    assert keys["AWS_ACCESS_KEY_ID"] != "theirs"


def test_printed_urls_carry_no_credentials():
    from breadth.stack.local import without_userinfo
    from breadth.tracking.runs import RunHandle

    url = RunHandle("abc", "1", "https://me:s3cret@mlflow.example.com").url()
    assert "s3cret" not in url and url.startswith("https://mlflow.example.com/#/experiments/1/")
    assert without_userinfo("http://127.0.0.1:5000") == "http://127.0.0.1:5000"


def test_down_stops_what_it_started_even_when_clients_point_at_it(tmp_path, monkeypatch):
    import subprocess
    import time

    from breadth.stack.processes import pid_alive

    # A stand-in service process, registered through its pid file as `up` would.
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    stack = LocalStack(StackSettings(home=tmp_path))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "mlflow.pid").write_text(str(process.pid))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")  # as after `up`
    stack.down(grace_s=5)
    process.wait(timeout=10)
    time.sleep(0.1)
    assert not pid_alive(process.pid)
    assert not (tmp_path / "run" / "mlflow.pid").exists()


def test_reconciling_with_mlflow_down_reports_it_in_seconds_instead_of_failing(tmp_path, monkeypatch):
    import time

    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    monkeypatch.setenv("BREADTH_MLFLOW_PORT", str(dead))
    started = time.monotonic()
    notes = LocalStack(StackSettings(home=tmp_path)).reconcile()
    assert time.monotonic() - started < 10
    assert len(notes) == 1 and "could not reconcile" in notes[0] and str(dead) in notes[0]


def test_servers_keep_a_database_given_in_the_environment(tmp_path, monkeypatch):
    """Postgres for MLflow and Prefect (the production variant): the URLs are taken from the
    environment, and the password never reaches a command line."""
    monkeypatch.delenv("MLFLOW_BACKEND_STORE_URI", raising=False)
    monkeypatch.delenv("PREFECT_API_DATABASE_CONNECTION_URL", raising=False)
    settings = StackSettings(home=tmp_path)
    by_name = {service.name: service for service in services(settings)}
    assert "sqlite:///" in " ".join(by_name["mlflow"].command(settings))
    assert by_name["prefect"].extra_env(settings)["PREFECT_API_DATABASE_CONNECTION_URL"].startswith(
        "sqlite+aiosqlite:///"
    )
    monkeypatch.setenv("MLFLOW_BACKEND_STORE_URI", "postgresql://u:s3cret@db:5432/mlflow")
    monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL",
                       "postgresql+asyncpg://u:s3cret@db:5432/prefect")
    command = " ".join(by_name["mlflow"].command(settings))
    assert "--backend-store-uri" not in command and "s3cret" not in command
    assert by_name["prefect"].extra_env(settings)["PREFECT_API_DATABASE_CONNECTION_URL"] == (
        "postgresql+asyncpg://u:s3cret@db:5432/prefect"
    )


def test_clients_get_quiet_libraries_unless_they_chose_otherwise(tmp_path, monkeypatch):
    from breadth.stack.local import QUIET_LIBRARIES

    for name in QUIET_LIBRARIES:
        monkeypatch.delenv(name, raising=False)
    assert QUIET_LIBRARIES.items() <= StackSettings(home=tmp_path).client_env().items()
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "0")
    assert StackSettings(home=tmp_path).client_env()["HF_HUB_DISABLE_PROGRESS_BARS"] == "0"


@pytest.mark.parametrize(("s3_action", "checks_bucket"),
                         [("started", True), ("external", True), ("running", False)])
def test_the_bucket_is_checked_when_s3_is_new_to_the_stack(tmp_path, monkeypatch, s3_action,
                                                            checks_bucket):
    stack = LocalStack(StackSettings(home=tmp_path))
    checked = []
    monkeypatch.setattr(stack, "_launch", lambda service: (
        s3_action if service.name == "s3" else "running", None))
    monkeypatch.setattr(stack, "_ensure_bucket", lambda: checked.append(True))
    monkeypatch.setattr(stack, "reconcile", list)
    assert stack.up()["s3"] == s3_action
    assert bool(checked) is checks_bucket


def test_up_launches_every_service_before_it_waits_for_any(tmp_path, monkeypatch):
    # The servers import and migrate at once; one after another a fresh stack took 35 s.
    stack = LocalStack(StackSettings(home=tmp_path))
    events = []
    pids = iter(range(100, 200))

    def launch(service):
        events.append(("launch", service.name))
        return "started", next(pids)

    monkeypatch.setattr(stack, "_launch", launch)
    monkeypatch.setattr(stack, "_wait_healthy",
                        lambda service, pid: events.append(("wait", service.name, pid)))
    monkeypatch.setattr(stack, "_ensure_bucket", lambda: events.append(("bucket",)))
    monkeypatch.setattr(stack, "reconcile", list)
    assert stack.up() == {"s3": "started", "mlflow": "started", "prefect": "started"}
    assert events == [("launch", "s3"), ("launch", "mlflow"), ("launch", "prefect"),
                      ("wait", "s3", 100), ("wait", "mlflow", 101), ("wait", "prefect", 102),
                      ("bucket",)]


@pytest.mark.parametrize("reconcile", [True, False])
def test_up_reconciles_the_whole_stack_unless_told_not_to(tmp_path, monkeypatch, reconcile):
    stack = LocalStack(StackSettings(home=tmp_path))
    reconciled = []
    monkeypatch.setattr(stack, "_launch", lambda service: ("running", None))
    monkeypatch.setattr(stack, "reconcile", lambda: reconciled.append(True))
    stack.up(reconcile=reconcile)
    assert reconciled == [True] * reconcile
    stack.up(only=["s3"])  # one service: never
    assert reconciled == [True] * reconcile


@pytest.mark.parametrize(("endpoint", "action"),
                         [("http://127.0.0.1:{port}", "running"),
                          ("http://localhost:{port}/", "running"),
                          ("http://key:secret@[::1]:{port}", "running"),
                          ("http://127.0.0.1:{other}", "external"),
                          ("http://10.1.2.3:{port}", "external")])
def test_a_service_this_stack_runs_is_its_own_when_the_environment_names_it(
    tmp_path, monkeypatch, endpoint, action
):
    """After `eval "$(breadth env)"` the environment names the stack's own S3 (a loopback host
    and its port, however spelled): it is running (no bucket check), not external; an
    endpoint elsewhere stays external. `status` follows the same rule, and says when this
    stack's own server runs unused."""
    import os

    import breadth.stack.local as stack_module

    settings = StackSettings(home=tmp_path)
    monkeypatch.setenv("BREADTH_S3_ENDPOINT",
                       endpoint.format(port=settings.s3_port, other=settings.s3_port + 1))
    monkeypatch.setattr(stack_module, "_s3_healthy", lambda _settings: True)
    stack = LocalStack(settings)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "s3.pid").write_text(str(os.getpid()))  # a live process
    checked = []
    monkeypatch.setattr(stack, "_ensure_bucket", lambda: checked.append(True))
    assert stack.up(only=["s3"]) == {"s3": action}
    assert bool(checked) is (action == "external")
    (row,) = [row for row in stack.status() if row["service"] == "s3"]
    assert row["managed"] == ("local" if action == "running" else "external")
    assert ("runs unused" in row["state"]) is (action == "external")
    assert ("BREADTH_S3_ENDPOINT" in row["state"]) is (action == "external")


@pytest.mark.parametrize(("endpoint", "action"),
                         [("http://127.0.0.1:{port}", "started"),
                          ("http://localhost:{port}/", "started"),
                          ("http://127.0.0.1:{other}", StackError)])
def test_the_stacks_own_address_with_nothing_serving_it_is_started_not_refused(
    tmp_path, monkeypatch, endpoint, action
):
    """A shell that ran `eval "$(breadth env)"` names the stack's own S3 address; after `stack
    down` (or a reboot) nothing answers there. `status` calls it stopped and `up` starts it,
    where it used to refuse it as an external S3 that does not answer. An address elsewhere
    that does not answer is still refused."""
    import os
    import types

    import breadth.stack.local as stack_module

    settings = StackSettings(home=tmp_path)
    monkeypatch.setenv("BREADTH_S3_ENDPOINT",
                       endpoint.format(port=settings.s3_port, other=settings.s3_port + 1))
    started = []
    monkeypatch.setattr(stack_module, "_s3_healthy", lambda _settings: bool(started))
    monkeypatch.setattr(stack_module, "_port_in_use", lambda port: False)
    monkeypatch.setattr(stack_module.subprocess, "Popen",
                        lambda command, **kwargs: started.append(command)
                        or types.SimpleNamespace(pid=os.getpid()))
    stack = LocalStack(settings)
    monkeypatch.setattr(stack, "_ensure_bucket", lambda: None)
    (row,) = [row for row in stack.status() if row["service"] == "s3"]
    if action == "started":
        assert (row["managed"], row["state"]) == ("local", "stopped")
        assert stack.up(only=["s3"]) == {"s3": "started"}
        assert started and "weed" in " ".join(started[0])
    else:
        assert (row["managed"], row["state"]) == ("external", "external, NOT answering")
        with pytest.raises(StackError, match="does not answer"):
            stack.up(only=["s3"])
        assert not started


def test_an_external_url_without_a_scheme_is_named_as_such(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "127.0.0.1:15999")
    stack = LocalStack(StackSettings(home=tmp_path))
    (row,) = [row for row in stack.status() if row["service"] == "mlflow"]
    assert row["state"] == ("external, NOT answering. It has no scheme: write "
                            "http://127.0.0.1:15999.")
    with pytest.raises(StackError, match="It has no scheme: write http://127.0.0.1:15999"):
        stack.up(only=["mlflow"])


def test_to_start_names_what_up_would_start(tmp_path, monkeypatch):
    """What `breadth run` announces before the ~30 s start: not an external server, and not
    the stack's own address named by the environment with nothing serving it (up starts it)."""
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        own_port = probe.getsockname()[1]
    monkeypatch.setenv("BREADTH_S3_PORT", str(own_port))
    monkeypatch.setenv("BREADTH_S3_ENDPOINT", f"http://127.0.0.1:{own_port}")  # ours, stopped
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://10.0.0.5:5000")  # someone else's
    stack = LocalStack(StackSettings(home=tmp_path))
    assert [service.name for service in stack.to_start()] == ["s3", "prefect"]
