"""Static checks of docker/ and infra/.

No Docker engine (and no Kubernetes cluster) runs where the tests run, so these tests parse the
Dockerfiles, the compose file, the Kubernetes work-pool job template and the entrypoint script,
and check that everything they refer to exists and agrees: files copied or mounted, commands
and entrypoint scripts, ${VARIABLES} against infra/.env.example, published ports against the
documented ones, worker pools against prefect.yaml, pinned versions against pyproject.toml, and
the job template against Prefect's own validator and renderer.
"""

from __future__ import annotations

import fnmatch
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
INFRA = REPO / "infra"
COMPOSE_FILE = INFRA / "compose.yaml"
ENV_EXAMPLE = INFRA / ".env.example"
POSTGRES_INIT = INFRA / "postgres-init.sql"
JOB_TEMPLATE = INFRA / "k8s" / "work-pool-job-template.json"
VLLM_ENTRYPOINT = DOCKER / "vllm-entrypoint.sh"
PREFECT_YAML = REPO / "prefect.yaml"
PYPROJECT = REPO / "pyproject.toml"

DOCKERFILES = {
    "cpu": DOCKER / "cpu-worker.Dockerfile",
    "gpu": DOCKER / "gpu-worker.Dockerfile",
}
# The work pool each image's default command polls.
IMAGE_POOLS = {"cpu": "breadth-cpu", "gpu": "breadth-gpu"}

# Ports documented in docs/design/architecture.md and infra/README.md: what each service
# listens on and publishes.
DOCUMENTED_PORTS: dict[str, set[int]] = {
    "postgres": {5432},
    "minio": {9000, 9001},
    "prefect-server": {4200},
    "mlflow": {5000},
    "vllm": {8000},
}
# Port of a Prefect worker's --with-healthcheck server (PREFECT_WORKER_WEBSERVER_PORT default).
WORKER_HEALTH_PORT = 8080

REQUIRED_SERVICES = {
    "postgres",
    "minio",
    "minio-init",
    "prefect-server",
    "prefect-worker",
    "mlflow",
}

# The variables the library reads to reach remote services.
LIBRARY_ENV = {
    "PREFECT_API_URL",
    "MLFLOW_TRACKING_URI",
    "BREADTH_S3_ENDPOINT",
    "BREADTH_S3_BUCKET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "MLFLOW_S3_ENDPOINT_URL",
    "BREADTH_VLLM_URL",
}

SECRET_KEY_RE = re.compile(r"PASSWORD|SECRET|ACCESS_KEY|ROOT_USER|TOKEN", re.IGNORECASE)


def rel(path: Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def require_file(path: Path, referenced_by: str) -> Path:
    assert path.exists(), f"{rel(path)} does not exist, but {referenced_by} refers to it"
    return path


# --------------------------------------------------------------------------------------------
# pyproject.toml
# --------------------------------------------------------------------------------------------


def pyproject() -> dict[str, Any]:
    require_file(PYPROJECT, "the Dockerfiles (COPY pyproject.toml)")
    return tomllib.loads(PYPROJECT.read_text())


def _req_name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def pinned_version(package: str, extra: str | None = None) -> str:
    project = pyproject()["project"]
    reqs = project["optional-dependencies"][extra] if extra else project["dependencies"]
    for req in reqs:
        if _req_name(req) == package:
            m = re.search(r"==\s*([\w.]+)", req)
            assert m, f"pyproject.toml: {req!r} is not an exact pin (the images rely on it)"
            return m.group(1)
    raise AssertionError(f"pyproject.toml has no requirement on {package!r} (extra={extra!r})")


def dependency_names() -> set[str]:
    project = pyproject()["project"]
    names = {_req_name(r) for r in project["dependencies"]}
    names.add(project["name"].lower())
    return names


# --------------------------------------------------------------------------------------------
# Dockerfile parsing
# --------------------------------------------------------------------------------------------


class Instruction:
    def __init__(self, keyword: str, args: str, line: int):
        self.keyword = keyword
        self.args = args
        self.line = line

    def __repr__(self) -> str:  # pragma: no cover - for assertion messages
        return f"{self.keyword} {self.args} (line {self.line})"


def parse_dockerfile(path: Path) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    require_file(path, "docker/README.md and infra/compose.yaml")
    instructions: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(path.read_text().splitlines(), start=1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf.append(stripped[:-1].strip())
            continue
        buf.append(stripped)
        text = " ".join(part for part in buf if part)
        buf = []
        keyword, _, args = text.partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
    assert not buf, f"{rel(path)}: the last instruction ends in a line continuation"
    return instructions


def split_flags(args: str) -> tuple[dict[str, str], str]:
    flags: dict[str, str] = {}
    rest = args
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        key, _, value = flag[2:].partition("=")
        flags[key] = value
        rest = rest.strip()
    return flags, rest


def exec_form(instr: Instruction, path: Path) -> list[str]:
    assert instr.args.startswith("["), (
        f"{rel(path)} line {instr.line}: {instr.keyword} must use the JSON exec form so the "
        f"process gets signals (docker stop) directly, got: {instr.args}"
    )
    value = json.loads(instr.args)
    assert isinstance(value, list) and value and all(isinstance(v, str) for v in value)
    return value


class Dockerfile:
    def __init__(self, path: Path):
        self.path = path
        self.instructions = parse_dockerfile(path)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def run_text(self) -> str:
        return "\n".join(i.args for i in self.all("RUN"))

    def env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        for instr in self.all("ENV"):
            for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|\S*)", instr.args):
                env[m.group(1)] = m.group(2).strip('"')
        return env

    def copies(self) -> list[tuple[dict[str, str], list[str], str, str, Instruction]]:
        """(flags, sources, destination resolved against WORKDIR, workdir, instruction)."""
        out = []
        workdir = "/"
        for instr in self.instructions:
            if instr.keyword == "WORKDIR":
                workdir = str(PurePosixPath(workdir) / instr.args)
            if instr.keyword not in ("COPY", "ADD"):
                continue
            flags, rest = split_flags(instr.args)
            parts = json.loads(rest) if rest.startswith("[") else rest.split()
            assert len(parts) >= 2, f"{rel(self.path)} line {instr.line}: malformed {instr}"
            *sources, dest = parts
            dest_abs = str(PurePosixPath(workdir) / dest)
            out.append(
                (flags, sources, dest_abs + ("/" if dest.endswith("/") else ""), workdir, instr)
            )
        return out

    def copied_to(self, image_path: str) -> tuple[Path, dict[str, str]] | None:
        """The repo file COPY'd to image_path, with the COPY's flags."""
        for flags, sources, dest, _, _ in self.copies():
            if "from" in flags:
                continue
            for src in sources:
                target = dest + PurePosixPath(src).name if dest.endswith("/") else dest
                if os.path.normpath(target) == os.path.normpath(image_path):
                    return REPO / src, flags
        return None

    def final_workdir(self) -> str:
        workdir = "/"
        for instr in self.all("WORKDIR"):
            workdir = str(PurePosixPath(workdir) / instr.args)
        return workdir

    def venvs(self) -> set[str]:
        return set(re.findall(r"-m\s+venv\s+(/\S+)", self.run_text()))


@pytest.fixture(scope="module", params=sorted(DOCKERFILES))
def dockerfile(request) -> tuple[str, Dockerfile]:
    return request.param, Dockerfile(DOCKERFILES[request.param])


def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    path = REPO / ".dockerignore"
    if not path.exists():
        return []
    patterns = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip().lstrip("/"))
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**", i):
                regex += ".*"
                i += 2
            elif pattern[i] == "*":
                regex += "[^/]*"
                i += 1
            elif pattern[i] == "?":
                regex += "[^/]"
                i += 1
            else:
                regex += re.escape(pattern[i])
                i += 1
        patterns.append((negate, re.compile(regex + r"\Z")))
    return patterns


def dockerignored(source: str) -> bool:
    """Whether .dockerignore (Docker's matching: last match wins, a directory takes its
    contents along) keeps `source` out of the build context."""
    parts = PurePosixPath(os.path.normpath(source)).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for negate, regex in dockerignore_patterns():
        if any(regex.match(c) for c in candidates):
            ignored = not negate
    return ignored


# --------------------------------------------------------------------------------------------
# Dockerfile tests
# --------------------------------------------------------------------------------------------


def test_dockerfile_copy_sources_exist_in_the_build_context(dockerfile):
    _, df = dockerfile
    copies = df.copies()
    assert copies, f"{rel(df.path)} copies nothing into the image"
    for flags, sources, _, _, instr in copies:
        assert "from" not in flags, f"{rel(df.path)}: unexpected multi-stage COPY {instr}"
        assert instr.keyword == "COPY", f"{rel(df.path)} line {instr.line}: use COPY, not ADD"
        for src in sources:
            assert not src.startswith("/") and ".." not in PurePosixPath(src).parts, (
                f"{rel(df.path)} line {instr.line}: COPY source {src!r} must be relative to the "
                "repository root (the build context)"
            )
            path = REPO / src
            assert path.exists(), (
                f"{rel(df.path)} line {instr.line} copies {src!r}, but {rel(path)} does not "
                "exist in the repository (the build context is the repository root)"
            )
            if path.is_dir():
                assert any(p.suffix == ".py" for p in path.rglob("*.py")), (
                    f"{rel(df.path)} line {instr.line} copies the directory {src!r}, which has "
                    "no Python files yet"
                )
            assert not dockerignored(src), (
                f"{rel(df.path)} line {instr.line} copies {src!r}, but .dockerignore excludes "
                "it from the build context: the build would fail"
            )


def test_dockerfile_copies_everything_the_project_needs(dockerfile):
    _, df = dockerfile
    copied = {os.path.normpath(s) for _, sources, _, _, _ in df.copies() for s in sources}
    for needed in ("pyproject.toml", "README.md", "src", "flows", "tasks", "prefect.yaml"):
        assert needed in copied, f"{rel(df.path)} does not COPY {needed}"
    # pyproject's readme must be in the image for the build backend to read it.
    readme = pyproject()["project"].get("readme")
    if isinstance(readme, str):
        assert readme in copied, f"{rel(df.path)}: pyproject's readme {readme!r} is not copied"


def test_dockerfile_orchestration_code_lands_on_pythonpath_and_workdir(dockerfile):
    """prefect.yaml's entrypoints are paths relative to the working directory
    (flows/pipeline.py), so flows/ and tasks/ must sit there, and it on PYTHONPATH."""
    _, df = dockerfile
    workdir = df.final_workdir()
    assert df.env().get("PYTHONPATH", "").split(":")[0] == workdir, (
        f"{rel(df.path)}: PYTHONPATH should start with the WORKDIR {workdir}"
    )
    for flags, sources, dest, _, instr in df.copies():
        for src in sources:
            if src.rstrip("/") in ("flows", "tasks", "prefect.yaml"):
                target = dest + PurePosixPath(src).name if dest.endswith("/") else dest
                assert PurePosixPath(os.path.normpath(target)).parent == PurePosixPath(workdir), (
                    f"{rel(df.path)} line {instr.line}: {src} should be copied into {workdir}"
                )


def test_dockerfile_runs_as_a_non_root_user(dockerfile):
    _, df = dockerfile
    user = df.last("USER")
    assert user is not None, f"{rel(df.path)} has no USER: the image would run as root"
    name = user.args.split(":")[0]
    assert name not in ("root", "0"), f"{rel(df.path)}: USER {user.args} is root"
    cmd = df.last("CMD")
    assert cmd is not None and user.line < cmd.line, f"{rel(df.path)}: USER must precede CMD"
    if name.isdigit():
        assert re.search(rf"useradd\b[^\n]*--uid {name}\b", df.run_text()), (
            f"{rel(df.path)}: USER {name} is not created by a `useradd --uid {name}`"
        )


def _console_scripts() -> dict[str, str]:
    scripts = {}
    for ep in importlib.metadata.entry_points(group="console_scripts"):
        dist = ep.dist.metadata["Name"].lower().replace("_", "-") if ep.dist else ""
        scripts.setdefault(ep.name, dist)
    return scripts


def check_command(argv: list[str], df: Dockerfile, where: str) -> None:
    """The executable of a CMD/ENTRYPOINT/compose command exists in the image built from df:
    a script COPY'd from the repo (existing and executable), a venv's interpreter, or a
    console script of one of the project's dependencies."""
    exe = argv[0]
    if exe.startswith("/"):
        venv = next((v for v in df.venvs() if exe.startswith(v.rstrip("/") + "/bin/")), None)
        if venv:
            return
        copied = df.copied_to(exe)
        assert copied is not None, (
            f"{where}: {exe} is neither COPY'd into the image by {rel(df.path)} nor in a venv "
            "it creates"
        )
        source, flags = copied
        require_file(source, f"{where} (via COPY in {rel(df.path)})")
        assert os.access(source, os.X_OK), (
            f"{rel(source)} (run by {where}) is not executable: chmod +x it"
        )
        chmod = flags.get("chmod")
        if chmod is not None:
            assert int(chmod, 8) & 0o111, f"{rel(df.path)}: COPY --chmod={chmod} drops exec bits"
        return
    scripts = _console_scripts()
    assert exe in scripts, (
        f"{where}: {exe!r} is not a console script of any installed distribution; "
        "install the project's environment (.venv) first"
    )
    assert scripts[exe] in dependency_names(), (
        f"{where}: {exe!r} comes from {scripts[exe]!r}, which pyproject.toml does not depend on"
    )


def test_dockerfile_cmd_starts_a_worker_for_its_pool(dockerfile):
    name, df = dockerfile
    cmd = df.last("CMD")
    assert cmd is not None, f"{rel(df.path)} has no CMD"
    argv = exec_form(cmd, df.path)
    check_command(argv, df, f"{rel(df.path)} CMD")
    entrypoint = df.last("ENTRYPOINT")
    if entrypoint is not None:
        check_command(exec_form(entrypoint, df.path), df, f"{rel(df.path)} ENTRYPOINT")
    assert argv[:3] == ["prefect", "worker", "start"], f"{rel(df.path)}: CMD is {argv}"
    assert worker_pool(argv) == IMAGE_POOLS[name], f"{rel(df.path)}: CMD polls {worker_pool(argv)}"
    assert option(argv, "--type") == "process", f"{rel(df.path)}: worker type should be process"


def test_cpu_image_installs_the_pinned_cpu_torch():
    df = Dockerfile(DOCKERFILES["cpu"])
    from_ = df.all("FROM")
    assert [i.args for i in from_] == ["python:3.11-slim"], from_
    torch = pinned_version("torch")
    expected = f"pip install torch=={torch} --index-url https://download.pytorch.org/whl/cpu"
    runs = [i for i in df.all("RUN") if "torch" in i.args]
    assert runs and expected in runs[0].args, (
        f"{rel(df.path)}: the first RUN that installs torch must be `{expected}` (the pin in "
        "pyproject.toml, from the CPU wheel index) so the project install keeps the CPU build"
    )
    project_install = next(i for i in df.all("RUN") if "requirements.txt" in i.args)
    assert runs[0].line < project_install.line, "torch must be installed before the dependencies"
    assert "vllm" not in df.run_text(), "the CPU worker image must not install vLLM"


def _python_minor(df: Dockerfile) -> str:
    base = df.all("FROM")[0].args
    m = re.match(r"python:(3\.\d+)", base)
    if m:
        return m.group(1)
    found = set(re.findall(r"python(3\.\d+)\s+-m\s+venv", df.run_text()))
    assert len(found) == 1, f"{rel(df.path)}: cannot tell the Python version ({found})"
    return found.pop()


def test_images_use_a_python_the_project_supports(dockerfile):
    from packaging.specifiers import SpecifierSet

    _, df = dockerfile
    minor = _python_minor(df)
    spec = SpecifierSet(pyproject()["project"]["requires-python"])
    assert f"{minor}.0" in spec, f"{rel(df.path)} uses Python {minor}, pyproject wants {spec}"


def test_gpu_image_keeps_vllm_in_its_own_environment():
    df = Dockerfile(DOCKERFILES["gpu"])
    base = df.all("FROM")
    assert len(base) == 1 and re.fullmatch(
        r"nvidia/cuda:12\.8\.\d+-(cudnn-)?runtime-ubuntu2[24]\.04", base[0].args
    ), f"{rel(df.path)}: base image {base[0].args!r} is not a CUDA 12.8 runtime Ubuntu image"
    assert {"/opt/venv", "/opt/vllm"} <= df.venvs(), f"venvs created: {df.venvs()}"
    vllm = pinned_version("vllm", extra="vllm")
    run = df.run_text()
    assert f"/opt/vllm/bin/pip install vllm=={vllm}" in run, (
        f"{rel(df.path)}: /opt/vllm must get vllm=={vllm} (the pin of the `vllm` extra)"
    )
    assert re.search(r"/opt/vllm/bin/pip install --no-deps /app\b", run), (
        f"{rel(df.path)}: the library goes into /opt/vllm with --no-deps (no Prefect)"
    )
    for instr in df.all("RUN"):
        for cmd in re.split(r"&&|;", instr.args):
            if re.search(r"\bpip install\b", cmd) and re.search(r"\bvllm\b", cmd):
                assert "/opt/vllm/bin/pip" in cmd, (
                    f"{rel(df.path)} line {instr.line}: vLLM installed outside /opt/vllm: {cmd}"
                )
    torch = pinned_version("torch")
    assert f"pip install torch=={torch}" in run, f"{rel(df.path)}: pipeline venv lacks torch pin"
    assert df.env().get("PATH", "").startswith("/opt/venv/bin:"), (
        f"{rel(df.path)}: the pipeline environment must come first on PATH"
    )
    expose = {int(p.split("/")[0]) for i in df.all("EXPOSE") for p in i.args.split()}
    assert expose == DOCUMENTED_PORTS["vllm"], f"{rel(df.path)} EXPOSEs {expose}"


def test_gpu_image_installs_the_vllm_entrypoint_executable():
    df = Dockerfile(DOCKERFILES["gpu"])
    copied = [
        (flags, dest)
        for flags, sources, dest, _, _ in df.copies()
        if "docker/vllm-entrypoint.sh" in sources
    ]
    assert copied, f"{rel(df.path)} does not COPY docker/vllm-entrypoint.sh"
    flags, dest = copied[0]
    assert "chmod" in flags and int(flags["chmod"], 8) & 0o111, (
        f"{rel(df.path)}: COPY the entrypoint with --chmod=0755"
    )
    assert dest.startswith("/usr/local/bin/"), f"entrypoint lands at {dest}, not on PATH"


def test_dockerfile_syntax_directive_allows_copy_chmod(dockerfile):
    _, df = dockerfile
    first = df.path.read_text().splitlines()[0]
    if any("chmod" in i.args for i in df.all("COPY")):
        assert first.startswith("# syntax=docker/dockerfile:1"), (
            f"{rel(df.path)}: COPY --chmod needs the `# syntax=docker/dockerfile:1` directive"
        )


# --------------------------------------------------------------------------------------------
# vLLM entrypoint script
# --------------------------------------------------------------------------------------------


def test_vllm_entrypoint_script_is_valid_and_serves_on_the_documented_port():
    script = require_file(VLLM_ENTRYPOINT, "docker/gpu-worker.Dockerfile")
    assert os.access(script, os.X_OK), f"{rel(script)} is not executable: chmod +x it"
    text = script.read_text()
    assert text.startswith(("#!/usr/bin/env bash\n", "#!/bin/bash\n"))
    bash = shutil.which("bash")
    assert bash, "bash is needed to syntax-check the entrypoint"
    result = subprocess.run([bash, "-n", str(script)], check=False, capture_output=True, text=True)
    assert result.returncode == 0, f"{rel(script)}: bash -n failed: {result.stderr}"
    assert "set -euo pipefail" in text
    assert re.search(
        r"^exec /opt/vllm/bin/python -m vllm\.entrypoints\.openai\.api_server", text, re.MULTILINE
    )
    assert "/opt/vllm" in Dockerfile(DOCKERFILES["gpu"]).venvs()
    assert re.search(r'--model "\$\{BREADTH_VLLM_MODEL\}"', text)
    assert re.search(r":\s*\"\$\{BREADTH_VLLM_MODEL:\?", text), "fail early without a model"
    assert "--host 0.0.0.0" in text
    ports = {int(p) for p in re.findall(r"--port (\d+)", text)}
    assert ports == DOCUMENTED_PORTS["vllm"], f"{rel(script)} serves on {ports}"
    assert re.search(r"--seed \S+", text), f"{rel(script)} must pass --seed"
    assert '"$@"' in text, "extra arguments should pass through to the server"


def test_vllm_entrypoint_fails_clearly_without_a_model(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BREADTH_VLLM")}
    result = subprocess.run(
        ["bash", str(VLLM_ENTRYPOINT)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode != 0
    assert "BREADTH_VLLM_MODEL" in result.stderr


# --------------------------------------------------------------------------------------------
# Compose
# --------------------------------------------------------------------------------------------

VAR_RE = re.compile(
    r"\$\$"  # escaped dollar
    r"|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}"
    r"|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\$\{(?P<bad>[^}]*)\}"
)


def compose_variables(text: str) -> list[tuple[str, str | None, str | None]]:
    """(name, operator, argument) of every ${VAR} compose would interpolate."""
    found = []
    for m in VAR_RE.finditer(text):
        if m.group(0) == "$$":
            continue
        assert m.group("bad") is None, f"compose.yaml: cannot parse {m.group(0)!r}"
        name = m.group("braced") or m.group("bare")
        found.append((name, m.group("op"), m.group("arg")))
    return found


def interpolate(text: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group("braced") or m.group("bare")
        op, arg = m.group("op"), m.group("arg")
        value = env.get(name)
        if op in (":-", "-"):
            return value if value or (op == "-" and value is not None) else arg
        if op in (":?", "?"):
            assert value or (op == "?" and value is not None), (
                f"{rel(COMPOSE_FILE)} requires ${{{name}}}, which {rel(ENV_EXAMPLE)} does not "
                f"define ({arg})"
            )
            return value
        if op in (":+", "+"):
            return arg if value else ""
        return value or ""

    return VAR_RE.sub(sub, text)


def env_example() -> dict[str, str]:
    require_file(ENV_EXAMPLE, "infra/compose.yaml (its ${VARIABLES}) and infra/README.md")
    values: dict[str, str] = {}
    for n, line in enumerate(ENV_EXAMPLE.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        assert "=" in line, f"{rel(ENV_EXAMPLE)} line {n}: not KEY=VALUE: {line!r}"
        key, _, value = line.partition("=")
        assert re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key), f"line {n}: bad key {key!r}"
        assert key not in values, f"{rel(ENV_EXAMPLE)}: {key} is defined twice"
        values[key] = value
    return values


def raw_compose() -> dict[str, Any]:
    require_file(COMPOSE_FILE, "infra/README.md")
    return yaml.safe_load(COMPOSE_FILE.read_text())


def compose() -> dict[str, Any]:
    """compose.yaml as `docker compose` sees it with infra/.env copied from .env.example."""
    return yaml.safe_load(interpolate(COMPOSE_FILE.read_text(), env_example()))


def services() -> dict[str, dict[str, Any]]:
    return compose()["services"]


def as_list(command: Any) -> list[str]:
    if command is None:
        return []
    if isinstance(command, str):
        return command.split()
    return [str(c) for c in command]


def option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def worker_pool(argv: list[str]) -> str | None:
    return option(argv, "--pool") or option(argv, "-p")


def environment(service: dict[str, Any]) -> dict[str, Any]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict((e.split("=", 1) + [None])[:2] for e in env)
    return env


def service_dockerfile(name: str, service: dict[str, Any]) -> Dockerfile | None:
    build = service.get("build")
    if build is None:
        return None
    if isinstance(build, str):
        build = {"context": build}
    context = (INFRA / build.get("context", ".")).resolve()
    return Dockerfile(context / build.get("dockerfile", "Dockerfile"))


def worker_commands() -> dict[str, list[str]]:
    """Compose services that run a Prefect worker -> their command."""
    workers = {}
    for name, svc in services().items():
        argv = as_list(svc.get("command"))
        df = service_dockerfile(name, svc)
        # compose's `entrypoint:` also drops the image's CMD
        if not argv and not svc.get("entrypoint") and df is not None and df.last("CMD"):
            argv = exec_form(df.last("CMD"), df.path)
        if argv[:3] == ["prefect", "worker", "start"]:
            workers[name] = argv
    return workers


def test_compose_has_the_stack_services():
    missing = REQUIRED_SERVICES - set(services())
    assert not missing, f"{rel(COMPOSE_FILE)} lacks the services {sorted(missing)}"


def test_compose_services_have_an_image_or_an_existing_dockerfile():
    for name, svc in services().items():
        assert "image" in svc or "build" in svc, f"service {name} has neither image nor build"
        build = svc.get("build")
        if build is not None:
            build = {"context": build} if isinstance(build, str) else build
            context = (INFRA / build.get("context", ".")).resolve()
            assert context.is_dir(), f"service {name}: build context {context} does not exist"
            assert context == REPO, (
                f"service {name}: the Dockerfiles COPY paths relative to the repository root, so "
                f"the build context must be the repository root, not {context}"
            )
            dockerfile = context / build.get("dockerfile", "Dockerfile")
            require_file(dockerfile, f"service {name} in {rel(COMPOSE_FILE)}")
            assert dockerfile.parent == DOCKER
        else:
            image = svc["image"]
            assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), (
                f"service {name}: pin the image tag ({image})"
            )


def test_compose_images_match_the_pinned_versions():
    svcs = services()
    prefect = pinned_version("prefect")
    mlflow = pinned_version("mlflow")
    assert svcs["prefect-server"]["image"] == f"prefecthq/prefect:{prefect}-python3.11"
    assert svcs["mlflow"]["image"] == f"ghcr.io/mlflow/mlflow:v{mlflow}"
    assert re.fullmatch(r"postgres:16(\.\d+)?(-\w+)?", svcs["postgres"]["image"])
    assert svcs["prefect-worker"]["image"] == "breadth-cpu:latest"
    assert svcs["prefect-worker"]["build"]["dockerfile"] == "docker/cpu-worker.Dockerfile"


def test_compose_host_paths_exist_and_named_volumes_are_declared():
    data = compose()
    declared = set(data.get("volumes") or {})
    mounted_init = False
    for name, svc in data["services"].items():
        for volume in svc.get("volumes") or []:
            if isinstance(volume, dict):
                source, target, kind = (
                    volume.get("source"),
                    volume.get("target"),
                    volume.get("type"),
                )
            else:
                source, target = volume.split(":")[:2]
                kind = "bind" if source.startswith((".", "/", "~")) else "volume"
            if kind == "bind":
                host = (INFRA / source).resolve()
                require_file(host, f"service {name} (volume {volume!r}) in {rel(COMPOSE_FILE)}")
                if target.startswith("/docker-entrypoint-initdb.d/"):
                    mounted_init = host == POSTGRES_INIT
            else:
                assert source in declared, f"service {name}: volume {source!r} is not declared"
    assert mounted_init, f"{rel(POSTGRES_INIT)} is not mounted into /docker-entrypoint-initdb.d/"


def test_postgres_init_creates_the_databases_the_services_use():
    sql = require_file(POSTGRES_INIT, "infra/compose.yaml").read_text()
    databases = set(re.findall(r"CREATE DATABASE\s+\"?(\w+)\"?", sql, re.IGNORECASE))
    assert databases == {"prefect", "mlflow"}, databases
    svcs = services()
    url = environment(svcs["prefect-server"])["PREFECT_API_DATABASE_CONNECTION_URL"]
    assert re.fullmatch(r"postgresql\+asyncpg://[^:]+:[^@]+@postgres:5432/prefect", url), url
    # The store URI (with the password) is an environment variable, never on a command line.
    assert "--backend-store-uri" not in "\n".join(as_list(svcs["mlflow"].get("command")))
    store = environment(svcs["mlflow"])["MLFLOW_BACKEND_STORE_URI"]
    assert re.fullmatch(r"postgresql://[^:]+:[^@]+@postgres:5432/mlflow", store), store


def test_packages_installed_at_container_start_are_pinned():
    for name, svc in services().items():
        script = "\n".join(as_list(svc.get("command")))
        for install in re.findall(r"pip install ([^\n]+)", script):
            packages = [word for word in install.split() if not word.startswith("-")]
            unpinned = [p for p in packages if not re.fullmatch(r"[\w.\-\[\]]+==[\w.]+", p)]
            assert packages and not unpinned, f"compose service {name}: unpinned {unpinned}"


def test_every_compose_variable_is_defined_in_env_example_or_has_a_default():
    text = require_file(COMPOSE_FILE, "infra/README.md").read_text()
    example = env_example()
    used = compose_variables(text)
    assert used, "compose.yaml uses no variables: where do the credentials come from?"
    problems = []
    for name, op, arg in used:
        has_default = op in (":-", "-")
        if not has_default and not example.get(name):
            problems.append(f"${{{name}}} has no default and no value in {rel(ENV_EXAMPLE)}")
        if op in (":?", "?") and not arg:
            problems.append(f"${{{name}{op}}} should say how to fix it (infra/.env)")
    assert not problems, "\n".join(problems)
    unused = set(example) - {name for name, _, _ in used}
    assert not unused, f"{rel(ENV_EXAMPLE)} defines variables compose never uses: {sorted(unused)}"
    # and the whole file interpolates and parses with those values
    assert compose()["services"]


def test_compose_hard_codes_no_secret():
    data = raw_compose()
    blocks = [("x-pipeline-env", data.get("x-pipeline-env") or {})]
    blocks += [(name, environment(svc)) for name, svc in data["services"].items()]
    for where, env in blocks:
        for key, value in env.items():
            if SECRET_KEY_RE.search(key) and value is not None:
                assert re.fullmatch(r"\$\{[A-Z0-9_]+(:?[-?][^}]*)?\}", str(value)), (
                    f"{where}: {key} is hard-coded ({value!r}); take it from infra/.env"
                )
    text = COMPOSE_FILE.read_text()
    for m in re.finditer(r"://([^/\s:@\"']+):([^@\s\"']+)@", text):
        for part in m.groups():
            assert part.startswith("$"), f"credentials written into a URL in compose: {m.group(0)}"


def test_env_file_with_the_real_secrets_is_git_ignored():
    git = shutil.which("git")
    if git and (REPO / ".git").exists():
        result = subprocess.run(
            [git, "-C", str(REPO), "check-ignore", "-q", "infra/.env"],
            check=False,
            capture_output=True,
        )
        assert result.returncode == 0, "infra/.env (real credentials) is not ignored by git"
    else:
        assert ".env" in (INFRA / ".gitignore").read_text().split()


def published_ports(service: dict[str, Any]) -> list[tuple[int, int]]:
    """(host port, container port) pairs."""
    out = []
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            out.append((int(port["published"]), int(port["target"])))
            continue
        spec = str(port).split("/")[0]
        parts = spec.rsplit(":", 2)
        assert len(parts) >= 2, f"publish ports explicitly as host:container ({port!r})"
        out.append((int(parts[-2]), int(parts[-1])))
    return out


def test_published_ports_match_the_documented_ones():
    for name, svc in services().items():
        pairs = published_ports(svc)
        expected = DOCUMENTED_PORTS.get(name, set())
        assert {c for _, c in pairs} == expected, (
            f"service {name} publishes container ports {sorted(c for _, c in pairs)}, "
            f"documented: {sorted(expected)}"
        )
        for host, container in pairs:
            assert host == container, f"service {name}: {host}:{container} (documented: same)"


def listening_ports(name: str, service: dict[str, Any]) -> set[int]:
    ports = set(DOCUMENTED_PORTS.get(name, set()))
    if "--with-healthcheck" in as_list(service.get("command")):
        ports.add(WORKER_HEALTH_PORT)
    return ports


def test_server_commands_listen_on_the_documented_ports():
    svcs = services()
    prefect = as_list(svcs["prefect-server"]["command"])
    assert int(option(prefect, "--port")) in DOCUMENTED_PORTS["prefect-server"]
    assert option(prefect, "--host") == "0.0.0.0"
    mlflow = " ".join(as_list(svcs["mlflow"]["command"]))
    assert re.search(r"--port 5000\b", mlflow) and re.search(r"--host 0\.0\.0\.0\b", mlflow)
    minio = as_list(svcs["minio"]["command"])
    assert option(minio, "--address") == ":9000" and option(minio, "--console-address") == ":9001"


def test_urls_in_compose_point_at_services_and_their_ports():
    svcs = services()
    text = yaml.safe_dump(svcs)
    for m in re.finditer(r"https?://([A-Za-z0-9_.-]+):(\d+)", text):
        host, port = m.group(1), int(m.group(2))
        if host in ("127.0.0.1", "localhost", "0.0.0.0"):
            continue
        assert host in svcs, f"{m.group(0)}: no service named {host!r} in compose"
        assert port in listening_ports(host, svcs[host]), (
            f"{m.group(0)}: service {host} does not listen on {port}"
        )
    for name, svc in svcs.items():
        check = " ".join(as_list((svc.get("healthcheck") or {}).get("test")))
        for port in re.findall(r"(?:127\.0\.0\.1|localhost):(\d+)", check):
            assert int(port) in listening_ports(name, svc), (
                f"service {name}: healthcheck probes port {port}, which it does not listen on"
            )


def test_depends_on_conditions_are_satisfiable():
    svcs = services()
    for name, svc in svcs.items():
        deps = svc.get("depends_on") or {}
        if isinstance(deps, list):
            deps = {d: {"condition": "service_started"} for d in deps}
        for dep, spec in deps.items():
            assert dep in svcs, f"service {name} depends on unknown service {dep!r}"
            condition = spec.get("condition", "service_started")
            if condition == "service_healthy":
                assert "healthcheck" in svcs[dep], (
                    f"{name} waits for {dep} to be healthy, but {dep} has no healthcheck"
                )
            elif condition == "service_completed_successfully":
                assert str(svcs[dep].get("restart", "no")) == "no", f"{dep} is a one-shot job"
            if set(svc.get("profiles") or []) == set():
                assert not svcs[dep].get("profiles"), (
                    f"{name} (always on) depends on {dep}, which only runs in a profile"
                )
        if str(svc.get("restart", "no")) != "no":
            assert "healthcheck" in svc, f"long-running service {name} has no healthcheck"
    worker = svcs["prefect-worker"]["depends_on"]
    assert worker["prefect-server"]["condition"] == "service_healthy"
    assert svcs["mlflow"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert svcs["prefect-server"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_commands_of_our_images_exist():
    for name, svc in services().items():
        df = service_dockerfile(name, svc)
        if df is None:
            continue
        entrypoint = as_list(svc.get("entrypoint"))
        command = as_list(svc.get("command"))
        if entrypoint:
            check_command(entrypoint, df, f"service {name} entrypoint")
        elif command:
            check_command(command, df, f"service {name} command")


def test_workers_get_the_library_environment():
    svcs = services()
    for name in worker_commands():
        env = environment(svcs[name])
        missing = LIBRARY_ENV - set(env)
        assert not missing, f"worker {name} lacks {sorted(missing)}"
        assert env["PREFECT_API_URL"] == "http://prefect-server:4200/api"
        assert env["MLFLOW_TRACKING_URI"] == "http://mlflow:5000"
        assert env["BREADTH_S3_ENDPOINT"] == env["MLFLOW_S3_ENDPOINT_URL"] == "http://minio:9000"
        assert env["BREADTH_S3_BUCKET"] == "breadth"


def test_mlflow_server_is_configured_as_designed():
    svc = services()["mlflow"]
    env = environment(svc)
    script = "\n".join(as_list(svc["command"]))
    assert re.search(r"pip install [^\n]*psycopg2-binary", script)
    assert re.search(r"pip install [^\n]*boto3", script)
    assert "--serve-artifacts" in script
    bucket = env["BREADTH_S3_BUCKET"]
    assert bucket == "breadth"
    assert '--artifacts-destination "s3://$BREADTH_S3_BUCKET/mlflow"' in script
    assert env["MLFLOW_S3_ENDPOINT_URL"] == "http://minio:9000"
    assert str(env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"]).lower() == "false"
    assert {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} <= set(env)
    allowed = env["MLFLOW_SERVER_ALLOWED_HOSTS"].split(",")
    assert "mlflow:5000" in allowed, "the workers reach MLflow as mlflow:5000"


def test_minio_init_creates_the_bucket():
    svc = services()["minio-init"]
    script = "\n".join(as_list(svc["command"]))
    env = environment(svc)
    assert env["BREADTH_S3_BUCKET"] == "breadth"
    assert re.search(r"mc mb --ignore-existing \"?breadth/\$BREADTH_S3_BUCKET", script)
    assert "http://minio:9000" in script
    assert services()["minio-init"]["depends_on"]["minio"]["condition"] == "service_healthy"


# --------------------------------------------------------------------------------------------
# prefect.yaml <-> workers
# --------------------------------------------------------------------------------------------


def prefect_deployments() -> list[dict[str, Any]]:
    assert PREFECT_YAML.exists(), (
        f"{rel(PREFECT_YAML)} does not exist: the workers in infra/compose.yaml and the images "
        "poll the pools its deployments use, and the images COPY it"
    )
    data = yaml.safe_load(PREFECT_YAML.read_text()) or {}
    deployments = data.get("deployments") or []
    assert deployments, f"{rel(PREFECT_YAML)} has no deployments"
    return deployments


def test_worker_pools_match_prefect_yaml():
    deployments = prefect_deployments()
    names = {d.get("name") for d in deployments}
    assert {"nightly", "adhoc"} <= names, f"{rel(PREFECT_YAML)} deployments: {sorted(names)}"
    workers = worker_commands()
    served = {worker_pool(argv) for argv in workers.values()} | set(IMAGE_POOLS.values())
    used = set()
    for d in deployments:
        pool = (d.get("work_pool") or {}).get("name")
        assert pool, f"{rel(PREFECT_YAML)}: deployment {d.get('name')!r} names no work_pool"
        assert "{{" not in pool, (
            f"{rel(PREFECT_YAML)}: deployment {d.get('name')!r} templates its pool ({pool}); "
            "name it so the infra workers can be checked against it"
        )
        assert pool in served, (
            f"{rel(PREFECT_YAML)}: deployment {d.get('name')!r} uses pool {pool!r}, which no "
            f"worker in infra/ or docker/ polls (they poll {sorted(served)})"
        )
        used.add(pool)
    default_workers = {
        n: worker_pool(a) for n, a in workers.items() if not services()[n].get("profiles")
    }
    assert default_workers, "compose starts no Prefect worker by default"
    for name, pool in default_workers.items():
        assert pool in used, (
            f"compose worker {name} polls {pool!r}, but no deployment in {rel(PREFECT_YAML)} "
            f"uses it (they use {sorted(used)})"
        )


def test_prefect_yaml_entrypoints_exist_and_are_in_the_images():
    copied_dirs = {
        os.path.normpath(s)
        for df in map(Dockerfile, DOCKERFILES.values())
        for _, sources, _, _, _ in df.copies()
        for s in sources
    }
    for d in prefect_deployments():
        entrypoint = d.get("entrypoint")
        assert entrypoint and ":" in entrypoint, f"deployment {d.get('name')!r}: no entrypoint"
        path, _, func = entrypoint.rpartition(":")
        source = require_file(REPO / path, f"deployment {d.get('name')!r} in prefect.yaml")
        assert re.search(
            rf"^(async\s+)?def {re.escape(func)}\(", source.read_text(), re.MULTILINE
        ), f"{path} defines no function {func!r} (deployment {d.get('name')!r})"
        top = PurePosixPath(path).parts[0]
        assert top in copied_dirs, f"{path} is not copied into the worker images"


# --------------------------------------------------------------------------------------------
# Kubernetes work-pool job template
# --------------------------------------------------------------------------------------------


def job_template() -> dict[str, Any]:
    require_file(JOB_TEMPLATE, "infra/README.md (prefect work-pool create --base-job-template)")
    return json.loads(JOB_TEMPLATE.read_text())


def template_defaults(template: dict[str, Any]) -> dict[str, Any]:
    from prefect.workers.base import BaseJobConfiguration

    return BaseJobConfiguration._get_base_config_defaults(template["variables"]["properties"])


def render(template: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a worker does with the template: defaults, then job variables, then templating."""
    from prefect.utilities.templating import apply_values

    values = template_defaults(template)
    values.update(overrides or {})
    return apply_values(template["job_configuration"], values)


def test_job_template_has_the_base_job_template_shape():
    template = job_template()
    assert set(template) == {"job_configuration", "variables"}
    assert template["variables"]["type"] == "object"
    assert isinstance(template["variables"]["properties"], dict)


def test_job_template_placeholders_are_declared_variables():
    from prefect.utilities.templating import find_placeholders

    template = job_template()
    declared = set(template["variables"]["properties"])
    used = {p.name for p in find_placeholders(template["job_configuration"])}
    undeclared = used - declared
    assert not undeclared, (
        f"{rel(JOB_TEMPLATE)}: job_configuration uses {{{{ {sorted(undeclared)} }}}} but "
        "variables.properties does not declare them"
    )
    unused = declared - used
    assert not unused, f"{rel(JOB_TEMPLATE)}: variables never used in job_configuration: {unused}"


def test_job_template_passes_prefects_own_validation():
    from prefect.server.schemas.actions import WorkPoolCreate
    from prefect.utilities.schema_tools.validation import validate

    template = job_template()
    pool = WorkPoolCreate(name="breadth-gpu", type="kubernetes", base_job_template=template)
    assert pool.base_job_template == template
    validate(
        template_defaults(template),
        template["variables"],
        raise_on_error=True,
        preprocess=True,
        ignore_required=True,
    )


def test_job_template_renders_a_gpu_job_of_the_gpu_image():
    template = job_template()
    rendered = render(template)
    manifest = rendered["job_manifest"]
    assert manifest["apiVersion"] == "batch/v1" and manifest["kind"] == "Job"
    pod = manifest["spec"]["template"]["spec"]
    # what prefect-kubernetes' job configuration requires of a manifest
    assert pod["parallelism"] == 1 and pod["completions"] == 1
    assert pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["name"] == "prefect-job"
    assert container["image"] == "breadth-gpu:latest"
    gpu_images = {
        svc["image"]
        for svc in services().values()
        if (svc.get("build") or {}).get("dockerfile") == "docker/gpu-worker.Dockerfile"
    }
    assert gpu_images <= {container["image"]}, f"compose tags the GPU image {gpu_images}"
    resources = container["resources"]
    assert resources["limits"]["nvidia.com/gpu"] == 1
    assert resources["requests"]["nvidia.com/gpu"] == 1
    env = container["env"]
    assert {
        "MLFLOW_TRACKING_URI",
        "BREADTH_S3_ENDPOINT",
        "BREADTH_S3_BUCKET",
        "MLFLOW_S3_ENDPOINT_URL",
        "AWS_DEFAULT_REGION",
    } <= set(env)
    assert env["BREADTH_S3_BUCKET"] == "breadth"
    assert re.fullmatch(r"http://mlflow[\w.-]*:5000", env["MLFLOW_TRACKING_URI"])
    assert re.fullmatch(r"http://minio[\w.-]*:9000", env["BREADTH_S3_ENDPOINT"])
    assert not any(SECRET_KEY_RE.search(k) for k in env), "secrets belong in the Secret"
    secrets = [e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e]
    assert secrets == ["breadth-credentials"]
    volumes = {v["name"] for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        assert mount["name"] in volumes, f"volumeMount {mount['name']} has no volume"
    assert pod["securityContext"].get("seccompProfile") == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        hardening = container.get("securityContext", {})
        assert hardening.get("allowPrivilegeEscalation") is False, container["name"]
        assert hardening.get("capabilities", {}).get("drop") == ["ALL"], container["name"]
    user = pod.get("securityContext", {}).get("runAsUser")
    if user is not None:
        gpu_user = Dockerfile(DOCKERFILES["gpu"]).last("USER").args.split(":")[0]
        assert str(user) == gpu_user, f"runAsUser {user} differs from the image's USER {gpu_user}"


def test_job_template_gpu_count_is_a_job_variable():
    template = job_template()
    gpu = template["variables"]["properties"]["gpu_count"]
    assert gpu["type"] == "integer" and gpu["default"] == 1
    container = render(template, {"gpu_count": 4, "image": "registry.example.com/breadth-gpu:1"})[
        "job_manifest"
    ]["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 4
    assert container["resources"]["requests"]["nvidia.com/gpu"] == 4
    assert container["image"] == "registry.example.com/breadth-gpu:1"


# --------------------------------------------------------------------------------------------
# READMEs
# --------------------------------------------------------------------------------------------


def test_readmes_give_the_commands_and_name_existing_paths():
    docker_readme = require_file(DOCKER / "README.md", "the repository layout").read_text()
    infra_readme = require_file(INFRA / "README.md", "the repository layout").read_text()
    assert "docker build -f docker/cpu-worker.Dockerfile -t breadth-cpu ." in docker_readme
    assert "docker build -f docker/gpu-worker.Dockerfile -t breadth-gpu ." in docker_readme
    assert re.search(
        r"prefect work-pool create breadth-gpu --type kubernetes\s*\\?\s*"
        r"--base-job-template infra/k8s/work-pool-job-template\.json",
        infra_readme,
    )
    assert "docker compose -f infra/compose.yaml up -d --build" in infra_readme
    assert "cp infra/.env.example infra/.env" in infra_readme
    for text, readme in ((docker_readme, "docker/README.md"), (infra_readme, "infra/README.md")):
        for path in set(re.findall(r"(?<![\w./-])((?:docker|infra)/[\w./-]+\w)", text)):
            if fnmatch.fnmatch(path, "infra/.env"):
                continue  # created by the user from .env.example
            require_file(REPO / path, readme)


def test_every_compose_service_requires_credentials_and_its_clients_send_them():
    """Published beyond loopback, an open MLflow, Prefect or vLLM lets anyone read, delete or
    run: compose refuses to start without their credentials (`:?`), the servers require
    them, and the pipeline's containers send them."""
    required = {name for name, operator, _ in compose_variables(COMPOSE_FILE.read_text())
                if operator == ":?"}
    clients = ("MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD", "PREFECT_API_AUTH_STRING",
               "VLLM_API_KEY")
    assert set(clients) | {"MLFLOW_FLASK_SERVER_SECRET_KEY"} <= required
    svc = services()
    assert "--app-name basic-auth" in "\n".join(as_list(svc["mlflow"]["command"]))
    assert "PREFECT_SERVER_API_AUTH_STRING" in svc["prefect-server"]["environment"]
    assert "VLLM_API_KEY" in svc["vllm"]["environment"]
    for worker in ("prefect-worker", "prefect-worker-gpu"):
        assert set(clients) <= set(svc[worker]["environment"]), worker
    example = (INFRA / ".env.example").read_text()
    assert all(f"\n{name}=" in example for name in clients)


def test_the_deployed_grids_are_the_grid_modules_nightly_multi_answer_vector_search_default():
    """prefect.yaml spells the multi-answer grid out as parameters, and leaves the nightly to
    GridConfig's defaults: both must stay the grids `breadth.study.grid_design` documents."""
    from breadth.study.grid_design import (
        MULTI_ANSWER_PRESET,
        MULTI_ANSWER_REWARDS,
        NIGHTLY_PRESET,
        GridConfig,
    )
    from breadth.study.reference import read_reference

    deployments = {d["name"]: d for d in yaml.safe_load(PREFECT_YAML.read_text())["deployments"]}
    nightly = GridConfig(**deployments["nightly"]["parameters"]["study"])
    # The nightly its table sized (docs/results/grids/full-grid-6abeba80/claims.md): free form,
    # correctness and ucb, 15 seeds; the mcq rows it leaves out cite that table, which must read.
    assert (nightly.preset, nightly.formats, nightly.format_rewards) == (
        NIGHTLY_PRESET, ["free_form"], {})
    assert nightly.rewards == ["correctness", "correctness+ucb"]
    assert len(nightly.cells()) == 2 * len(nightly.seeds) == 30
    reference = read_reference(PREFECT_YAML.parent / nightly.reference)
    assert {row["format"] for row in reference.rows} == {"free_form", "mcq", "both"}
    multi = GridConfig(**deployments["multi"]["parameters"]["study"])
    assert (multi.preset, multi.rewards, multi.formats) == (
        MULTI_ANSWER_PRESET, MULTI_ANSWER_REWARDS, ["free_form"])
    assert len(multi.cells()) == len(MULTI_ANSWER_REWARDS) * len(multi.seeds)
    # The historical claim's on-demand grid (11 seeds) is gone: the nightly holds it.
    assert "historical" not in deployments
    # The vector claim's grid: the multi grid thinned to vector and its control, at 7 seeds.
    vector = GridConfig(**deployments["vector"]["parameters"]["study"])
    assert (vector.preset, vector.formats) == (MULTI_ANSWER_PRESET, ["free_form"])
    assert vector.rewards == ["correctness", "vector"] and set(vector.rewards) <= set(multi.rewards)
    assert len(vector.cells()) == 2 * len(vector.seeds) == 14
    assert "schedules" not in deployments["vector"]
    # The search claim's grid: correctness alone on the pairs task, at 11 seeds none of which
    # is a seed of the vector grid whose spread sized it.
    search = GridConfig(**deployments["search"]["parameters"]["study"])
    assert (search.preset, search.formats, search.rewards) == (
        MULTI_ANSWER_PRESET, ["free_form"], ["correctness"])
    assert len(search.cells()) == len(search.seeds) == 11
    assert not set(search.seeds) & set(vector.seeds)
    assert "schedules" not in deployments["search"]
    # The claims at the demo's scale: the default preset's two free-form objectives, at seeds
    # no demo trial or confirmation used (docs/results/demo.md: 0-5, 10, 11).
    demo_scale = GridConfig(**deployments["default-preset"]["parameters"]["study"])
    assert (demo_scale.preset, demo_scale.formats) == ("default", ["free_form"])
    assert demo_scale.rewards == nightly.rewards
    assert demo_scale.seeds == list(range(20, 30))
    assert "schedules" not in deployments["default-preset"]
