"""Stages of the pageindex graph: find the files, let the model pick sections from each file's tree of titles and
summaries, read those sections. Each stage's trace record carries its part of the search history in `details`."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import (
    StageTimer,
    context_of,
    empty_index_update,
    match_document_names,
    visible_documents,
)
from pagegraph.nodes.retrieve import with_printed_pages
from pagegraph.prompts.pageindex import SELECT_REQUEST, SELECT_SYSTEM
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.tree_nodes import (
    NodeChoice,
    TreeUnavailableError,
    build_selection_view,
    get_node_by_id,
    load_tree,
    read_selection,
    section_evidence,
)
from pagegraph.services import Services
from pagegraph.state.answering import RoutedDocument, RouteDecision, RouteMethod
from pagegraph.state.graph import FileTask, PageindexState

NO_FILES = "no relevant files found"


def find_files(state: PageindexState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """The question's documents when it names them, else the top_k_files documents by retrieval scores."""
    timer = StageTimer("find_files")
    context = context_of(runtime)
    filters = readable_filter(state.get("filters"))
    if (empty := empty_index_update(services, context, filters, timer)) is not None:
        return empty
    index = services.index(context)
    known = [doc.name for doc in visible_documents(index, filters)]
    method: RouteMethod
    if requested := state.get("documents"):
        names, ranked, method = match_document_names(requested, known), [], "given"
    else:
        ranked = HybridRetriever.for_context(index, context).rank_documents(state["question"], filters)
        names, method = [d.name for d in ranked[: context.retrieval.top_k_files]], "ranking"
    details = {"ranked": [[d.name, round(d.score, 4)] for d in ranked], "selected": names}
    if not names:
        return {"abstain_reason": NO_FILES, "trace": [timer.record(NO_FILES, details=details)]}
    decision = RouteDecision(documents=[RoutedDocument(name=n) for n in names], method=method)
    summary = f"{len(names)} files: {', '.join(names)}"
    return {"route": decision, "trace": [timer.record(summary, ids=names, details=details)]}


def select_sections(task: FileTask, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """One file: show the model its section list, take `nodes_per_file` ids back, read those sections."""
    timer = StageTimer(f"select[{task['step']}]")
    context = context_of(runtime)
    index = services.index(context)
    # the route is state a client can edit: the file is read only if the server user may read it
    readable = visible_documents(index, readable_filter(None))
    document = next((doc for doc in readable if doc.name == task["document"]), None)
    if document is None:
        error = f"{task['document']}: no such document"
        details = {"document": task["document"], "loaded": False, "error": error}
        return {"trace": [timer.record(f"{task['document']}: skipped", error=error, details=details)]}
    try:
        tree = load_tree(index, document)
    except TreeUnavailableError as exc:
        details = {"document": document.name, "loaded": False, "error": str(exc)}
        return {"trace": [timer.record(f"{document.name}: skipped", error=str(exc), details=details)]}
    view, shown = build_selection_view(
        tree, context.pageindex.selection_view_tokens, summary_chars=context.pageindex.view_summary_chars
    )
    messages = [
        SystemMessage(content=SELECT_SYSTEM.format(n=context.pageindex.nodes_per_file)),
        HumanMessage(content=SELECT_REQUEST.format(question=task["question"], document=document.name, sections=view)),
    ]
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        NodeChoice,
        messages,
        default=None,
        purpose="select_sections",
        repairs=context.repair_attempts,
    )
    selection = read_selection(result, shown, context.pageindex.nodes_per_file)
    nodes = [node for node_id in selection.ids if (node := get_node_by_id(tree, node_id)) is not None]
    evidence = with_printed_pages(
        index,
        [
            section_evidence(document.name, node, task["step"], rank, context.tree.node_text_chars)
            for rank, node in enumerate(nodes)
        ],
        context.retrieval.page_rules.printed_offset_support,
    )
    details = {
        "document": document.name,
        "loaded": True,
        "sections_shown": len(shown),
        "sections_in_tree": len(tree.sections),
        "selected": selection.ids,
        "parsed_by": selection.parsed_by,
        "unknown_ids": selection.unknown,
        "filled": selection.filled,
        "nodes": [
            {
                "id": node.node_id,
                "title": node.title,
                "pages": [node.start_page, node.end_page],
                "text_missing": node.text_missing,
                "truncated": len(node.text) > context.tree.node_text_chars,
            }
            for node in nodes
        ],
    }
    summary = f"{document.name}: {', '.join(n.title for n in nodes)} (read by {selection.parsed_by})"
    return {
        "retrieved": evidence,
        "trace": [timer.record(summary, ids=selection.ids, attempts=result.attempts, details=details)],
    }


def collect_sections(state: PageindexState, runtime: Runtime[Context]) -> dict[str, Any]:
    """After every file: abstain when no section could be read (every tree failed to load, or none was chosen)."""
    timer = StageTimer("collect")
    retrieved = state.get("retrieved") or []
    if retrieved:
        return {"trace": [timer.record(f"{len(retrieved)} sections to read")]}
    skipped = [r.error for r in state.get("trace") or [] if r.stage.startswith("select[") and r.error]
    reason = "no section tree could be loaded: " + "; ".join(skipped) if skipped else "no section was selected"
    return {"abstain_reason": reason, "trace": [timer.record(reason)]}
