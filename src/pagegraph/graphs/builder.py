"""The state every question-answering graph is built on, with the schemas of a whole run or, when another graph
runs it as a subgraph (`nested`), those of a hand-over (state.graph.HandOver, HandBack)."""

from __future__ import annotations

from langgraph.graph import StateGraph

from pagegraph.config import Context
from pagegraph.state.graph import HandBack, HandOver, InputState, OutputState, RagState


def question_graph(nested: bool) -> StateGraph:
    return StateGraph(
        RagState,
        context_schema=Context,
        input_schema=HandOver if nested else InputState,
        output_schema=HandBack if nested else OutputState,
    )
