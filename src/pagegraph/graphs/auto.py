"""`auto`: answers with `extract` when the run's model is marked small in Settings, else with `rag`; the choice
is the first record of the trace."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from pagegraph.config import Context
from pagegraph.graphs.extract import build_extract_graph
from pagegraph.graphs.rag import build_rag_graph
from pagegraph.nodes.abstain import abstain
from pagegraph.nodes.choose import choose_graph
from pagegraph.nodes.delegate import delegate
from pagegraph.nodes.edges import chosen, proceed
from pagegraph.nodes.followup import rewrite_followup
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.start import start
from pagegraph.services import Services, default_services
from pagegraph.state.graph import InputState, OutputState, RagState


def build_auto_graph(services: Services | None = None, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    services = services or default_services()
    builder = StateGraph(RagState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("start", partial(start, services=services))
    builder.add_node("rewrite_followup", partial(rewrite_followup, services=services))
    builder.add_node("highlight", partial(highlight, services=services, search=True))
    builder.add_node("choose", partial(choose_graph, services=services))
    builder.add_node("rag", partial(delegate, graph=build_rag_graph(services, checkpointer=False)))
    builder.add_node("extract", partial(delegate, graph=build_extract_graph(services, checkpointer=False)))
    builder.add_node("abstain", abstain)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", *proceed("rewrite_followup", falls_back=False))
    builder.add_edge("rewrite_followup", "highlight")
    builder.add_edge("highlight", "choose")
    builder.add_conditional_edges("choose", *chosen(["rag", "extract"]))
    builder.add_edge("rag", END)
    builder.add_edge("extract", END)
    builder.add_edge("abstain", END)
    return builder.compile(checkpointer=checkpointer, name="auto")


graph = build_auto_graph()
