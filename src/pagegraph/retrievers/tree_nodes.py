"""A document's section tree as the tree index keeps it, and the helpers that show it to a model and read back the
sections it chose (the PageIndex way: the model navigates titles and summaries, not vectors)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel, Field

from pagegraph.config import PageIndexKnobs
from pagegraph.errors import PagegraphError
from pagegraph.llm.calls import estimate_tokens
from pagegraph.llm.structured import StructuredResult
from pagegraph.state.answering import Evidence
from pagegraph.state.documents import DocumentRecord, NodeSummary
from pagegraph.store.index import Index

STRUCTURED_OUTLINES = ("bookmarks", "headings", "filing", "detected", "type")


class TreeUnavailableError(PagegraphError):
    """A document has no section tree to navigate (no summaries yet, or nothing but the root)."""


@dataclass
class DocumentTree:
    document: DocumentRecord
    sections: list[NodeSummary]
    texts: dict[str, str]
    paths: dict[str, list[str]] = field(default_factory=dict)

    @staticmethod
    def short_id(node_id: str) -> str:
        """What the model sees and answers with: `n12` for `<document id>:n12`."""
        return node_id.rsplit(":", 1)[-1]

    @cached_property
    def by_short_id(self) -> dict[str, NodeSummary]:
        return {self.short_id(section.node_id): section for section in self.sections}


@dataclass(frozen=True)
class SelectedNode:
    node_id: str
    title: str
    summary: str
    text: str
    start_page: int
    end_page: int
    text_missing: bool = False


class NodeChoice(BaseModel):
    """The model's pick of sections."""

    node_ids: list[str] = Field(description="ids of the sections to read, most promising first")


@dataclass
class Selection:
    """The chosen ids; how the reply was read (json, repair, text: ids found in prose, none); ids the tree does not
    have; how many ids were added to reach the number asked for."""

    ids: list[str]
    parsed_by: str
    unknown: list[str] = field(default_factory=list)
    filled: int = 0


def has_outline(document: DocumentRecord) -> bool:
    """A tree worth navigating: one built from bookmarks, headings or numbered headings, not page groups."""
    return document.outline_source in STRUCTURED_OUTLINES


def load_tree(index: Index, document: DocumentRecord) -> DocumentTree:
    sections = index.sections(document.id)
    if not sections:
        raise TreeUnavailableError(f"{document.name}: no section summaries yet (run `pagegraph ingest` on it again)")
    nodes = index.tree(document.id)
    return DocumentTree(
        document=document,
        sections=sections,
        texts={node.id: node.text for node in nodes},
        paths={node.id: node.title_path for node in nodes},
    )


_VIEW = PageIndexKnobs()  # a view's defaults are the pageindex graph's


def page_span(section: NodeSummary) -> str:
    if section.start_page == section.end_page:
        return f"p. {section.start_page}"
    return f"p. {section.start_page}–{section.end_page}"


def build_selection_view(
    tree: DocumentTree,
    token_budget: int = _VIEW.selection_view_tokens,
    with_path: bool = False,
    count: Callable[[str], int] = estimate_tokens,
    summary_chars: int = _VIEW.view_summary_chars,
) -> tuple[str, list[str]]:
    """One line per section (id | title | pages | summary), in tree order, and the ids shown. A big tree is cut to
    the token budget level by level, so the top levels are always there and the deepest go first."""
    lines: dict[str, str] = {}
    for section in tree.sections:
        summary = " ".join(section.summary.split())
        if len(summary) > summary_chars:
            summary = summary[: summary_chars - 3] + "..."
        title = " > ".join(tree.paths.get(section.node_id, [])) if with_path else section.title
        indent = "  " * section.level
        lines[section.node_id] = (
            f"{tree.short_id(section.node_id)} | {indent}{title} | {page_span(section)} | {summary}"
        )
    shown: set[str] = set()
    used = 0
    for section in sorted(tree.sections, key=lambda s: s.level):
        cost = count(lines[section.node_id]) + 1
        if shown and used + cost > token_budget:
            break
        shown.add(section.node_id)
        used += cost
    ordered = [s.node_id for s in tree.sections if s.node_id in shown]
    view = "\n".join(lines[node_id] for node_id in ordered)
    if hidden := len(tree.sections) - len(ordered):
        view += f"\n({hidden} deeper sections not shown)"
    return view, [tree.short_id(node_id) for node_id in ordered]


def get_node_by_id(tree: DocumentTree, node_id: str) -> SelectedNode | None:
    """A section by its id (full or short): title, summary, text and pages; `text_missing` when the section has no
    text of its own to read and only its summary can be used."""
    section = tree.by_short_id.get(tree.short_id(node_id.strip()))
    if section is None:
        return None
    text = tree.texts.get(section.node_id, "").strip()
    return SelectedNode(
        node_id=section.node_id,
        title=section.title,
        summary=section.summary,
        text=text or section.summary,
        start_page=section.start_page,
        end_page=section.end_page,
        text_missing=not text,
    )


def read_selection(result: StructuredResult[NodeChoice], available_ids: list[str], n: int) -> Selection:
    """The `n` sections the model chose: the ids of its reply (after any repair), else the available ids named
    anywhere in its replies. Unknown ids are dropped and the selection is filled up to `n` with the first available
    ids not chosen."""
    if result.ok:
        ids = [node_id.strip() for node_id in result.value.node_ids]
        parsed_by = "repair" if result.attempts[-1].step == "repair" else "json"
    else:
        available = set(available_ids)
        ids = [token for a in result.attempts for token in re.findall(r"[\w-]+", a.raw) if token in available]
        parsed_by = "text" if ids else "none"
    chosen: list[str] = []
    unknown: list[str] = []
    for item in ids:
        candidate = item if item in available_ids else f"n{item}" if f"n{item}" in available_ids else None
        if candidate is None:
            unknown.append(item)
        elif candidate not in chosen:
            chosen.append(candidate)
    chosen = chosen[:n]
    filled = 0
    for item in available_ids:
        if len(chosen) >= n:
            break
        if item not in chosen:
            chosen.append(item)
            filled += 1
    return Selection(ids=chosen, parsed_by=parsed_by, unknown=unknown, filled=filled)


def section_evidence(source: str, node: SelectedNode, step: int, rank: int, max_chars: int) -> Evidence:
    """A section as a passage for the answer model: its text cut to `max_chars` (its summary when it has no text),
    cited as [file, section title, pages]."""
    return Evidence(
        id=node.node_id,
        chunk_ids=[node.node_id],
        source=source,
        section=node.title,
        start_page=node.start_page,
        end_page=node.end_page,
        text=node.text[:max_chars],
        score=1.0 / (rank + 1),
        step=step,
        rank=rank,
    )
