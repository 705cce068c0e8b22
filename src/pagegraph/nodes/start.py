"""First stage of every run: clear what a previous turn on the same thread left, settle the output type, and
narrow the filters to what a LangGraph server user may read."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.access import caller_access
from pagegraph.config import Context
from pagegraph.nodes.common import context_of
from pagegraph.state.graph import RagState
from pagegraph.state.records import RetrievalFilter


def start(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    context = context_of(runtime)
    question = state.get("question", "").strip()
    filters = state.get("filters")
    if filters is not None and not isinstance(filters, RetrievalFilter):
        filters = RetrievalFilter.model_validate(filters)  # a server client sends plain JSON
    if (access := caller_access()) is not None:
        filters = (filters or RetrievalFilter()).within(access)
    return {
        "filters": filters,
        "question": question,
        "output_type": state.get("output_type") or context.output_type,
        "route": None,
        "search_plan": None,
        "mapped": None,
        "plan": None,
        "retrieved": None,
        "relevance": None,
        "evidence": [],
        "trace": None,
        "repair": None,
        "attempts": {},
        "failure": None,
        "draft": "",
        "answer": "",
        "citations": [],
        "abstained": False,
        "abstain_reason": None if question else "the question is empty",
        "confidence": 0.0,
        "low_confidence": False,
    }
