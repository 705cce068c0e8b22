"""expand_tree (rag graph): for searched documents with a real outline, navigate their section trees and add the
relevant leaf sections to the retrieved passages, interleaved with them by rank. Sections whose pages a passage of
the same document already covers are not added twice."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.nodes.retrieve import with_printed_pages
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.tree import TreeRetriever, hit_evidence
from pagegraph.services import Services
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.graph import RagState


def expand_tree(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("expand_tree")
    context = context_of(runtime)
    if not context.tree.use:
        return {"trace": [timer.record("off (use_tree is false)")]}
    index = services.index(context)
    base = readable_filter(state.get("filters")) or RetrievalFilter()
    routed = route.names if (route := state.get("route")) else None
    retriever = TreeRetriever(
        index=index,
        judge=services.chat_model(context, temperature=0.0),
        start_nodes=context.tree.start_nodes,
        max_steps=context.tree.max_steps,
        max_chars=context.tree.node_text_chars,
        repairs=context.repair_attempts,
        chunk_search=HybridRetriever.for_context(index, context),
    )
    searched = base.model_copy(update={"documents": routed or base.documents})
    outlined = [doc.name for doc in retriever.split_by_outline(searched)[0]]
    if not outlined:
        return {"trace": [timer.record("no searched document has an outline with section summaries")]}
    search = retriever.navigate(state["question"], searched.model_copy(update={"documents": outlined}))
    retrieved = state.get("retrieved") or []
    covered = {(e.source, page) for e in retrieved for page in range(e.start_page, e.end_page + 1)}
    new = [
        hit
        for hit in search.hits
        if not all((hit.source, page) in covered for page in range(hit.start_page, hit.end_page + 1))
    ]
    step = 1 + max((e.step for e in retrieved), default=0)
    evidence = with_printed_pages(
        index,
        [hit_evidence(hit, step, rank) for rank, hit in enumerate(new)],
        context.retrieval.page_rules.printed_offset_support,
    )
    summary = (
        f"{search.judged} sections of {len(outlined)} documents judged, {search.relevant} relevant; "
        f"{len(evidence)} leaf sections added ({len(search.hits) - len(new)} already covered)"
    )
    details = {"judged": search.judged, "relevant": search.relevant, "added": [e.label() for e in evidence]}
    return {
        "retrieved": evidence,
        "trace": [timer.record(summary, ids=[e.id for e in evidence], calls=search.calls, details=details)],
    }
