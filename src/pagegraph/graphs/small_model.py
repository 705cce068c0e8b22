"""`small_model`: for ~1B models that drown in raw chunks. plan_search → search → gate → map_chunk (one call per
chunk, in parallel) → filter_facts → reduce (from the facts only) → judge → verify (citations, confidence against
the facts). 3 + N model calls for N chunks; abstain edges from the gate and the filter; failures → basic."""

from __future__ import annotations

from functools import partial

from langgraph.types import Checkpointer

from pagegraph.graphs.basic import checked_and_compiled
from pagegraph.graphs.builder import CompiledGraph, question_graph
from pagegraph.graphs.edges import chunk_tasks, fan_out, proceed
from pagegraph.nodes.filter_facts import filter_facts
from pagegraph.nodes.gate import gate
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.map_chunk import map_chunk
from pagegraph.nodes.plan_search import plan_search
from pagegraph.nodes.reduce import reduce
from pagegraph.nodes.retrieve import search_keywords
from pagegraph.services import Services
from pagegraph.state.graph import SmallModelState


def build_small_model_graph(
    services: Services, checkpointer: Checkpointer = None, *, nested: bool = False
) -> CompiledGraph:
    builder = question_graph(services, SmallModelState, nested=nested, then="highlight")
    builder.add_node("highlight", guarded("highlight", partial(highlight, services=services, search=True)))
    builder.add_node("plan_search", guarded("plan_search", partial(plan_search, services=services)))
    builder.add_node("search", guarded("search", partial(search_keywords, services=services)))
    builder.add_node("gate", partial(gate, services=services))
    builder.add_node("map_chunk", guarded("map_chunk", partial(map_chunk, services=services)))
    builder.add_node("filter_facts", filter_facts)
    builder.add_node("reduce", guarded("reduce", partial(reduce, services=services)))
    builder.add_edge("highlight", "plan_search")
    builder.add_conditional_edges("plan_search", *proceed("search"))
    builder.add_conditional_edges("search", *proceed("gate", abstains=False))
    builder.add_conditional_edges("gate", *fan_out("map_chunk", chunk_tasks))
    builder.add_edge("map_chunk", "filter_facts")
    builder.add_conditional_edges("filter_facts", *proceed("reduce"))
    builder.add_conditional_edges("reduce", *proceed("judge", abstains=False))
    return checked_and_compiled(builder, services, "small_model", checkpointer)
