"""A pipeline flow run's label and log in Prefect: its name and tags set from inside the run,
and breadth's log lines attached to its log for the length of the run. The real thing, in-process
and on a worker: tests/integration/test_pipeline_on_stack.py, test_deployments_on_stack.py."""

from __future__ import annotations

import logging
import threading
from types import SimpleNamespace

import breadth_flows.flow_run_display
from breadth_flows.flow_run_display import _ThisFlowRun, breadth_logs_in_run_log, label_flow_run
from prefect.logging.handlers import APILogHandler

RUN_ID = "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


class _Client:
    def __init__(self, tags):
        self.tags, self.updates = tags, []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read_flow_run(self, flow_run_id):
        return SimpleNamespace(tags=list(self.tags))

    def update_flow_run(self, flow_run_id, name=None, tags=None):
        self.updates.append((flow_run_id, name, tags))
        self.tags = tags


def _in_a_run(monkeypatch, flow_run_id=RUN_ID):
    monkeypatch.setattr(breadth_flows.flow_run_display, "runtime",
                        SimpleNamespace(flow_run=SimpleNamespace(id=flow_run_id, tags=[])))


def test_a_relabel_adds_to_the_tags_the_run_has_now(monkeypatch):
    """The `·cached` relabel at the end replaced the tags set at the start with its one tag:
    the run's context holds only the tags it was created with."""
    _in_a_run(monkeypatch)
    client = _Client(["breadth", "adhoc"])
    monkeypatch.setattr(breadth_flows.flow_run_display, "get_client", lambda sync_client: client)
    label_flow_run("default·1a2b3c4d", ["preset:default", "seed:0"])
    label_flow_run("default·1a2b3c4d·cached", ["cached"])
    assert client.updates[-1] == (RUN_ID, "default·1a2b3c4d·cached",
                                  ["breadth", "adhoc", "preset:default", "seed:0", "cached"])


def test_a_label_that_cannot_be_set_is_logged_not_raised(monkeypatch, caplog):
    _in_a_run(monkeypatch)

    def down(sync_client):
        raise ConnectionError("Prefect is down")

    monkeypatch.setattr(breadth_flows.flow_run_display, "get_client", down)
    with caplog.at_level(logging.WARNING, logger="breadth.run"):
        label_flow_run("x", ["seed:0"])
    assert "could not name Prefect flow run" in caplog.text and "Prefect is down" in caplog.text


def test_breadths_logger_reaches_the_run_log_at_info_only_during_the_run(monkeypatch):
    _in_a_run(monkeypatch)
    logger = logging.getLogger("breadth")
    level = logger.level
    with breadth_logs_in_run_log():
        handlers = [h for h in logger.handlers if isinstance(h, APILogHandler)]
        assert len(handlers) == 1
        assert logging.getLogger("breadth.run").isEnabledFor(logging.INFO)
    assert not any(isinstance(h, APILogHandler) for h in logger.handlers)
    assert logger.level == level


def test_a_line_from_a_thread_without_prefects_context_goes_to_this_run():
    """A background upload thread does not inherit Prefect's context: Prefect warned that the
    line had no flow run and dropped it."""
    record = logging.LogRecord("breadth.uploads", logging.WARNING, __file__, 1, "retrying", (), None)
    thread = threading.Thread(target=_ThisFlowRun(RUN_ID).filter, args=(record,))
    thread.start()
    thread.join()
    assert record.flow_run_id == RUN_ID
