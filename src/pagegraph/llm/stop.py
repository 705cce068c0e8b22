"""Whether the run a model call belongs to has been cancelled. A stage of a graph runs in a worker thread, which a
cancelled run cannot interrupt: the stage's runner (`nodes.stoppable`) sets the run's stop event, and every model
call checks it before it starts (`raise_if_stopped`) and, streamed in such a run (`llm.calls.invoke_model`), between
the tokens of its reply, so that a cancelled, deleted or timed-out run makes no further model calls and closes the one
it is in."""

from __future__ import annotations

import threading
from contextvars import ContextVar

RUN_STOP: ContextVar[threading.Event | None] = ContextVar("pagegraph_run_stop", default=None)


class RunCancelled(BaseException):
    """The run was cancelled while a stage was at work: a BaseException, as asyncio's own cancellation is, so that
    no stage takes it for a failure to fall back from."""


def stop_requested() -> bool:
    event = RUN_STOP.get()
    return event is not None and event.is_set()


def raise_if_stopped(doing: str) -> None:
    if stop_requested():
        raise RunCancelled(f"the run was cancelled before {doing}")
