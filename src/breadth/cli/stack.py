"""The local stack and its clients: `breadth stack up|down|status|logs`, `breadth env` (the
client environment), `breadth worker` (a Prefect worker with that environment) and
`breadth deploy` (the deployments of prefect.yaml)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Column, Table

from breadth.cli.output import console, fail, print_json
from breadth.display.suggestions import did_you_mean
from breadth.display.urls import without_userinfo

stack_app = typer.Typer(no_args_is_help=True, help="The local stack: S3, MLflow and Prefect.")
app = typer.Typer()
PROJECT_DIR = Path(__file__).resolve().parents[3]
JSON_HELP = "Print JSON instead of a table."
# What `stack up` prints of the client environment: addresses, never secrets.
PRINTED_ADDRESSES = ("PREFECT_API_URL", "MLFLOW_TRACKING_URI", "BREADTH_S3_ENDPOINT",
                     "BREADTH_S3_BUCKET", "AWS_ACCESS_KEY_ID")


def _stack():
    # Imported on use: `breadth --help` and the other commands do not load it. dead_runs
    # imports Prefect only when a dead run's flow run is crashed.
    from breadth_tasks.dead_runs import PrefectFlowRuns

    from breadth.stack.local import LocalStack, StackSettings

    return LocalStack(StackSettings(), flow_runs=PrefectFlowRuns)


def start_stack(reconcile: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """Start what is not running (external services are only checked): the client environment,
    and what `up` did per service ("started", "running" or "external")."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackError

    stack = _stack()
    try:
        actions = stack.up(reconcile=reconcile)
    except StackError as error:
        fail(str(error))
    return stack.settings.client_env(), actions


# How the services are named to people.
SERVICE_LABELS = {"s3": "S3", "mlflow": "MLflow", "prefect": "Prefect"}


def bring_up_stack(reconcile: bool = True) -> dict[str, str]:
    """Start the stack and export its client environment into this process (for flows run here).

    A caller that runs the pipeline next passes `reconcile=False`: the pipeline reconciles as
    it opens its parent run, and twice is ~0.1 s of a cached re-run for nothing."""
    # Starting takes ~30 s with nothing on screen (`make demo` looked hung): say what starts,
    # that it outlives this command, and how long it took. Nothing when all is running.
    starting = _stack().to_start()
    if starting:
        ports = ", ".join(f"{SERVICE_LABELS.get(s.name, s.name)} :{s.port}" for s in starting)
        console.print(f"Starting the local stack ({ports}; it keeps running after this command: "
                      "`breadth stack down` stops it) ...", highlight=False)
    began = time.monotonic()
    env, _ = start_stack(reconcile)
    if starting:
        console.print(f"Local stack up in {time.monotonic() - began:.0f}s.", highlight=False)
    os.environ.update(env)
    return env


def _print_status(rows: list[dict], as_json: bool) -> None:
    if as_json:
        print_json(rows)
        return
    # Folded, never cropped: a state names a path (BREADTH_HOME) or a variable to unset.
    table = Table("service", Column("url", overflow="fold"), Column("state", overflow="fold"))
    for row in rows:
        table.add_row(row["service"], row["url"], row["state"])
    console.print(table)


@stack_app.command("up")
def stack_up(json_: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False) -> None:
    """Start S3, MLflow and Prefect on 127.0.0.1 (reuses what already runs).

    With BREADTH_BIND_ADDRESS beyond loopback (a team's shared stack), every service requires
    credentials (`breadth stack credentials`) and the stack refuses to start without them."""
    env, actions = start_stack()
    rows = _stack().status(started=[name for name, did in actions.items() if did == "started"])
    if json_:
        _print_status(rows, as_json=True)
        return
    _print_status(rows, as_json=False)
    console.print("\nClient environment, for another shell: eval \"$(breadth env)\", or")
    for key in PRINTED_ADDRESSES:
        # A URL's user:password (MLFLOW_TRACKING_URI may carry them) is never printed.
        console.print(f"  export {key}={without_userinfo(env[key])}", highlight=False)
    console.print(f"  export AWS_SECRET_ACCESS_KEY=... ({secret_source()})", highlight=False)
    if "MLFLOW_TRACKING_PASSWORD" in env:
        console.print("  and the MLflow, Prefect and vLLM credentials (`breadth env` prints them)",
                      highlight=False)


@stack_app.command("credentials")
def stack_credentials() -> None:
    """Write new credentials for a shared stack to <BREADTH_HOME>/auth.json (readable by you
    only), or keep the ones there: MLflow's login, Prefect's API auth string, a vLLM API key.

    `breadth stack up` then starts every service requiring them, and `eval "$(breadth env)"`
    hands them to clients and workers. Needed when BREADTH_BIND_ADDRESS is beyond loopback,
    or with BREADTH_STACK_AUTH=1."""
    # Imported on use, to keep the CLI's start fast (breadth --help loads every command module).
    from breadth.stack.auth import credentials_path, write_credentials
    from breadth.stack.local import StackSettings

    home = StackSettings().home
    existed = credentials_path(home).exists()
    credentials = write_credentials(home)
    verb = "kept" if existed else "wrote"
    console.print(f"{verb} {credentials_path(home)} (mode 0600): MLflow user "
                  f"{credentials.mlflow_username!r}, a Prefect auth string and a vLLM API key. "
                  'Clients and workers: eval "$(breadth env)".', highlight=False)


def secret_source() -> str:
    """Where the S3 secret key comes from: the caller's environment or the stack's own file."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackSettings

    if os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"):
        return "from your environment"
    return f"in {StackSettings().credentials_file}"


@stack_app.command("down")
def stack_down() -> None:
    """Stop the services this stack started (external ones are left alone)."""
    _stack().down()
    _print_status(_stack().status(), as_json=False)


@stack_app.command("status")
def stack_status(json_: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False) -> None:
    """Show each service's address and state."""
    _print_status(_stack().status(), as_json=json_)


def _service_names() -> list[str]:
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackSettings, services

    return [service.name for service in services(StackSettings())]


@stack_app.command("logs")
def stack_logs(
    service: Annotated[str | None, typer.Argument(
        help="s3, mlflow or prefect (default: all).", autocompletion=_service_names)] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="Lines to show per log.")] = 40,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines.")] = False,
) -> None:
    """The last lines of a service's log (the services this stack started write them)."""
    stack = _stack()
    names = _service_names()
    if service is not None and service not in names:
        fail(f"unknown service {service!r}.{did_you_mean(service, names)} "
             f"Services: {', '.join(names)}.")
    paths = {name: stack.log_path(name) for name in ([service] if service else names)}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if len(missing) == len(paths):
        fail(f"no log at {', '.join(missing)}: this stack has not started "
             f"{service or 'any service'} under BREADTH_HOME={stack.settings.home} (an "
             "external service keeps its own logs). Start it with `breadth stack up`.")
    for path in paths.values():
        if path.is_file():
            if len(paths) > 1:
                console.print(f"[bold]==> {path} <==[/]", highlight=False)
            for line in last_lines(path, lines):
                console.print(line, highlight=False, markup=False)
    if follow:
        _follow({name: path for name, path in paths.items() if path.is_file()})


def last_lines(path: Path, count: int, block: int = 65536) -> list[str]:
    """The last `count` lines of a file, read from its end (service logs grow large)."""
    if count == 0:
        return []
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        position, data = handle.tell(), b""
        while position > 0 and data.count(b"\n") <= count:
            step = min(block, position)
            position -= step
            handle.seek(position)
            data = handle.read(step) + data
    return data.decode("utf-8", errors="replace").splitlines()[-count:]


def _follow(paths: dict[str, Path], poll_s: float = 0.5) -> None:
    """Print what is appended to each log, prefixed by its service when there are several,
    until Ctrl-C."""
    offsets = {name: path.stat().st_size for name, path in paths.items()}
    try:
        while True:
            time.sleep(poll_s)
            for name, path in paths.items():
                size = path.stat().st_size if path.exists() else 0
                if size < offsets[name]:  # truncated or replaced: start from its beginning
                    offsets[name] = 0
                with path.open("rb") as handle:
                    handle.seek(offsets[name])
                    new = handle.read()
                complete = new[: new.rfind(b"\n") + 1]  # a half-written line waits for the next poll
                offsets[name] += len(complete)
                for line in complete.decode("utf-8", errors="replace").splitlines():
                    prefix = f"{name} | " if len(paths) > 1 else ""
                    console.print(prefix + line, highlight=False, markup=False)
    except KeyboardInterrupt:
        return


@app.command()
def env(json_: Annotated[bool, typer.Option("--json", help="Print a JSON object.")] = False) -> None:
    """Print the stack's client environment (Prefect, MLflow, S3 and its keys).

    As `export` lines for `eval "$(breadth env)"`, or a JSON object. It includes the S3 secret
    key: do not paste the output into logs or issues."""
    # Imported on use: `breadth --help` and the other commands do not load it.
    from breadth.stack.local import StackError, StackSettings

    try:
        values = StackSettings().client_env()
    except StackError as error:
        fail(str(error))
    if json_:
        print_json(values)
        return
    for key, value in values.items():
        typer.echo(f"export {key}={shlex.quote(value)}")


def worker_invocation(
    pool: str, client_env: dict[str, str], limit: int | None = None, run_once: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The `prefect worker start` command for `pool` and its whole environment: the caller's,
    with the stack's client environment over it (Prefect, MLflow and S3 alike), and flow-run
    heartbeats every 30 s (unless set) so that a run whose worker dies is marked Crashed."""
    # Imported on use: the CLI starts without the orchestration's modules.
    from breadth_tasks.dead_runs import heartbeat_env

    argv = [str(Path(sys.executable).parent / "prefect"), "worker", "start", "--pool", pool]
    if limit is not None:
        argv += ["--limit", str(limit)]
    if run_once:
        argv.append("--run-once")
    return argv, {**heartbeat_env(), **os.environ, **client_env}


def replace_process(argv: list[str], environment: dict[str, str]) -> None:
    """Become the worker: Ctrl-C and the exit status are then the worker's own."""
    os.execve(argv[0], argv, environment)


@app.command()
def worker(
    pool: Annotated[str, typer.Option(help="Work pool to poll (`breadth deploy` creates it).")] = (
        "breadth-cpu"
    ),
    limit: Annotated[int | None, typer.Option(help="Most flow runs at a time.")] = None,
    run_once: Annotated[bool, typer.Option(help="Run the scheduled flow runs, then stop.")] = False,
) -> None:
    """Start a Prefect worker for the pool, with the stack's whole client environment."""
    client_env, _ = start_stack()
    argv, environment = worker_invocation(pool, client_env, limit, run_once)
    where = ", ".join(f"{key}={without_userinfo(client_env[key])}" for key in PRINTED_ADDRESSES[:3])
    console.print(f"starting a worker for pool {pool} ({where})", highlight=False)
    replace_process(argv, environment)


# How `prefect deploy` reports each deployment it registered (in a panel, which may wrap).
CREATED = re.compile(r"Deployment '([^']+)' successfully created with id '([^']+)'")


def deployments_on_pool(work_pool: str) -> dict:
    """prefect.yaml with every deployment on `work_pool`. `prefect deploy --all` ignores
    `--pool` (its CLI options apply to a single deployment only) and the file names
    breadth-cpu, so the pool is written into a copy of the file instead.

    Each deployment's flow runs also get the dead-worker automation's heartbeat frequency in
    their environment (a job variable, so on any worker: a Kubernetes or Docker pool, a plain
    `prefect worker start`). Prefect's own default, 180 s, is past the automation's 90-s
    window: every run longer than that would be marked Crashed while alive."""
    import yaml

    # Imported on use: the CLI starts without the orchestration's modules.
    from breadth_tasks.dead_runs import heartbeat_env

    spec = yaml.safe_load((PROJECT_DIR / "prefect.yaml").read_text())
    for deployment in spec["deployments"]:
        pool = deployment.setdefault("work_pool", {})
        pool["name"] = work_pool
        variables = pool.setdefault("job_variables", {})
        variables["env"] = {**heartbeat_env(), **variables.get("env", {})}
    return spec


def deploy_invocation(prefect: str, prefect_file: Path) -> list[str]:
    """The `prefect deploy` command for every deployment of `prefect_file`."""
    return [prefect, "--no-prompt", "deploy", "--all", "--prefect-file", str(prefect_file)]


def created_deployments(output: str) -> dict[str, str]:
    """Deployment name -> id, from `prefect deploy`'s output (panel borders and wrapping
    removed)."""
    return dict(CREATED.findall(" ".join(output.replace("│", " ").split())))


def _ensure_dead_worker_automation() -> None:
    """The server automation that marks a dead worker's runs Crashed (tasks/dead_runs.py); the
    stack's client environment is already this process's (bring_up_stack)."""
    # Imported on use: the CLI starts without the orchestration's modules.
    from breadth_tasks.dead_runs import AUTOMATION_NAME, ensure_zombie_automation

    ensure_zombie_automation()
    console.print(f"automation {AUTOMATION_NAME!r} is on the server", highlight=False)


@app.command()
def deploy(
    work_pool: Annotated[
        str, typer.Option(help="Process work pool to create/use; both deployments go on it.")
    ] = "breadth-cpu",
) -> None:
    """Register the deployments in prefect.yaml (nightly, adhoc) on a work pool, creating it."""
    import tempfile

    import yaml
    from rich.markup import escape

    env = bring_up_stack()
    prefect = str(Path(sys.executable).parent / "prefect")
    full_env = {**os.environ, **env}
    inspect = subprocess.run([prefect, "work-pool", "inspect", work_pool], env=full_env,
                             capture_output=True, text=True, check=False)
    if inspect.returncode != 0:
        subprocess.run([prefect, "work-pool", "create", work_pool, "--type", "process"],
                       env=full_env, check=True)
    spec = deployments_on_pool(work_pool)
    with tempfile.TemporaryDirectory(prefix="breadth-deploy-") as folder:
        prefect_file = Path(folder) / "prefect.yaml"
        prefect_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        # From the project directory: entrypoints are relative to it, and workers run the code
        # there (no pull section). Wide columns keep each result on one line.
        deployed = subprocess.run(deploy_invocation(prefect, prefect_file), cwd=PROJECT_DIR,
                                  env={**full_env, "COLUMNS": "1000"}, capture_output=True,
                                  text=True, check=False)
    created = created_deployments(deployed.stdout)
    expected = [deployment["name"] for deployment in spec["deployments"]]
    missing = [name for name in expected
               if not any(full.split("/")[-1] == name for full in created)]
    if deployed.returncode != 0 or missing:
        # Prefect exits 0 when it skips a deployment (e.g. a prefect.yaml it cannot validate):
        # its whole output says why.
        why = "failed" if deployed.returncode != 0 else f"did not register {', '.join(missing)}"
        fail(f"prefect deploy {why}:\n{escape(deployed.stdout)}\n{escape(deployed.stderr)}")
    # After the deployments are known good: a failed deploy is reported without a server call.
    _ensure_dead_worker_automation()
    ui = env.get("PREFECT_UI_URL")
    console.print(f"Deployed on work pool {work_pool}:", highlight=False)
    for name, deployment_id in created.items():
        where = f"{ui}/deployments/deployment/{deployment_id}" if ui else f"id {deployment_id}"
        console.print(f"  {name}  {where}", highlight=False, markup=False)
    # The worker needs MLflow and S3 too, not just Prefect: both ways give it all of them.
    console.print(f"Start a worker with: breadth worker --pool {work_pool}\n"
                  f"  or: eval \"$(breadth env)\" && prefect worker start --pool {work_pool}",
                  highlight=False)
