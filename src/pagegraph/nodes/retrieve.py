"""Retriever: one plan step through the hybrid retriever, pre-filtered to the step's documents, hits expanded with
their windows and merged into passages."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from langgraph.runtime import Runtime

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context
from pagegraph.nodes.common import (
    StageTimer,
    context_of,
    match_document_names,
    readable_evidence,
    visible_documents,
)
from pagegraph.retrievers.fusion import question_kind
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.services import Services
from pagegraph.state.answering import GAP_MARK, Evidence, Presearch
from pagegraph.state.documents import Chunk
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.graph import SearchState, StepTask, required
from pagegraph.store.index import Index


def passages(index: Index, hits: list[ScoredChunk], step: int, min_support: float) -> list[Evidence]:
    """One passage per hit: the hit and the window chunks it brought, in document order, overlaps removed; with the
    numbers printed on its pages (`Index.printed_pages`, `min_support` its printed offset's)."""
    chunks = index.chunks_by_id([h.chunk_id for h in hits])
    groups: dict[str, list[Chunk]] = defaultdict(list)
    scores: dict[str, float] = {}
    for hit in hits:
        owner = hit.hit_id or hit.chunk_id
        groups[owner].append(chunks[hit.chunk_id])
        scores.setdefault(owner, hit.score)
    evidence = []
    for rank, (hit_id, members) in enumerate(groups.items()):
        members.sort(key=lambda c: c.position)
        found = chunks[hit_id]
        evidence.append(
            Evidence(
                id=hit_id,
                chunk_ids=[c.id for c in members],
                source=found.source,
                section=found.section_path[-1] if found.section_path else "",
                start_page=min(c.start_page for c in members),
                end_page=max(c.end_page for c in members),
                start_time=members[0].start_time,
                end_time=members[-1].end_time,
                text=_joined(members),
                table_header=members[0].table_header,
                score=scores[hit_id],
                step=step,
                rank=rank,
            )
        )
    return with_printed_pages(index, evidence, min_support)


def with_printed_pages(index: Index, passages: list[Evidence], min_support: float) -> list[Evidence]:
    """The passages with the numbers printed on their first and last pages, where those differ from the pages'
    places (`Index.printed_pages`, `min_support` its printed offset's)."""
    profiles = index.profiles
    labelled = []
    for passage in passages:
        row = profiles.row_named.get(passage.source)
        printed = index.printed_pages(profiles.ids[row], min_support) if row is not None else {}
        update = {"start_label": printed.get(passage.start_page), "end_label": printed.get(passage.end_page)}
        labelled.append(passage.model_copy(update=update))
    return labelled


def search_details(found: list[Evidence], spelling: dict[str, str]) -> dict[str, Any]:
    """A search's trace details: how many passages it found, in how many documents, and the words it read as others
    (what a watching user is told; a subgraph's updates carry its trace but not its passages)."""
    details: dict[str, Any] = {"passages": len(found), "documents": len({e.source for e in found})}
    return {**details, "spelling": spelling} if spelling else details


def spelling_note(spelling: dict[str, str]) -> str:
    return "".join(f"; read {written!r} as {searched!r}" for written, searched in spelling.items())


def _joined(chunks: list[Chunk]) -> str:
    text, end = chunks[0].text, chunks[0].end_offset
    for chunk in chunks[1:]:
        if chunk.start_offset <= end:
            text += chunk.text[end - chunk.start_offset :]
        else:
            text += GAP_MARK + chunk.text
        end = max(end, chunk.end_offset)
    return text


def retrieve(task: StepTask, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer(f"retrieve[{task['step']}]")
    context = context_of(runtime)
    index = services.index(context)
    base = readable_filter(task.get("filters")) or RetrievalFilter()
    flt = base.model_copy(update={"documents": task["documents"] or base.documents})
    retriever = HybridRetriever.for_context(index, context)
    hits, relevance = retriever.search_with_relevance(task["query"], flt)
    found = passages(index, hits, task["step"], context.retrieval.page_rules.printed_offset_support)
    spelling = retriever.spelling_corrections(task["query"])
    summary = f"{len(found)} passages ({len(hits)} chunks) for {task['query']!r}; best similarity {relevance:.2f}"
    return {
        "retrieved": found,
        "relevance": [relevance],
        "trace": [
            timer.record(
                summary + spelling_note(spelling), ids=[e.id for e in found], details=search_details(found, spelling)
            )
        ],
    }


def searched_for(state: SearchState) -> tuple[str, list[str], dict[str, Any] | None]:
    """What a search of the question searches: the question, the documents asked for, the filter (as JSON)."""
    filters = state.get("filters")
    return state["question"], list(state.get("documents") or []), filters.model_dump(mode="json") if filters else None


def handed_search(state: SearchState) -> Presearch | None:
    """The search of this very question (same documents, same filter, no router's pick) that the graph handing the
    question over already ran, if it did."""
    presearch = state.get("presearch")
    if presearch is None or state.get("route") is not None:
        return None
    same = (presearch.question, presearch.documents, presearch.filters) == searched_for(state)
    return presearch if same else None


def search_question(state: SearchState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """The basic graph's retrieval: the question itself over the routed (or requested, or all) documents. Requested
    names are matched as a router matches them (a part of a file name will do); none matching finds nothing. A
    search the caller handed over is taken as it is (its passages checked as every passage from the state is)."""
    if (presearch := handed_search(state)) is not None:
        timer = StageTimer("retrieve[0]")
        found = readable_evidence(services.index(context_of(runtime)), presearch.retrieved, state)
        summary = f"{len(found)} passages from the search already run of the question"
        return {
            "retrieved": found,
            "relevance": [presearch.relevance],
            "trace": [timer.record(summary, ids=[e.id for e in found], details=search_details(found, {}))],
        }
    route = state.get("route")
    documents = route.names if route else list(state.get("documents") or [])
    if documents and not route:
        index = services.index(context_of(runtime))
        known = [doc.name for doc in visible_documents(index, readable_filter(state.get("filters")))]
        documents = match_document_names(documents, known) or documents
    task = StepTask(
        question=state["question"],
        step=0,
        query=state["question"],
        documents=documents,
        kind=question_kind(state["question"]),
    )
    if state.get("filters"):
        task["filters"] = state["filters"]
    return retrieve(task, runtime, services)


def file_filter_documents(known: list[str], file_filter: str | None, source_hint: str | None) -> list[str]:
    """Indexed documents with the given extension and containing the given part of a file name."""
    extension = (file_filter or "").lower().lstrip("*.")
    hint = (source_hint or "").lower()
    return [
        name
        for name in known
        if (not extension or name.lower().endswith(f".{extension}")) and (not hint or hint in name.lower())
    ]


def search_keywords(state: SearchState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """The small_model graph's retrieval: question and keywords, pre-filtered by the planner's hints, at most
    `map_chunks` single chunks (no windows: the map stage reads one chunk per call)."""
    timer = StageTimer("search")
    context = context_of(runtime)
    index = services.index(context)
    plan = required(state.get("search_plan"), "the search plan")
    filters = readable_filter(state.get("filters"))
    known = [doc.name for doc in visible_documents(index, filters)]
    requested = match_document_names(state.get("documents") or [], known)
    hinted = bool(plan.file_filter or plan.source_hint)
    filtered = file_filter_documents(requested or known, plan.file_filter, plan.source_hint) if hinted else []
    note = "; the planner's filters match no document: searching without them" if hinted and not filtered else ""
    base = filters or RetrievalFilter()
    # nothing named or hinted: the whole library, which the retriever routes to its best documents
    flt = base.model_copy(update={"documents": filtered or requested or base.documents})
    query = f"{state['question']} {' '.join(plan.keywords)}"
    retriever = HybridRetriever.for_context(index, context, max_chunks=context.small_model.map_chunks, window=0)
    hits, relevance = retriever.search_with_relevance(query, flt)
    found = passages(index, hits, 0, context.retrieval.page_rules.printed_offset_support)
    where = f"{len(flt.documents or known)} documents"
    if retriever.routes(flt):
        where = f"the best-ranked of {len(known)} documents"
    spelling = retriever.spelling_corrections(query)
    summary = f"{len(found)} chunks in {where}; best similarity {relevance:.2f}{note}{spelling_note(spelling)}"
    record = timer.record(summary, ids=[e.id for e in found], details=search_details(found, spelling))
    return {"retrieved": found, "relevance": [relevance], "trace": [record]}
