"""scripts/tools/cpu_of.py, run as a command (it makes its own process a subreaper, which a
test process must not become): a daemon the command started and never waited for is counted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "tools" / "cpu_of.py"

# Starts a busy child in a session of its own (as the stack starts its servers) and exits at
# once without waiting for it: the child burns 1 CPU s after its parent is gone.
ORPHANING = (
    "import subprocess, sys\n"
    "subprocess.Popen([sys.executable, '-c', 'import time\\nend = time.process_time() + 1.0\\n"
    "while time.process_time() < end: pass'], start_new_session=True)\n"
)


def test_an_orphaned_daemons_cpu_is_counted(tmp_path):
    out = tmp_path / "cpu.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--linger", "60",
                           "--", sys.executable, "-c", ORPHANING],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["exit"] == 0 and result["still_running"] == []
    # The daemon's second, not only its parent's start-up, which alone is well under it.
    assert result["cpu_s"] >= 1.0, result
    assert "cpu_of: exit 0" in done.stderr


def test_the_commands_exit_code_is_passed_on(tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), "--", sys.executable, "-c",
                           "raise SystemExit(3)"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 3 and "cpu_of: exit 3" in done.stderr
