"""The frame every question-answering graph is built in: the state, with the schemas of a whole run or, when
another graph runs it as a subgraph (`nested`), those of a hand-over (state.graph.HandOver, HandBack); and the
stages every graph opens and ends with."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph

from pagegraph.config import Context
from pagegraph.graphs.edges import ABSTAIN, proceed
from pagegraph.nodes.abstain import abstain
from pagegraph.nodes.followup import rewrite_followup
from pagegraph.nodes.start import start
from pagegraph.services import Services
from pagegraph.state.graph import HandBack, HandOver, InputState, OutputState, RagState


def question_graph(services: Services, *, nested: bool, then: str) -> StateGraph:
    """`start` → `rewrite_followup` → `then`, and `abstain` → the end; the graph adds `then` and what follows."""
    builder = StateGraph(
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
