"""Cache keys: content-addressed, stable for the same code and inputs, different otherwise."""

from __future__ import annotations

from tasks.common import code_version, content_key


def test_content_key_is_deterministic_and_sensitive_to_every_part():
    key = content_key("sft", "base-1", "data-1", "cfg-1")
    assert key == content_key("sft", "base-1", "data-1", "cfg-1")
    assert key.startswith("sft-")
    others = {content_key("sft", "base-2", "data-1", "cfg-1"),
              content_key("sft", "base-1", "data-2", "cfg-1"),
              content_key("rl", "base-1", "data-1", "cfg-1")}  # fmt: skip
    assert key not in others and len(others) == 3


def test_code_version_is_stable_between_calls():
    assert code_version() == code_version()
    assert len(code_version()) >= 5
