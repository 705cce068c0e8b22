"""The frame every question-answering graph is built in: a run of the graph, in a state of its own (RagState,
ExtractState, ...) with the schemas of a run on a thread or, when another graph runs it as a subgraph (`nested`),
those of a hand-over (state.graph.HandOver, HandBack); the stages every run opens and ends with; and the thread
graph a caller runs, which keeps the chat between runs and runs the graph as its subgraph, so that each run starts
from a fresh state and nothing of an earlier run's work is read again."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from pagegraph.config import Context
from pagegraph.graphs.edges import ABSTAIN, proceed
from pagegraph.nodes.abstain import abstain
from pagegraph.nodes.followup import rewrite_followup
from pagegraph.nodes.start import start
from pagegraph.nodes.stoppable import StoppableStage, stage_input_schema
from pagegraph.services import Services
from pagegraph.state.graph import (
    HandBack,
    HandOver,
    InputState,
    OutputState,
    RunInput,
    RunOutput,
    RunState,
    ThreadState,
)

CompiledGraph = CompiledStateGraph[Any, Context, Any, Any]  # a compiled graph of this package's, run with a Context


class StageGraph(StateGraph[Any, Context, Any, Any]):
    """LangGraph's StateGraph whose stages given as functions stop with their run (`nodes.stoppable`); every
    graph here is built on it."""

    def add_node(self, node: Any, action: Any = None, **kwargs: Any) -> StageGraph:
        if isinstance(node, str) and callable(action) and not isinstance(action, Runnable):
            if not inspect.iscoroutinefunction(action):
                if (schema := stage_input_schema(action)) is not None:
                    kwargs.setdefault("input_schema", schema)
                action = StoppableStage(action, node)
        return super().add_node(node, action, **kwargs)


def question_graph(services: Services, state: type[RunState], *, nested: bool, then: str) -> StageGraph:
    """A run in `state`: `start` → `rewrite_followup` → `then`, and `abstain` → the end; the graph adds `then` and
    what follows."""
    builder = StageGraph(
        state,
        context_schema=Context,
        input_schema=HandOver if nested else RunInput,
        output_schema=HandBack if nested else RunOutput,
    )
    builder.add_node("start", partial(start, services=services))
    builder.add_node("rewrite_followup", partial(rewrite_followup, services=services))
    builder.add_node(ABSTAIN, abstain)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", *proceed("rewrite_followup", falls_back=False))
    builder.add_edge("rewrite_followup", then)
    builder.add_edge(ABSTAIN, END)
    return builder


def threaded(
    run: CompiledGraph,
    checkpointer: Checkpointer = None,
    *,
    thread: type[Any] = ThreadState,
    input_schema: type[Any] = InputState,
    output_schema: type[Any] = OutputState,
) -> CompiledGraph:
    """The graph a caller runs, named as `run`: what a thread keeps between runs (`thread`; by default the question,
    the chat, the last answer and the turns) and `run` as its one stage, a subgraph whose state LangGraph starts
    afresh each time."""
    name = run.get_name()
    builder = StateGraph(thread, context_schema=Context, input_schema=input_schema, output_schema=output_schema)
    builder.add_node(name, run)
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder.compile(checkpointer=checkpointer, name=name)
