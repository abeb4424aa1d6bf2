"""The benchmarks' side-by-side timer: its meters and the process-tree CPU counter."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from side_by_side import compare, process_tree_cpu


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_process_tree_cpu_counts_a_busy_grandchild():
    # A shell whose child spins for ~0.6 s of CPU: the shell itself uses almost none.
    spin = f"{sys.executable} -c \"import time; end = time.process_time() + 0.6\nwhile time.process_time() < end: pass\nimport time; time.sleep(5)\""
    shell = subprocess.Popen(["/bin/sh", "-c", f"{spin}; true"])  # "; true": sh stays the parent
    try:
        deadline = time.monotonic() + 20
        while process_tree_cpu(shell.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert 0.5 <= process_tree_cpu(shell.pid) < 5
    finally:
        shell.kill()
        subprocess.run(["pkill", "-P", str(shell.pid)], check=False)
        shell.wait()


def test_process_tree_cpu_of_a_missing_process_is_zero():
    assert process_tree_cpu(2**22 + 7) == 0.0


def test_meters_record_each_rounds_increase_per_arm():
    counter = {"value": 0.0}

    def arm(step: float):
        def run() -> None:
            counter["value"] += step

        return run

    result = compare(("a", arm(1.0)), ("b", arm(3.0)), pairs=3,
                     meters={"fake meter": lambda: counter["value"]})
    assert result.metered["fake meter"] == {"a": [1.0] * 3, "b": [3.0] * 3}
    assert "fake meter during b: min 3.000s" in result.report()


def test_fewer_than_three_pairs_are_refused():
    with pytest.raises(ValueError, match="pairs must be >= 3"):
        compare(("a", lambda: None), ("b", lambda: None), pairs=2)


def test_median_interval_uses_the_order_statistics_with_95_percent_coverage():
    from side_by_side import median_interval

    values = [float(v) for v in range(16, 0, -1)]  # unsorted on purpose
    # n = 16: (x_4, x_13) covers 1 - 2 * 697 / 65536 = 0.979; (x_5, x_12) only 0.923.
    assert median_interval(values) == (4.0, 13.0)
    assert median_interval(values[:6]) == (11.0, 16.0)
    assert median_interval(values[:5]) is None


def test_the_report_gives_the_median_ratio_interval_only_from_six_pairs():
    few = compare(("a", lambda: None), ("b", lambda: None), pairs=3, warm_up=False)
    assert "no 95% CI with fewer than 6 pairs" in few.report()
    enough = compare(("a", lambda: None), ("b", lambda: None), pairs=6, warm_up=False)
    assert "ratio median, 95% CI: [" in enough.report()


def test_self_timed_arms_record_what_they_return_and_the_ratio_is_b_over_a():
    result = compare(("a", lambda: 1.0), ("b", lambda: 2.0), pairs=3, self_timed=True)
    assert result.wall == {"a": [1.0] * 3, "b": [2.0] * 3}
    assert result.ratios() == [2.0] * 3
    assert result.median_ratio() == 2.0
    assert "ratio b / a: min 2.000  median 2.000  max 2.000" in result.report()


def test_the_ratio_of_wall_times_is_b_over_a():
    # B sleeps 30x longer than A (a sleep never ends early): B / A stays above 1 under load.
    result = compare(("a", lambda: time.sleep(0.001)), ("b", lambda: time.sleep(0.03)), pairs=3)
    assert result.median_ratio() > 1


def test_each_arm_warms_up_once_then_the_arms_alternate():
    calls: list[str] = []
    compare(("a", lambda: calls.append("a")), ("b", lambda: calls.append("b")), pairs=4)
    assert calls == ["a", "b"] + ["a", "b"] * 4  # warm-up first, untimed, then A B A B ...


def test_without_warm_up_each_arm_runs_once_per_pair():
    calls: list[str] = []
    result = compare(("a", lambda: calls.append("a")), ("b", lambda: calls.append("b")),
                     pairs=3, warm_up=False)
    assert calls == ["a", "b"] * 3
    assert "3 pairs from cold" in result.report()
