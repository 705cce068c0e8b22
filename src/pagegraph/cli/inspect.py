"""`pagegraph inspect`: documents, tags, summaries and section trees of an index."""

from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from pagegraph.cli.common import (
    DatabaseOption,
    IndexOption,
    app,
    console,
    fail,
    index_folder,
)
from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.tree_summaries import EXTRACTIVE_WRITER
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import DocumentRecord, DocumentTags, NodeSummary, TreeNode
from pagegraph.store.index import open_index
from pagegraph.store.index_base import KeywordSearchState

_KEYWORD_SEARCH_STATES: dict[KeywordSearchState, str] = {
    "current": "current",
    "behind": "behind the documents (brought up to date by the next ingest)",
    "older": "made by an older pagegraph, which split text into words another way (made again by the next ingest)",
}


def summary_state(stored: StoredSummary | None, sections: list[NodeSummary]) -> dict[str, object]:
    """Which of a document's summaries a model wrote and how many `pagegraph summarize` has left."""
    summarised = [s for s in sections if s.is_summary]
    by_model = sum(s.writer not in ("", EXTRACTIVE_WRITER) for s in summarised)
    return {
        "document": stored.method if stored else None,
        "sections_by_model": by_model,
        "sections_left": len(summarised) - by_model,
    }


def _summary_cell(state: dict[str, Any]) -> str:
    """How the document and its sections are summarised; what a model could still write is an option, not a debt."""
    document = "by model" if state["document"] == "model" else "extractive"
    by_model = int(state["sections_by_model"])
    left = int(state["document"] != "model") + int(state["sections_left"])
    return (
        document
        + (f", {by_model} sections by model" if by_model else "")
        + (f"; summarize would add {left}" if left else "")
    )


def _document_row(doc: DocumentRecord, summaries: dict[str, object], ocr_pages: int) -> dict[str, object]:
    return {
        "name": doc.name,
        "path": doc.path,
        "type": doc.source_type.value,
        "title": doc.title,
        "pages": doc.n_pages,
        "ocr_pages": ocr_pages,
        "chunks": doc.n_chunks,
        "tree_nodes": doc.n_nodes,
        "tree_source": doc.outline_source,
        "tags": doc.tags.model_dump(mode="json"),
        "status": "indexed",
        "ingested_at": doc.ingested_at,
        "summaries": summaries,
    }


@app.command()
def inspect(
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    document: Annotated[Optional[str], typer.Option(help="one document, by file name (or part of it)")] = None,
    tree: Annotated[bool, typer.Option("--tree", help="show the document's section tree")] = False,
    summaries: Annotated[
        bool, typer.Option("--summaries", help="show each document's summary (what the router reads)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Show what an index holds: documents with pages, chunks, tree nodes and status."""
    settings = get_settings()
    folder = index_folder(index, settings)
    try:
        with open_index(folder, settings) as opened:
            documents = opened.documents()
            failures = opened.failures()
            if document is not None:
                documents = [_find_document(documents, document)]
            if tree and document is None:
                raise PagegraphError("--tree needs --document NAME")
            if tree:
                doc = documents[0]
                _show_tree(doc, opened.tree(doc.id), opened.sections(doc.id), as_json)
                return
            if summaries:
                _show_summaries(documents, opened.summaries(), as_json)
                return
            recovery = opened.last_recovery()
            stored = opened.summaries()
            ocr_pages = opened.ocr_page_counts()
            states = {doc.id: summary_state(stored.get(doc.id), opened.sections(doc.id)) for doc in documents}
            info: dict[str, Any] = {
                "index": opened.location,
                "manifest": opened.manifest.model_dump(),
                "documents": [_document_row(doc, states[doc.id], ocr_pages.get(doc.id, 0)) for doc in documents],
                "failed": [
                    {"name": name, "path": path, "status": f"failed: {reason}"} for path, name, reason in failures
                ],
                "vectors": opened.vector_count(),
                "bm25": _KEYWORD_SEARCH_STATES[opened.keyword_search_state()],
                "not_searchable_yet": opened.unsearchable,
                "last_recovery": dict(zip(("at", "what"), recovery)) if recovery else None,
            }
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    if as_json:
        console.print_json(json.dumps(info))
        return
    params = opened.params
    console.print(
        f"[bold]{opened.location}[/bold]  {len(documents)} documents, {sum(d.n_chunks for d in documents)} chunks, "
        f"{info['vectors']} vectors, BM25 {info['bm25']}",
        highlight=False,
    )
    if info["not_searchable_yet"]:
        console.print(
            f"  [yellow]not searchable until the next ingest[/yellow]: {', '.join(info['not_searchable_yet'])}",
            highlight=False,
        )
    if info["last_recovery"]:
        console.print(
            f"  [yellow]recovered after a killed run[/yellow] at {info['last_recovery']['at']}: "
            f"{info['last_recovery']['what']}",
            highlight=False,
        )
    console.print(
        f"  {params.embedding_model} ({params.embedding_dimension} d, {opened.manifest.embedding_backend}); "
        f"{params.chunk_strategy} chunks of {params.chunk_size} chars, overlap {params.chunk_overlap}, "
        f"at most {params.chunk_max_tokens} word-pieces",
        highlight=False,
    )
    rows = [
        {
            "name": doc.name,
            "type": doc.source_type.value,
            "pages": f"{doc.n_pages}" + (f" ({ocr_pages[doc.id]} by OCR)" if doc.id in ocr_pages else ""),
            "chunks": str(doc.n_chunks),
            "tree": f"{doc.n_nodes} from {doc.outline_source}",
            "summaries": _summary_cell(states[doc.id]),
            "tags": " ".join(f"{k}={v}" for k, v in _flat_tags(doc.tags).items()),
        }
        for doc in documents
    ]
    show_document_rows(rows)
    for _, name, reason in failures if document is None else []:
        console.print(f"[red]✗ {name}: failed: {reason}[/red]", highlight=False)


# what the table's columns beside the names take: a terminal narrower than that and the longest name gets lines
TABLE_COLUMNS_BESIDE_NAMES = 90


def show_document_rows(rows: list[dict[str, str]]) -> None:
    """The documents as a table where the terminal holds it with every name whole, else as lines."""
    if console.width >= max((len(row["name"]) for row in rows), default=0) + TABLE_COLUMNS_BESIDE_NAMES:
        _document_table(rows)
    else:
        _document_lines(rows)


def _document_table(rows: list[dict[str, str]]) -> None:
    table = Table("document", "type", "pages", "chunks", "tree", "summaries", "tags", "status")
    table.columns[0].no_wrap = True  # a name is what `--document` takes: shown whole, on one line
    table.columns[0].min_width = max((len(row["name"]) for row in rows), default=8)
    table.columns[6].overflow = "fold"
    for row in rows:
        table.add_row(
            escape(row["name"]),
            *(escape(row[key]) for key in ("type", "pages", "chunks", "tree", "summaries", "tags")),
            "[green]indexed[/green]",
        )
    console.print(table)


def _document_lines(rows: list[dict[str, str]]) -> None:
    """A terminal too narrow for the table: a document's whole name (what `--document` takes), then its facts on as
    few lines as fit, never cut within a fact."""
    width = max(20, console.width - 2)
    for row in rows:
        pages = "1 page" if row["pages"] == "1" else f"{row['pages']} pages"
        facts = f"{row['type']} · {pages} · {row['chunks']} chunks · indexed"
        if len(row["name"]) + 2 + len(facts) <= width:
            console.print(f"[bold]{escape(row['name'])}[/bold]  [dim]{escape(facts)}[/dim]", highlight=False)
            pieces = [f"tree {row['tree']}", row["summaries"], row["tags"]]
        else:
            console.print(f"[bold]{escape(row['name'])}[/bold]", highlight=False, overflow="fold")
            pieces = [row["type"], pages, f"{row['chunks']} chunks", "indexed", f"tree {row['tree']}"]
            pieces += [row["summaries"], row["tags"]]
        lines = [""]
        for piece in pieces:
            joined = f"{lines[-1]} · {piece}" if lines[-1] else piece
            if piece and len(joined) <= width:
                lines[-1] = joined
            elif piece:
                lines.append(piece)
        for line in lines:
            console.print(f"  [dim]{escape(line)}[/dim]", highlight=False)


def _show_summaries(documents: list[DocumentRecord], stored: dict[str, StoredSummary], as_json: bool) -> None:
    if as_json:
        console.print_json(
            json.dumps({doc.name: stored[doc.id].model_dump() if doc.id in stored else None for doc in documents})
        )
        return
    for doc in documents:
        summary = stored.get(doc.id)
        if summary is None:
            console.print(f"[bold]{doc.name}[/bold]: no summary yet (the next ingest writes one)\n", highlight=False)
            continue
        source = f"by {summary.model}" if summary.method == "model" else "extracted without a model"
        console.print(f"[bold]{doc.name}[/bold] — {summary.document_type} [dim]({source})[/dim]", highlight=False)
        console.print(f"  {summary.summary}", highlight=False)
        if summary.key_topics:
            console.print(f"  topics: {', '.join(summary.key_topics)}", highlight=False)
        if summary.use_for:
            console.print(f"  use for: {summary.use_for}", highlight=False)
        console.print()


def _flat_tags(tags: DocumentTags) -> dict[str, str]:
    named = {
        "project": tags.project,
        "type": tags.source_type,
        "access": tags.confidentiality,
        "date": tags.date.isoformat() if tags.date else None,
    }
    return {**{k: v for k, v in named.items() if v}, **tags.extra}


def _find_document(documents: list[DocumentRecord], name: str) -> DocumentRecord:
    exact = [doc for doc in documents if doc.name == name or doc.path == name]
    matches = exact or [doc for doc in documents if name.lower() in doc.name.lower()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise PagegraphError(f"no indexed document matches {name!r}")
    raise PagegraphError(f"{name!r} matches several documents: {', '.join(doc.name for doc in matches)}")


def _show_tree(doc: DocumentRecord, nodes: list[TreeNode], sections: list[NodeSummary], as_json: bool) -> None:
    """The section tree with each section's summary (written by the summarizer, or the section's own short text)."""
    summaries = {section.node_id: section for section in sections}
    if as_json:
        rows = []
        for node in nodes:
            section = summaries.get(node.id)
            row = node.model_dump(exclude={"text"}) | {"chars": len(node.text)}
            row |= {"summary": section.summary, "is_summary": section.is_summary} if section else {"summary": None}
            rows.append(row)
        console.print_json(json.dumps(rows))
        return
    by_id = {node.id: node for node in nodes}

    def label(node: TreeNode) -> str:
        pages = f"p. {node.start_page}" if node.start_page == node.end_page else f"p. {node.start_page}–{node.end_page}"
        text = f"{escape(node.title)} [dim]({pages}, {len(node.text)} chars)[/dim]"
        if (section := summaries.get(node.id)) is not None:
            kind = "summary" if section.is_summary else "text"
            brief = section.summary if len(section.summary) <= 200 else section.summary[:197] + "..."
            text += f"\n[dim]{kind}: {escape(' '.join(brief.split()))}[/dim]"
        return text

    root = Tree(label(nodes[0]))
    branches = {nodes[0].id: root}
    for node in nodes[1:]:
        parent = by_id[node.parent_id].id if node.parent_id in by_id else nodes[0].id
        branches[node.id] = branches[parent].add(label(node))
    written = sum(section.is_summary for section in sections)
    console.print(
        f"[bold]{escape(doc.name)}[/bold]: tree from {doc.outline_source}, {len(nodes)} nodes, "
        f"{written} section summaries written, {len(sections) - written} short enough to keep as they are",
        highlight=False,
    )
    console.print(root)
