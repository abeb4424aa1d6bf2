"""scripts/tools/process_cpu_profile.py: the kinds of processes, and a real sample of a busy child."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
import threading
import time

from tests.unit.scripts.helpers import load_script

profile = load_script("tools/process_cpu_profile.py")

BUSY_LOOP = "import time\nend = time.process_time() + 1.0\nwhile time.process_time() < end: pass"


def test_the_docstring_examples_hold():
    assert doctest.testmod(profile).failed == 0


def test_the_stack_and_its_clients_fall_into_their_kinds():
    kinds = {
        "/r/.venv/bin/weed mini -dir=/h/s3 -s3.port=8333": "SeaweedFS (weed)",
        "/r/.venv/bin/python -m prefect.runner._workspace_supervisor /t/s.json":
            "Prefect flow run (worker's subprocess)",
        "/r/.venv/bin/python /r/.venv/bin/prefect worker start --pool p": "Prefect worker",
        "/r/.venv/bin/python /root/.cache/uv/.tmpX/pip_compileall.py": "install (uv, pip, bytecode)",
        "VLLM::EngineCore": "vLLM server",
        "/r/.venv/bin/python -u -c import sys;exec(eval(sys.stdin.readline()))":
            "pytest (main and xdist workers)",
        "/r/.venv/bin/python /r/.venv/bin/breadth run --set seed=3": "breadth CLI and test CLIs",
        "/r/.venv/bin/python -c print(1)": "other python",
    }
    assert {command: profile.kind_of(command) for command in kinds} == kinds


def test_a_busy_child_is_seen_with_its_cpu_and_the_cores_busy(tmp_path):
    until, out = tmp_path / "done", tmp_path / "profile.json"
    sampler = threading.Thread(target=profile.sample, args=(until, out, 0.2))
    sampler.start()
    child = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
    try:
        child.wait(timeout=60)
        time.sleep(0.3)  # past the child's end: its last sighting is before it
    finally:
        until.touch()
        sampler.join(timeout=30)
    data = json.loads(out.read_text())
    [row] = [r for r in data["processes"] if r["pid"] == child.pid]
    # The sample before it ended saw most of its 1 s of CPU, and none it used before sampling.
    assert 0.4 <= row["cpu_s"] <= 1.5, row
    assert profile.kind_of(row["command"]) == "other python"
    assert data["busy"] and max(share for _, share in data["busy"]) > 0.2
    assert "other python" in "\n".join(profile.report(data, top=3))
