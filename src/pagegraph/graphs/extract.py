"""`extract`: the reader for small models. search → highlight → gate → read (the answer copied from the best
sentences of the top passages, with their neighbours) → read again from whole passages when the first read refused
or its answer is barely in the excerpt it cites → weigh (abstain unless refusal, support and retrieval similarity
together clear `answer_threshold`) → judge → verify. Two or three model calls; failures → basic."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from pagegraph.graphs.basic import add_fallback
from pagegraph.graphs.builder import question_graph
from pagegraph.graphs.edges import proceed, reading
from pagegraph.nodes.gate import gate
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.judge import judge
from pagegraph.nodes.read import read, weigh_answer
from pagegraph.nodes.retrieve import search_question
from pagegraph.nodes.verify import verify
from pagegraph.services import Services, default_services


def build_extract_graph(
    services: Services | None = None, checkpointer: Checkpointer = None, *, nested: bool = False
) -> CompiledStateGraph:
    services = services or default_services()
    builder = question_graph(services, nested=nested, then="search")
    builder.add_node("search", guarded("search", partial(search_question, services=services)))
    builder.add_node("highlight", guarded("highlight", partial(highlight, services=services, search=False)))
    builder.add_node("gate", partial(gate, services=services))
    builder.add_node("read", guarded("read", partial(read, services=services)))
    builder.add_node("weigh", weigh_answer)
    builder.add_node("judge", guarded("judge", partial(judge, services=services)))
    builder.add_node("verify", guarded("verify", partial(verify, services=services)))
    builder.add_conditional_edges("search", *proceed("highlight", abstains=False))
    builder.add_edge("highlight", "gate")
    builder.add_conditional_edges("gate", *proceed("read"))
    builder.add_conditional_edges("read", *reading(again="read", then="weigh"))
    builder.add_conditional_edges("weigh", *proceed("judge", falls_back=False))
    builder.add_conditional_edges("judge", *proceed("verify", abstains=False))
    builder.add_conditional_edges("verify", *proceed(END))
    add_fallback(builder, services)
    return builder.compile(checkpointer=checkpointer, name="extract")


graph = build_extract_graph()
