"""Graphs of one stage, run and cancelled as the server runs them (asynchronously), for the tests of cancellation."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph

from pagegraph.graphs.builder import StageGraph


def one_stage_graph(state: type, stage: Callable[[Any], dict]) -> CompiledStateGraph:
    builder = StageGraph(state)
    builder.add_node("stage", stage)
    builder.add_edge(START, "stage")
    builder.add_edge("stage", END)
    return builder.compile()


def cancelled_after(graph: CompiledStateGraph, seconds: float) -> float:
    """Run `graph` asynchronously, cancel the run after `seconds`, and return how long the cancellation took to
    complete (the run must end cancelled)."""

    async def run_and_cancel() -> float:
        run = asyncio.create_task(graph.ainvoke({}))
        await asyncio.sleep(seconds)
        run.cancel()
        cancelled = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await run
        return time.monotonic() - cancelled

    return asyncio.run(run_and_cancel())
