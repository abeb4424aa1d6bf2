"""The suite's CPU accounting: `tests/conftest.py` logs each module's CPU (its own and its
waited-for children's) under BREADTH_TEST_CPU_LOG, and scripts/tools/test_cpu_report.py ranks it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.unit.scripts.helpers import ROOT, load_script

cpu_report = load_script("tools/test_cpu_report.py")

BURNER = r'''
import subprocess, sys

def test_a_child_burns_cpu():
    # 0.5 s of CPU in a child process, none to speak of in pytest's own: the child spins on its
    # own CPU clock, not a count of steps, which a fast machine got through in under 0.2 s.
    burn = "import time\nwhile time.process_time() < 0.5:\n    pass"
    subprocess.run([sys.executable, "-c", burn], check=True)

def test_nothing():
    assert True
'''


def _pytest(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """tmp_path's test_burner.py run by a pytest with this suite's conftest as a plugin."""
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "tests.conftest", "--rootdir", str(tmp_path),
                           str(tmp_path / "test_burner.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_each_module_logs_its_own_and_its_childrens_cpu(tmp_path):
    (tmp_path / "test_burner.py").write_text(BURNER)
    log = tmp_path / "cpu.jsonl"
    env = {**os.environ, "BREADTH_TEST_CPU_LOG": str(log)}
    done = _pytest(tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = [json.loads(line) for line in log.read_text().splitlines()]
    assert row["module"].endswith("test_burner.py")
    assert row["children_cpu_s"] >= 0.45  # the child's loop
    assert row["cpu_s"] < row["children_cpu_s"]
    assert row["wall_s"] >= row["children_cpu_s"] * 0.5


def test_without_the_variable_nothing_is_logged(tmp_path):
    (tmp_path / "test_burner.py").write_text("def test_nothing():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != "BREADTH_TEST_CPU_LOG"}
    done = _pytest(tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list(tmp_path.glob("*.jsonl")) == []


def test_the_report_ranks_modules_by_all_their_cpu():
    lines = [json.dumps({"module": "a", "cpu_s": 1.0, "children_cpu_s": 0.0, "wall_s": 5.0}),
             json.dumps({"module": "b", "cpu_s": 0.5, "children_cpu_s": 2.5, "wall_s": 9.0}),
             json.dumps({"module": "a", "cpu_s": 0.0, "children_cpu_s": 1.0, "wall_s": 1.0}), ""]
    costs = cpu_report.module_costs(lines)
    assert costs["a"] == {"cpu_s": 1.0, "children_cpu_s": 1.0, "wall_s": 6.0}
    text = cpu_report.report(costs, top=5)
    # b: 3.0 of 5.0 CPU s (60%), then a: 2.0 (40%).
    assert text[1].split() == ["3.0", "0.5", "2.5", "9.0", "60.0%", "b"]
    assert text[2].split() == ["2.0", "1.0", "1.0", "6.0", "40.0%", "a"]
    assert text[-1].startswith("     5.0 CPU s counted in 2 modules (15 s of wall")
    assert len(cpu_report.report(costs, top=1)) == 3  # header, b, total
