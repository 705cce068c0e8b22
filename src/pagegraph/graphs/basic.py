"""`basic`: plain RAG. Hybrid search on the question → evidence gate → one answer call → verify; abstain edges.
Also what the `rag` graph falls back to when one of its stages fails."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from pagegraph.config import Context
from pagegraph.nodes.abstain import abstain
from pagegraph.nodes.answer import answer
from pagegraph.nodes.edges import proceed
from pagegraph.nodes.followup import rewrite_followup
from pagegraph.nodes.gate import gate
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.retrieve import search_question
from pagegraph.nodes.start import start
from pagegraph.nodes.verify import verify
from pagegraph.services import Services, default_services
from pagegraph.state.graph import InputState, OutputState, RagState


def build_basic_graph(services: Services | None = None, checkpointer: Checkpointer = None) -> CompiledStateGraph:
    services = services or default_services()
    builder = StateGraph(RagState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    builder.add_node("start", partial(start, services=services))
    builder.add_node("rewrite_followup", partial(rewrite_followup, services=services))
    builder.add_node("highlight", partial(highlight, services=services, search=False))
    builder.add_node("search", partial(search_question, services=services))
    builder.add_node("gate", gate)
    builder.add_node("answer", partial(answer, services=services))
    builder.add_node("verify", verify)
    builder.add_node("abstain", abstain)
    builder.add_edge(START, "start")
    builder.add_conditional_edges("start", *proceed("rewrite_followup", falls_back=False))
    builder.add_edge("rewrite_followup", "search")
    builder.add_edge("search", "highlight")
    builder.add_edge("highlight", "gate")
    builder.add_conditional_edges("gate", *proceed("answer", falls_back=False))
    builder.add_edge("answer", "verify")
    builder.add_conditional_edges("verify", *proceed(END, falls_back=False))
    builder.add_edge("abstain", END)
    return builder.compile(checkpointer=checkpointer, name="basic")


graph = build_basic_graph()
