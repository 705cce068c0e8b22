"""Evidence first: right after retrieval and before any answer-model call, the sentences most likely to hold the
answer, with their page labels and offsets. Graphs whose own retrieval needs a model (a router, a planner) get
them from a model-free search of the question, so the user sees evidence within a second or two either way; the
highlights stay in the output when the run abstains (the closest passages, which do not answer it)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, readable_evidence
from pagegraph.nodes.retrieve import handed_search, search_question, searched_for
from pagegraph.retrievers.highlights import Location, answer_shape, locate_in_chunks, pick_highlights
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Presearch
from pagegraph.state.documents import Chunk, Page
from pagegraph.state.graph import SearchState
from pagegraph.store.index import Index


def highlight(state: SearchState, runtime: Runtime[Context], services: Services, search: bool) -> dict[str, Any]:
    """Highlights from the passages the graph retrieved, or with `search` (wired before a graph's own retrieval)
    from a model-free search of the question, kept as the run's `presearch` for the graph it hands the question
    to. Passages that are a handed-over search's keep that search's highlights."""
    timer = StageTimer("highlight")
    context = context_of(runtime)
    if not services.has_index(context):
        return {
            "highlights": [],
            "trace": [timer.record("no index to search")],
            **({"presearch": None} if search else {}),
        }
    passages = state.get("retrieved") or []
    presearch = handed_search(state)
    # the search of this question that the graph handing it over ran (auto's, before rag or extract) is not run
    # again: its highlights, or those of its passages this graph retrieved
    if presearch is not None and (search or [p.id for p in passages] == [p.id for p in presearch.retrieved]):
        kept = {p.id for p in (presearch.retrieved if search else passages)}
        picked = [h for h in presearch.highlights if h.passage_id in kept]
        summary = f"{len(picked)} sentences, as the search already run of the question found them"
        return {"highlights": picked, "trace": [timer.record(summary, ids=[h.label for h in picked])]}
    searched: dict[str, Any] = {}
    if search:
        searched = search_question(state, runtime, services)
        passages = searched["retrieved"]
    index = services.index(context)
    shown = sorted(readable_evidence(index, passages, state), key=lambda e: (e.step, e.rank))
    shown = shown[: context.reading.highlight_passages]
    picked = []
    if shown:
        locate = sentence_locator(index, context.retrieval.page_rules.printed_offset_support)
        picked = pick_highlights(
            state["question"],
            shown,
            index.embedder,
            locate,
            count=context.reading.highlights,
            reading=context.reading,
        )
    note = " (from a search of the question)" if search else ""
    summary = (
        f"{len(picked)} sentences from {len(shown)} passages{note}; answer shape {answer_shape(state['question'])}"
    )
    if not shown:
        summary = "no passage to highlight"
    update: dict[str, Any] = {"highlights": picked, "trace": [timer.record(summary, ids=[h.label for h in picked])]}
    if search:
        question, documents, filters = searched_for(state)
        update["presearch"] = Presearch(
            question=question,
            documents=documents,
            filters=filters,
            retrieved=passages,
            relevance=searched["relevance"][0],
            highlights=picked,
        )
    return update


def sentence_locator(index: Index, min_support: float) -> Callable[[str, Evidence], Location | None]:
    """Where a sentence of a passage sits on its page (pages and chunks read once per call of the locator), with the
    number printed on the page (`Index.printed_pages`, `min_support` its printed offset's)."""

    @cache
    def document_pages(document_id: str) -> tuple[Page, ...]:
        return tuple(index.pages(document_id))

    @cache
    def passage_chunks(chunk_ids: tuple[str, ...]) -> tuple[Chunk, ...]:
        found = index.chunks_by_id(list(chunk_ids))
        return tuple(found[i] for i in chunk_ids if i in found)

    def locate(sentence: str, evidence: Evidence) -> Location | None:
        chunks = passage_chunks(tuple(evidence.chunk_ids))
        if not chunks:
            return None
        document = chunks[0].document_id
        return locate_in_chunks(sentence, chunks, document_pages(document), index.printed_pages(document, min_support))

    return locate
