"""`auto`: answers with `extract` when the run's model is marked small in Settings, else with `rag`; the choice
is the first record of the trace."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END
from langgraph.types import Checkpointer

from pagegraph.graphs.builder import CompiledGraph, question_graph
from pagegraph.graphs.edges import chosen
from pagegraph.graphs.extract import build_extract_graph
from pagegraph.graphs.rag import build_rag_graph
from pagegraph.nodes.choose import choose_graph
from pagegraph.nodes.handover import take_back
from pagegraph.nodes.highlight import highlight
from pagegraph.services import Services
from pagegraph.state.graph import AutoState


def build_auto_graph(services: Services, checkpointer: Checkpointer = None, *, nested: bool = False) -> CompiledGraph:
    builder = question_graph(services, AutoState, nested=nested, then="highlight")
    builder.add_node("highlight", partial(highlight, services=services, search=True))
    builder.add_node("choose", partial(choose_graph, services=services))
    builder.add_node("rag", build_rag_graph(services, nested=True))
    builder.add_node("extract", build_extract_graph(services, nested=True))
    builder.add_node("take_back", take_back)
    builder.add_edge("highlight", "choose")
    builder.add_conditional_edges("choose", *chosen(["rag", "extract"]))
    builder.add_edge("rag", "take_back")
    builder.add_edge("extract", "take_back")
    builder.add_edge("take_back", END)
    return builder.compile(checkpointer=checkpointer, name="auto")
