"""Router: which documents to search. The question's own list, every document when there are few, else the model's
pick from the summaries of the best documents of the model-free ranking (retrievers.documents), else, when its
output never validates, that ranking itself."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field, ValidationInfo, field_validator

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context
from pagegraph.ingest.summaries import ExtractiveSummarizer, SummarySource
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import (
    StageTimer,
    context_of,
    empty_index_update,
    match_document_names,
    visible_documents,
)
from pagegraph.prompts.route import CATALOGUE_ENTRY, ROUTE_REQUEST, ROUTE_SYSTEM
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.services import Services
from pagegraph.state.answering import RoutedDocument, RouteDecision, StoredSummary
from pagegraph.state.documents import DocumentRecord
from pagegraph.state.graph import RagState
from pagegraph.store.index import Index


class RouteChoice(BaseModel):
    documents: list[str] = Field(min_length=1, max_length=20, description="file names from the catalogue, best first")
    reason: str = Field(default="", max_length=300)

    @field_validator("documents")
    @classmethod
    def indexed_only(cls, names: list[str], info: ValidationInfo) -> list[str]:
        known = (info.context or {}).get("known")
        if known is None:
            return names
        matched = match_document_names(names, known)
        if not matched:
            raise ValueError(f"none of {names} is a file name from the catalogue")
        return matched


def catalogue(index: Index, documents: list[DocumentRecord]) -> str:
    stored = index.summaries()
    extractive = ExtractiveSummarizer()
    lines = []
    for doc in documents:
        summary: StoredSummary = stored.get(doc.id) or extractive.summarize(
            SummarySource.from_parts(doc.name, doc.title, doc.source_type, index.pages(doc.id)[:3], [])
        )
        lines.append(
            CATALOGUE_ENTRY.format(
                name=doc.name,
                document_type=summary.document_type,
                summary=summary.summary,
                topics=", ".join(summary.key_topics) or "-",
            )
        )
    return "\n".join(lines)


def route(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("route")
    context = context_of(runtime)
    filters = readable_filter(state.get("filters"))
    if (empty := empty_index_update(services, context, filters, timer)) is not None:
        return empty
    index = services.index(context)
    visible = visible_documents(index, filters)
    known = [doc.name for doc in visible]
    if requested := state.get("documents"):
        names = match_document_names(requested, known)
        if not names:
            return {
                "abstain_reason": f"none of the requested documents ({', '.join(requested)}) is indexed",
                "trace": [timer.record("requested documents not indexed", ids=requested)],
            }
        decision = RouteDecision(
            documents=[RoutedDocument(name=n, reason="named in the question") for n in names], method="given"
        )
        return _decided(decision, timer, f"searching the {len(names)} requested documents")
    if len(known) <= context.retrieval.top_k_files:
        decision = RouteDecision(documents=[RoutedDocument(name=n) for n in known], method="all")
        return _decided(decision, timer, f"the index holds {len(known)} documents: searching all")

    ranked = HybridRetriever.for_context(index, context).rank_documents(state["question"], filters)
    shown = (
        max(context.retrieval.route_documents, context.retrieval.top_k_files)
        if context.retrieval.route_documents
        else len(ranked)
    )
    by_name = {doc.name: doc for doc in visible}
    candidates = [by_name[d.name] for d in ranked[:shown] if d.name in by_name]
    messages = [
        SystemMessage(content=ROUTE_SYSTEM.format(top_k=context.retrieval.top_k_files)),
        HumanMessage(content=ROUTE_REQUEST.format(question=state["question"], catalogue=catalogue(index, candidates))),
    ]
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        RouteChoice,
        messages,
        default=RouteChoice(documents=known[:1]),
        purpose="route",
        repairs=context.repair_attempts,
        context={"known": known},
    )
    if result.ok:
        names = result.value.documents[: context.retrieval.top_k_files]
        decision = RouteDecision(
            documents=[RoutedDocument(name=n, reason=result.value.reason) for n in names], method="model"
        )
        return _decided(decision, timer, f"model chose {len(names)} of {len(known)} documents", result.attempts)
    names = [d.name for d in ranked[: context.retrieval.top_k_files]] or known[: context.retrieval.top_k_files]
    decision = RouteDecision(
        documents=[RoutedDocument(name=n, reason="ranked by retrieval scores") for n in names], method="ranking"
    )
    return _decided(
        decision, timer, "model output invalid: documents ranked by retrieval", result.attempts, result.error
    )


def _decided(
    decision: RouteDecision, timer: StageTimer, summary: str, attempts: list | None = None, error: str | None = None
) -> dict[str, Any]:
    return {
        "route": decision,
        "trace": [timer.record(summary, ids=decision.names, attempts=attempts or [], error=error)],
    }
