"""pagegraph: document question answering with page-accurate citations."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph
    from langgraph.types import Checkpointer

    from pagegraph.services import Services

__version__ = "0.1.0"

# The question-answering graphs: name -> (module, builder). build_graph, the CLI's choices and eval read this;
# langgraph.json serves the same names (tests/e2e/test_server.py checks).
GRAPHS: dict[str, tuple[str, str]] = {
    "auto": ("pagegraph.graphs.auto", "build_auto_graph"),
    "rag": ("pagegraph.graphs.rag", "build_rag_graph"),
    "extract": ("pagegraph.graphs.extract", "build_extract_graph"),
    "small_model": ("pagegraph.graphs.small_model", "build_small_model_graph"),
    "pageindex": ("pagegraph.graphs.pageindex", "build_pageindex_graph"),
    "basic": ("pagegraph.graphs.basic", "build_basic_graph"),
}
GRAPH_NAMES: tuple[str, ...] = tuple(GRAPHS)


def build_graph(
    name: str = "rag", *, services: Services | None = None, checkpointer: Checkpointer = None
) -> CompiledStateGraph:
    """The compiled question-answering graph `name` (auto picks extract for models marked small, else rag).
    Invoke it with {"question": ...} and, optionally,
    context=pagegraph.config.Context(...); pass services=Services(chat_model=...) to use a model object of yours."""
    if name not in GRAPHS:
        raise ValueError(f"unknown graph {name!r}: choose from {', '.join(GRAPH_NAMES)}")
    module, builder = GRAPHS[name]
    return getattr(importlib.import_module(module), builder)(services, checkpointer)
