"""Evidence gate: abstain before the answer call when nothing retrieved is close enough to the question, when the
question names something (a name, an acronym, a year) that neither the retrieved passages nor their documents
mention, or when it names a page, figure or table that the documents the user named do not have."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, names_documents, readable_evidence
from pagegraph.retrievers.key_terms import unmentioned_in_evidence
from pagegraph.retrievers.named_pages import absent_from_documents
from pagegraph.services import Services
from pagegraph.state.graph import SearchState


def gate(state: SearchState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("gate")
    context = context_of(runtime)
    threshold = context.gate.abstain_threshold
    retrieved = readable_evidence(services.index(context), state.get("retrieved") or [], state)
    best = max(state.get("relevance") or [0.0])
    documents = sorted({e.source for e in retrieved})
    details: dict[str, list[str]] | None = None
    if not retrieved:
        reason = "no passage of the searched documents matches the question"
    elif best < threshold:
        reason = f"no passage of the searched documents is close to the question (best similarity {best:.2f} < {threshold:.2f})"
    elif context.gate.key_terms and (
        unmentioned := unmentioned_in_evidence(
            services.index(context), state["question"], retrieved, context.gate, context.reading
        )
    ):
        named = ", ".join(f"“{term}”" for term in unmentioned)
        reason = f"neither the {len(retrieved)} passages found nor the rest of their documents mention {named}"
        details = {"unmentioned": unmentioned}
    elif (
        context.gate.key_terms
        and names_documents(state)  # across a library, a page the routed documents lack may be the router's miss
        and (
            absent := absent_from_documents(
                services.index(context), state["question"], documents, context.retrieval.page_rules
            )
        )
    ):
        holder = documents[0] if len(documents) == 1 else f"none of the {len(documents)} searched documents"
        reason = f"{holder} has no {' or '.join(absent)}"
        details = {"absent": absent}
    else:
        return {"trace": [timer.record(f"{len(retrieved)} passages, best similarity {best:.2f} ≥ {threshold:.2f}")]}
    return {
        "abstain_reason": reason,
        "trace": [timer.record(reason, details=details)],
    }
