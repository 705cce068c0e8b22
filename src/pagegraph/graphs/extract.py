"""`extract`: the reader for small models. search → highlight → gate → read (the answer copied from the best
sentences of the top passages, with their neighbours) → read again from whole passages when the first read refused
or its answer is barely in the excerpt it cites → weigh (abstain unless refusal, support and retrieval similarity
together clear `answer_threshold`) → judge → verify. Two or three model calls; failures → basic.

With `picking.use`, candidates (the table cells, values and names of the top passages that could answer, without
a model) → pick (the model chooses among them, or none: one short call) → verify come first; the run goes on to
read where there are none, or the pick is not sure, or none of them answers a question that may be answered in
words."""

from __future__ import annotations

from functools import partial

from langgraph.types import Checkpointer

from pagegraph.graphs.basic import checked_and_compiled
from pagegraph.graphs.builder import CompiledGraph, question_graph
from pagegraph.graphs.edges import offered, picked, proceed, reading
from pagegraph.nodes.candidates import offer_candidates
from pagegraph.nodes.gate import gate
from pagegraph.nodes.guard import guarded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.pick import pick
from pagegraph.nodes.read import read, weigh_answer
from pagegraph.nodes.retrieve import search_question
from pagegraph.services import Services
from pagegraph.state.graph import ExtractState


def build_extract_graph(
    services: Services, checkpointer: Checkpointer = None, *, nested: bool = False
) -> CompiledGraph:
    builder = question_graph(services, ExtractState, nested=nested, then="search")
    builder.add_node("search", guarded("search", partial(search_question, services=services)))
    builder.add_node("highlight", guarded("highlight", partial(highlight, services=services, search=False)))
    builder.add_node("gate", partial(gate, services=services))
    builder.add_node("candidates", guarded("candidates", partial(offer_candidates, services=services)))
    builder.add_node("pick", guarded("pick", partial(pick, services=services)))
    builder.add_node("read", guarded("read", partial(read, services=services)))
    builder.add_node("weigh", weigh_answer)
    builder.add_conditional_edges("search", *proceed("highlight", abstains=False))
    builder.add_edge("highlight", "gate")
    builder.add_conditional_edges("gate", *proceed("candidates"))
    builder.add_conditional_edges("candidates", *offered("pick", otherwise="read"))
    builder.add_conditional_edges("pick", *picked("verify", otherwise="read"))
    builder.add_conditional_edges("read", *reading(again="read", then="weigh"))
    builder.add_conditional_edges("weigh", *proceed("judge", falls_back=False))
    return checked_and_compiled(builder, services, "extract", checkpointer)
