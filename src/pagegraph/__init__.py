"""pagegraph: document question answering with page-accurate citations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer

    from pagegraph.services import Services

__version__ = "0.1.0"

GraphName = Literal["auto", "rag", "extract", "small_model", "pageindex", "basic"]
GRAPH_NAMES: tuple[str, ...] = ("auto", "rag", "extract", "small_model", "pageindex", "basic")


def build_graph(
    name: GraphName = "rag", *, services: Services | None = None, checkpointer: Checkpointer = None
) -> CompiledStateGraph:
    """The compiled question-answering graph `name` (auto picks extract for models marked small, else rag).
    Invoke it with {"question": ...} and, optionally,
    context=pagegraph.config.Context(...); pass services=Services(chat_model=...) to use a model object of yours."""
    if name == "rag":
        from pagegraph.graphs.rag import build_rag_graph

        return build_rag_graph(services, checkpointer)
    if name == "basic":
        from pagegraph.graphs.basic import build_basic_graph

        return build_basic_graph(services, checkpointer)
    if name == "extract":
        from pagegraph.graphs.extract import build_extract_graph

        return build_extract_graph(services, checkpointer)
    if name == "small_model":
        from pagegraph.graphs.small_model import build_small_model_graph

        return build_small_model_graph(services, checkpointer)
    if name == "pageindex":
        from pagegraph.graphs.pageindex import build_pageindex_graph

        return build_pageindex_graph(services, checkpointer)
    if name == "auto":
        from pagegraph.graphs.auto import build_auto_graph

        return build_auto_graph(services, checkpointer)
    raise ValueError(f"unknown graph {name!r}: choose from {', '.join(GRAPH_NAMES)}")
