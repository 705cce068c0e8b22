"""A graph stage that stops when its run is cancelled. The stages are plain functions, which LangGraph runs in a
worker thread when the graph runs asynchronously (the server): cancelling the run (the API's cancel, a deleted
thread, a closed client, a timeout) ends the run's task but not that thread, which went on calling the model. Run
as a `StoppableStage`, the stage's thread holds a stop event (`llm.stop.RUN_STOP`) that the cancellation sets: the
model calls it would still make are refused (`RunCancelled`), and the cancellation completes only once the thread
has returned, so that whatever counts the run (a user's run slots) counts it until its work has really stopped.
Called synchronously (`graph.invoke`, the command line), the stage runs as it is."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from contextvars import copy_context
from typing import Any, get_type_hints

from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.runtime import get_runtime
from typing_extensions import is_typeddict

from pagegraph.llm.stop import RUN_STOP


class StoppableStage(Runnable):
    def __init__(self, stage: Callable[..., Any], name: str) -> None:
        self.stage = stage
        self.name = name
        self.takes_runtime = "runtime" in inspect.signature(stage).parameters

    def _run(self, state: Any) -> Any:
        return self.stage(state, get_runtime()) if self.takes_runtime else self.stage(state)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._run(input)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        stop = threading.Event()
        context = copy_context()
        context.run(RUN_STOP.set, stop)
        work = asyncio.get_running_loop().run_in_executor(None, context.run, self._run, input)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            await asyncio.wait([work])
            if not work.cancelled():
                work.exception()  # RunCancelled, most likely: the run is cancelled already
            raise


def stage_input_schema(stage: Callable[..., Any]) -> type | None:
    """The input schema LangGraph reads from a stage function's first parameter (a TypedDict, as a `Send` target's
    task), which a `StoppableStage` hides from it; None for any other stage (it then reads the graph's state)."""
    if not inspect.isfunction(stage):
        return None
    try:
        hints = get_type_hints(stage)
        first = next(iter(inspect.signature(stage).parameters))
    except (NameError, TypeError, StopIteration):
        return None
    hint = hints.get(first)
    return hint if isinstance(hint, type) and is_typeddict(hint) else None
