"""The graphs `pagegraph serve` runs, as langgraph.json names them: each built once, on the index and models every
run of this process shares (`services.default_services`)."""

from __future__ import annotations

from pagegraph import GRAPHS
from pagegraph.graphs.ingest import build_ingest_graph
from pagegraph.graphs.search import build_search_graph
from pagegraph.services import default_services

auto, rag, extract, small_model, pageindex, basic = (
    GRAPHS[name].build(default_services()) for name in ("auto", "rag", "extract", "small_model", "pageindex", "basic")
)
ingest = build_ingest_graph(default_services())
search = build_search_graph(default_services())
