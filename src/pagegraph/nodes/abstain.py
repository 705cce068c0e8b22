"""Abstention: say plainly that the documents do not hold the answer, why, and what to ingest."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, finished_turn, names_documents, usage_update
from pagegraph.nodes.language import band_label, question_language
from pagegraph.prompts.abstain import ABSTAIN_TEXTS
from pagegraph.state.graph import RagState


def abstain(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Abstain, naming the documents read, in the question's language. A search the user did not point at documents
    chose them itself, and may have missed the one that holds the answer: the user is told how to name it."""
    timer = StageTimer("abstain")
    reason = state.get("abstain_reason") or "no relevant passage was found"
    route = state.get("route")
    sources = list(dict.fromkeys(e.source for e in state.get("retrieved") or []))  # in (step, rank) order
    language = question_language(state["question"], context_of(runtime).reading)
    texts = ABSTAIN_TEXTS.get(language, ABSTAIN_TEXTS["en"])
    if route:
        searched = texts.searched.format(documents=", ".join(route.names))
    else:
        searched = texts.passages_from.format(documents=", ".join(sources)) if sources else ""
    hint = texts.name_hint if sources and not names_documents(state) else texts.ingest_hint
    message = texts.message.format(reason=reason, searched=searched, hint=hint)
    return {
        "answer": message,
        "citations": [],
        "abstained": True,
        "abstain_reason": reason,
        "confidence": 0.0,
        "band": "not_found",
        "band_label": band_label("not_found", language),
        "value_check": None,
        "low_confidence": True,
        "evidence": state.get("evidence") or [],
        **usage_update(state.get("trace") or []),
        **finished_turn(state, message),
        "trace": [timer.record(reason)],
    }
