"""pagegraph: document question answering with page-accurate citations."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pagegraph.version import __version__

if TYPE_CHECKING:
    from langgraph.types import Checkpointer

    from pagegraph.graphs.builder import CompiledGraph
    from pagegraph.services import Services
    from pagegraph.state.filters import RetrievalFilter
    from pagegraph.tools.retriever import PagegraphRetriever

__all__ = ["GRAPHS", "GRAPH_NAMES", "GraphSpec", "__version__", "as_retriever", "build_graph"]


@dataclass(frozen=True)
class GraphSpec:
    """One question-answering graph: its name (as served in langgraph.json, chosen with `--graph`), where its
    builder lives, what it does in a line (the CLI's help), and the stage whose output eval's reader-ceiling mode
    (`eval.gold`) replaces with a row's gold pages (None: the graph answers with another graph it picks)."""

    name: str
    module: str
    builder: str
    summary: str
    retrieval_stage: str | None

    def build(self, services: Services | None = None, checkpointer: Checkpointer = None) -> CompiledGraph:
        """The compiled graph a caller runs, on `services` (default: the ones every graph of this process shares):
        a chat thread that runs the graph as its subgraph, each run in a fresh state (`graphs.builder.threaded`)."""
        from pagegraph.graphs.builder import threaded

        return threaded(self.build_run(services), checkpointer)

    def build_run(self, services: Services | None = None, checkpointer: Checkpointer = None) -> CompiledGraph:
        """One run of the graph, in its own state, without the thread around it (eval's reader ceiling sets that
        state as if the run's retrieval stage had returned the gold pages)."""
        from pagegraph.services import default_services

        return getattr(importlib.import_module(self.module), self.builder)(services or default_services(), checkpointer)


# The registry: build_graph, the CLI's choices and help, eval, and the web page read it; tests check that
# langgraph.json serves the same graphs.
GRAPHS: dict[str, GraphSpec] = {
    spec.name: spec
    for spec in (
        GraphSpec(
            "auto",
            "pagegraph.graphs.auto",
            "build_auto_graph",
            "extract for models marked small (the local ones), else rag",
            None,
        ),
        GraphSpec("rag", "pagegraph.graphs.rag", "build_rag_graph", "router, planner, hybrid retrieval", "retrieve"),
        GraphSpec(
            "extract",
            "pagegraph.graphs.extract",
            "build_extract_graph",
            "the answer copied from the best sentences, checked against them, whole passages read when it falls short",
            "search",
        ),
        GraphSpec(
            "small_model",
            "pagegraph.graphs.small_model",
            "build_small_model_graph",
            "one chunk per model call, answer from extracted facts",
            "search",
        ),
        GraphSpec(
            "pageindex",
            "pagegraph.graphs.pageindex",
            "build_pageindex_graph",
            "the model picks sections from each file's tree of titles and summaries",
            "collect",
        ),
        GraphSpec("basic", "pagegraph.graphs.basic", "build_basic_graph", "plain RAG", "search"),
    )
}
GRAPH_NAMES: tuple[str, ...] = tuple(GRAPHS)


def build_graph(
    name: str = "rag", *, services: Services | None = None, checkpointer: Checkpointer = None
) -> CompiledGraph:
    """The compiled question-answering graph `name` (auto picks extract for models marked small, else rag).
    Invoke it with {"question": ...} and, optionally,
    context=pagegraph.config.Context(...); pass services=Services(chat_model=...) to use a model object of yours."""
    if name not in GRAPHS:
        raise ValueError(f"unknown graph {name!r}: choose from {', '.join(GRAPH_NAMES)}")
    return GRAPHS[name].build(services, checkpointer)


def as_retriever(
    index: str | None = None,
    *,
    filters: RetrievalFilter | dict | None = None,
    k: int = 5,
    services: Services | None = None,
) -> PagegraphRetriever:
    """pagegraph's search as a LangChain retriever (`pagegraph.tools.retriever.as_retriever`): the `k` best passages
    of the index at `index` (default: $PAGEGRAPH_INDEX) under `filters`, each a Document whose metadata carries its
    source, section, pages, citation label and highlighted sentences."""
    from pagegraph.tools.retriever import as_retriever as build

    return build(index, filters=filters, k=k, services=services)
