"""Cache keys: content-addressed, stable for the same code and inputs, different otherwise."""

from __future__ import annotations

import subprocess

from tasks.common import code_version, content_key


def test_content_key_is_deterministic_and_sensitive_to_every_part():
    key = content_key("sft", "base-1", "data-1", "cfg-1")
    assert key == content_key("sft", "base-1", "data-1", "cfg-1")
    assert key.startswith("sft-")
    others = {content_key("sft", "base-2", "data-1", "cfg-1"),
              content_key("sft", "base-1", "data-2", "cfg-1"),
              content_key("rl", "base-1", "data-1", "cfg-1")}  # fmt: skip
    assert key not in others and len(others) == 3


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def _version_after(repo, path: str, text: str, commit: bool = False) -> str:
    (repo / path).write_text(text)
    if commit:
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"change {path}")
    code_version.cache_clear()
    return code_version(repo)


def test_code_version_follows_pipeline_code_and_ignores_docs_and_tests(tmp_path):
    for folder in ("src", "tasks", "flows", "docs", "tests"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.name", "t")
    _git(tmp_path, "config", "user.email", "t@t")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "start")
    try:
        start = _version_after(tmp_path, "docs/a.py", "x = 1\n")
        assert _version_after(tmp_path, "docs/a.py", "x = 2\n") == start
        assert _version_after(tmp_path, "tests/a.py", "x = 2\n", commit=True) == start
        edited = _version_after(tmp_path, "src/a.py", "x = 2\n")  # uncommitted
        committed = _version_after(tmp_path, "flows/a.py", "x = 2\n", commit=True)
        assert len({start, edited, committed}) == 3
    finally:
        code_version.cache_clear()


def test_code_version_runs_git_once_per_process(monkeypatch):
    code_version.cache_clear()
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or real_run(*a, **k))
    first = code_version()
    assert code_version() == first and content_key("x") == content_key("x")
    assert len(calls) == 2  # rev-parse and diff, on first use only
