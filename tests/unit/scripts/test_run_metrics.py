"""scripts/tools/run_metrics.py's comparison of two runs' metric dumps, on hand-made dumps."""

from __future__ import annotations

import doctest

from tests.unit.scripts.helpers import load_script

run_metrics = load_script("tools/run_metrics.py")

BEFORE = {"default/rl": {"train/reward": [[1, 0.25], [2, 0.5]], "train/train_runtime": [[2, 9.0]]},
          "default/evaluate-rl": {"eval/pass_at_1": [[0, 0.1]], "transfer/x": [[0, 3.0]]}}


def test_the_docstring_examples_hold():
    assert doctest.testmod(run_metrics).failed == 0


def test_equal_runs_pass_and_timings_are_left_out(capsys):
    after = {"default/rl": {"train/reward": [[1, 0.25], [2, 0.5 + 1e-12]],
                            "train/train_runtime": [[2, 4.0]]},
             "default/evaluate-rl": {"eval/pass_at_1": [[0, 0.1]], "transfer/x": [[0, 3.0]]}}
    assert run_metrics.compare(BEFORE, after, 1e-9)
    assert "3 metric series equal within 1e-09; 0 differ; 0 on one side only" in capsys.readouterr().out
    assert not run_metrics.compare(BEFORE, after, 1e-9, with_timings=True)


def test_a_changed_value_fails_unless_ignored_and_a_new_metric_is_listed(capsys):
    after = {"default/rl": BEFORE["default/rl"],
             "default/evaluate-rl": {"eval/pass_at_1": [[0, 0.1]], "transfer/x": [[0, 2.0]],
                                     "eval/new": [[0, 1.0]]}}
    assert not run_metrics.compare(BEFORE, after, 1e-9)
    out = capsys.readouterr().out
    assert "default/evaluate-rl: transfer/x [0, 3.0] -> [0, 2.0]" in out
    assert "default/evaluate-rl: eval/new (only after)" in out
    assert run_metrics.compare(BEFORE, after, 1e-9, ignore="transfer/")
