"""breadth.tracking.mlflow_sdk: what logging a model prints."""

from __future__ import annotations

import logging

from breadth.tracking.mlflow_sdk import _hub_card_lookup_of_a_folder


def _record(message: str) -> logging.LogRecord:
    return logging.LogRecord("mlflow.transformers", logging.WARNING, __file__, 1, message, (), None)


def test_only_the_hub_lookups_of_a_saved_folder_are_silenced():
    """Every logged model printed two warnings about a hub lookup of its local folder's path."""
    assert not _hub_card_lookup_of_a_folder(_record(
        "The model card could not be retrieved from the hub due to Repo id must be ..."))
    assert not _hub_card_lookup_of_a_folder(_record(
        "Unable to find license information for this model. Please verify ..."))
    assert _hub_card_lookup_of_a_folder(_record("Failed to log the model: disk full"))
