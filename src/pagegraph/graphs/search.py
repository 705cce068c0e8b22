"""`search`: what a question finds, with no model call: the hybrid search of `basic` over the requested (or all
readable) documents, then the sentences of the best passages most likely to answer it. `pagegraph search` runs it,
and the server serves it beside the question-answering graphs (the same access rules narrow it). A thread of
searches keeps the last one's query and findings; each search runs in a fresh state."""

from __future__ import annotations

from functools import partial

from langgraph.graph import END, START
from langgraph.types import Checkpointer

from pagegraph.config import Context
from pagegraph.graphs.builder import CompiledGraph, StageGraph, threaded
from pagegraph.nodes.highlight import highlight
from pagegraph.nodes.retrieve import search_question
from pagegraph.nodes.start import start_search
from pagegraph.services import Services
from pagegraph.state.graph import FindOutput, FindState, SearchInput, SearchOutput, SearchThread


def build_search_graph(services: Services, checkpointer: Checkpointer = None) -> CompiledGraph:
    builder = StageGraph(FindState, context_schema=Context, input_schema=SearchInput, output_schema=FindOutput)
    builder.add_node("start", partial(start_search, services=services))
    builder.add_node("search", partial(search_question, services=services))
    builder.add_node("highlight", partial(highlight, services=services, search=False))
    builder.add_edge(START, "start")
    builder.add_edge("start", "search")
    builder.add_edge("search", "highlight")
    builder.add_edge("highlight", END)
    run = builder.compile(name="search")
    return threaded(run, checkpointer, thread=SearchThread, input_schema=SearchInput, output_schema=SearchOutput)
