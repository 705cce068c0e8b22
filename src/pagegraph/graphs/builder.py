"""The frame every question-answering graph is built in: the state, with the schemas of a whole run or, when
another graph runs it as a subgraph (`nested`), those of a hand-over (state.graph.HandOver, HandBack); and the
stages every graph opens and ends with."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

from langchain_core.runnables import Runnable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from pagegraph.config import Context
from pagegraph.graphs.edges import ABSTAIN, proceed
from pagegraph.nodes.abstain import abstain
from pagegraph.nodes.followup import rewrite_followup
from pagegraph.nodes.start import start
from pagegraph.nodes.stoppable import StoppableStage, stage_input_schema
from pagegraph.services import Services
from pagegraph.state.graph import HandBack, HandOver, InputState, OutputState, RagState

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


def question_graph(services: Services, *, nested: bool, then: str) -> StageGraph:
    """`start` → `rewrite_followup` → `then`, and `abstain` → the end; the graph adds `then` and what follows."""
    builder = StageGraph(
        RagState,
        context_schema=Context,
        input_schema=HandOver if nested else InputState,
        output_schema=HandBack if nested else OutputState,
    )
    builder.add_node("start", partial(start, services=services, nested=nested))
    builder.add_node("rewrite_followup", partial(rewrite_followup, services=services))
    builder.add_node(ABSTAIN, abstain)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", *proceed("rewrite_followup", falls_back=False))
    builder.add_edge("rewrite_followup", then)
    builder.add_edge(ABSTAIN, END)
    return builder
