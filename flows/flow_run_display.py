"""A pipeline flow run as the Prefect UI shows it: named and tagged like its MLflow parent run
(the name and tags come from `breadth.tracking.names`), and with breadth's own log lines in its
log. What those lines say is `breadth.tracking.run_log`'s; this module only carries the
`breadth.*` loggers into Prefect's run log."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from prefect import runtime
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext, TaskRunContext
from prefect.logging.handlers import APILogHandler

from breadth.tracking.run_log import log


def label_flow_run(name: str | None, tags: list[str]) -> None:
    """Rename this flow run (None: keep its name) and add `tags` to the ones it has now (read
    from the server: the run's context holds only those it was created with).

    Done from inside the run, so a run started from the UI, by a deployment or by `breadth run`
    is labelled the same way; Prefect's random names (`rigorous-rabbit`) told nothing. A failure
    is only logged: a label is never a reason to fail a run."""
    flow_run_id = runtime.flow_run.id
    if not flow_run_id:
        return
    try:
        with get_client(sync_client=True) as client:
            current = client.read_flow_run(flow_run_id).tags
            client.update_flow_run(flow_run_id, name=name,
                                   tags=list(dict.fromkeys([*current, *tags])))
    except Exception as error:  # noqa: BLE001
        log.warning("could not name Prefect flow run %s %r: %s", flow_run_id, name, error)


class _ThisFlowRun(logging.Filter):
    """Sends a record made outside any run context (a background upload thread, which does not
    inherit Prefect's context) to this flow run, instead of Prefect warning that it has none."""

    def __init__(self, flow_run_id: str):
        super().__init__()
        self.flow_run_id = flow_run_id

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "flow_run_id", None) is None and FlowRunContext.get() is None \
                and TaskRunContext.get() is None:
            record.flow_run_id = self.flow_run_id
        return True


@contextmanager
def breadth_logs_in_run_log() -> Iterator[None]:
    """While the flow runs, `breadth.*` log lines at INFO and above go to its Prefect log (and,
    through the root logger, to the console of `breadth run`).

    Why here and not PREFECT_LOGGING_EXTRA_LOGGERS=breadth: that setting attaches Prefect's API
    handler only when set before `import prefect` in the run's process (the worker's job env,
    the user's shell), and leaves the logger at the root's WARNING, so the INFO lines (the
    config summary, cache hits and misses, stage headlines) never reach it. Inside the flow it
    works the same in-process and on a worker. With that setting also on, its handler is used
    and none is added."""
    logger = logging.getLogger("breadth")
    flow_run_id = runtime.flow_run.id
    had_level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    handler = None
    if flow_run_id and not any(isinstance(h, APILogHandler) for h in logger.handlers):
        handler = APILogHandler()
        handler.addFilter(_ThisFlowRun(flow_run_id))
        logger.addHandler(handler)
    try:
        yield
    finally:
        if handler is not None:
            logger.removeHandler(handler)
        logger.setLevel(had_level)
