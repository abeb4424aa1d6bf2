"""breadth.models.tiny: loading a policy while another thread loads one."""

from __future__ import annotations

import threading

from breadth.config import ModelConfig
from breadth.models.tiny import build_char_tokenizer, build_tiny_model, load_policy


def test_two_threads_load_policies_at_once_without_breaking_later_loads(tmp_path):
    """A rollout loading its policy while the background MLflow upload loaded another failed
    with "Cannot copy out of meta tensor" (8 of 10 loads), and so did every later load."""
    tokenizer = build_char_tokenizer()
    build_tiny_model(ModelConfig(), tokenizer, seed=0).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    errors: list[str] = []

    def load_a_few() -> None:
        for _ in range(3):
            try:
                load_policy(tmp_path)
            except Exception as error:  # noqa: BLE001 - collected for the assertion
                errors.append(repr(error)[:200])

    threads = [threading.Thread(target=load_a_few) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    model, _ = load_policy(tmp_path)
    assert sum(p.numel() for p in model.parameters()) > 0
