"""`basic`: plain RAG. Hybrid search on the question → evidence gate → one answer call → judge → verify; abstain
edges. Also what the other graphs fall back to when one of their stages fails (`add_fallback`)."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END
from langgraph.types import Checkpointer

from pagegraph.graphs.builder import CompiledGraph, StageGraph, question_graph
from pagegraph.graphs.edges import FALL_BACK, proceed
from pagegraph.nodes.answer import answer
from pagegraph.nodes.gate import gate
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.handover import hand_over, take_back
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.judge import judge
from pagegraph.nodes.retrieve import search_question
from pagegraph.nodes.verify import verify
from pagegraph.services import Services
from pagegraph.state.graph import BasicState


def build_basic_graph(services: Services, checkpointer: Checkpointer = None, *, nested: bool = False) -> CompiledGraph:
    builder = question_graph(services, BasicState, nested=nested, then="search")
    builder.add_node("highlight", partial(highlight, services=services, search=False))
    builder.add_node("search", partial(search_question, services=services))
    builder.add_node("gate", partial(gate, services=services))
    builder.add_node("answer", partial(answer, services=services))
    builder.add_node("judge", partial(judge, services=services))
    builder.add_node("verify", partial(verify, services=services))
    builder.add_edge("search", "highlight")
    builder.add_edge("highlight", "gate")
    builder.add_conditional_edges("gate", *proceed("answer", falls_back=False))
    builder.add_edge("answer", "judge")
    builder.add_edge("judge", "verify")
    builder.add_conditional_edges("verify", *proceed(END, falls_back=False))
    return builder.compile(checkpointer=checkpointer, name="basic")


def checked_and_compiled(
    builder: StageGraph, services: Services, name: str, checkpointer: Checkpointer
) -> CompiledGraph:
    """The ending the answering graphs share (the graph wires its answer to `judge`): `judge` → `verify` → the end,
    each guarded, a failed stage's fallback to this graph (`add_fallback`), compiled as `name`."""
    builder.add_node("judge", guarded("judge", partial(judge, services=services)))
    builder.add_node("verify", guarded("verify", partial(verify, services=services)))
    builder.add_conditional_edges("judge", *proceed("verify", abstains=False))
    builder.add_conditional_edges("verify", *proceed(END))
    add_fallback(builder, services)
    return builder.compile(checkpointer=checkpointer, name=name)


def add_fallback(builder: StageGraph, services: Services) -> None:
    """Where a failed stage leads (graphs.edges): `hand_over` → this graph as a subgraph → `take_back` → the end."""
    builder.add_node(FALL_BACK, hand_over)
    builder.add_node("basic", build_basic_graph(services, nested=True))
    builder.add_node("take_back", take_back)
    builder.add_edge(FALL_BACK, "basic")
    builder.add_edge("basic", "take_back")
    builder.add_edge("take_back", END)
