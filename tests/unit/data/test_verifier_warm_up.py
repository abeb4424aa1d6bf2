"""The verifiers' heavy imports happen when a trainer asks, not at the first reward call."""

from __future__ import annotations

import subprocess
import sys


def test_warm_up_imports_math_verify_and_sympy():
    code = (
        "import sys; from breadth.data import verifiers; "
        "before = 'math_verify' in sys.modules; verifiers.warm_up_symbolic(); "
        "print(before, 'math_verify' in sys.modules, 'sympy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]


def test_warm_up_off_the_main_thread_leaves_a_helper_ready():
    code = (
        "import threading; from breadth.data import symbolic, verifiers; "
        "t = threading.Thread(target=verifiers.warm_up_symbolic); t.start(); t.join(); "
        "print(len(symbolic._HELPERS.idle))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 1
