"""Helpers the stages share: document-name matching, trace records, the stage's Context."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from time import perf_counter
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.runtime import Runtime

from pagegraph.access.runs import caller_access, readable_filter
from pagegraph.config import Context
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, TraceRecord, Turn
from pagegraph.state.documents import DocumentRecord
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.graph import RunState, SearchInput
from pagegraph.state.usage import Attempt, ModelCall, UsageSummary
from pagegraph.store.index import Index


def context_of(runtime: Runtime[Context] | None) -> Context:
    """The run's Context (defaults when the caller gave none)."""
    context = getattr(runtime, "context", None)
    if isinstance(context, Context):
        return context
    return Context.model_validate(context or {})


def recent_turns(state: RunState, context: Context) -> list[Turn]:
    """The chat turns before this question that the model is shown (`history_turns` of them, newest last)."""
    return (state.get("history") or [])[-context.history_turns :] if context.history_turns else []


def pending_question(state: RunState) -> str | None:
    """The question a chat client sent as the thread's last message (Agent Chat UI, `useStream`), not yet answered."""
    messages = state.get("messages") or []
    return messages[-1].text.strip() if messages and isinstance(messages[-1], HumanMessage) else None


def finished_turn(state: SearchInput, answer: str) -> dict[str, Any]:
    """What a finished run adds to its thread: the turn that follow-ups read, and the answer as a chat message (the
    question's message was added when the run started)."""
    return {"history": [Turn(question=state.get("question", ""), answer=answer)], "messages": [AIMessage(answer)]}


def names_documents(state: SearchInput) -> bool:
    """Whether the user pointed the search at documents (by name or by filter), rather than leaving the router to
    choose them."""
    filters = state.get("filters")
    return bool(state.get("documents") or (filters and filters.documents))


def match_document_names(requested: Sequence[str], known: Sequence[str]) -> list[str]:
    """Indexed names for the names a user or a model gave: exact, then ignoring case, then ignoring the extension,
    then a unique partial match. Names that match nothing are dropped; order is kept, repeats removed."""
    by_lower = {name.lower(): name for name in known}
    by_stem = {PurePath(name).stem.lower(): name for name in known}
    matched: list[str] = []
    for raw in requested:
        name = raw.strip().strip("'\"`")
        lowered = name.lower()
        found = name if name in known else by_lower.get(lowered) or by_stem.get(PurePath(lowered).stem) or None
        if found is None and len(lowered) >= 3:
            partial = [k for k in known if lowered in k.lower() or PurePath(k).stem.lower() in lowered]
            found = partial[0] if len(partial) == 1 else None
        if found is not None and found not in matched:
            matched.append(found)
    return matched


class StageTimer:
    """Measures a stage and builds its trace record."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self.started = perf_counter()

    def record(
        self,
        summary: str,
        *,
        ids: Sequence[str] = (),
        calls: Sequence[ModelCall] = (),
        attempts: Sequence[Attempt] = (),
        error: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> TraceRecord:
        calls = list(calls) or [a.call for a in attempts if a.call is not None]
        return TraceRecord(
            stage=self.stage,
            summary=summary,
            ids=list(ids),
            latency_ms=round((perf_counter() - self.started) * 1000, 1),
            calls=calls,
            attempts=list(attempts),
            error=error,
            details=dict(details or {}),
        )


def empty_index_update(
    services: Services, context: Context, filters: RetrievalFilter | None, timer: StageTimer
) -> dict[str, Any] | None:
    """The abstention when the run's index is missing or holds no document the caller may read; None when there is
    something to search."""
    if not services.has_index(context):
        reason = f"no documents indexed (no index at {services.index_folder(context)})"
        return {"abstain_reason": reason, "trace": [timer.record(reason)]}
    if not visible_documents(services.index(context), filters):
        return {"abstain_reason": "no documents indexed", "trace": [timer.record("the index holds no documents")]}
    return None


def visible_documents(index: Index, filters: RetrievalFilter | None) -> list[DocumentRecord]:
    """The index's documents that pass the run's filters (for a server user: their projects and ceiling)."""
    documents = index.documents()
    return documents if filters is None else [doc for doc in documents if filters.allows(doc.tags)]


def usage_update(records: Sequence[TraceRecord]) -> dict[str, Any]:
    """The run's `usage` and `llm_calls`, added up over the model calls in its trace records."""
    calls = [call for record in records for call in record.calls]
    return {"usage": UsageSummary.from_calls(calls), "llm_calls": len(calls)}


def readable_evidence(index: Index, passages: Sequence[Evidence], state: SearchInput) -> list[Evidence]:
    """The passages a stage may look up in the index: all of them outside the server; for a server user, those all
    of whose chunks belong to the document they name, one the user may read. Passages are state a client can edit
    between steps, so a stage that reads pages or documents for them asks here first."""
    if caller_access() is None or not passages:
        return list(passages)
    readable = {doc.id: doc.name for doc in visible_documents(index, readable_filter(state.get("filters")))}
    chunks = index.chunks_by_id([c for passage in passages for c in passage.chunk_ids])
    return [
        passage
        for passage in passages
        if passage.chunk_ids
        and all(c in chunks and readable.get(chunks[c].document_id) == passage.source for c in passage.chunk_ids)
    ]
