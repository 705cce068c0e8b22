"""The records of an index (documents, pages, section trees, chunks with their vectors, summaries, failed files,
eval runs) and `RecordStore`, what every backend that keeps them provides: `store.SqliteStore` (store.sqlite in the
index folder) and `postgres.PostgresStore` (a schema in PostgreSQL). Both create their tables from one schema and map
records to rows and back with the functions below; only the SQL dialect and the vector encoding differ."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import (
    PAGE_SEPARATOR,
    Chunk,
    DocumentRecord,
    DocumentTags,
    NodeSummary,
    Page,
    SourceType,
    TreeNode,
)
from pagegraph.state.evaluation import EvalRun


@dataclass
class SectionSummaries:
    """A document's section summaries as written with it: records in tree order, their vectors, and the summaries
    this run wrote (kept in the content cache)."""

    nodes: list[NodeSummary]
    vectors: np.ndarray
    new_cache_entries: dict[str, str] = field(default_factory=dict)


@dataclass
class DocumentWrite:
    """A whole document as one commit writes it: the record, pages, section tree, chunks with their vectors, and
    the summaries."""

    record: DocumentRecord
    pages: list[Page]
    nodes: list[TreeNode]
    chunks: list[Chunk]
    embeddings: np.ndarray
    summary: StoredSummary | None = None
    sections: SectionSummaries | None = None


# The tables both backends keep, in the column order their INSERTs follow. `{vector}` and `{json}` are each dialect's
# types; `{document_generation}` the column a database index keeps per document (the commit that wrote it).
Row = tuple[Any, ...]  # a row as written
RowMapping = Mapping[str, Any]  # a row as read, by column name

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT NOT NULL, sha256 TEXT NOT NULL,
    source_type TEXT NOT NULL, title TEXT NOT NULL, n_pages INTEGER NOT NULL, outline_source TEXT NOT NULL,
    tags {json} NOT NULL, ingested_at TEXT NOT NULL{document_generation});
CREATE INDEX IF NOT EXISTS documents_name ON documents (name);
CREATE TABLE IF NOT EXISTS pages (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE, number INTEGER NOT NULL,
    label TEXT, text TEXT NOT NULL, error TEXT, ocr_confidence REAL, PRIMARY KEY (document_id, number));
CREATE TABLE IF NOT EXISTS tree_nodes (
    id TEXT PRIMARY KEY, document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    parent_id TEXT, position INTEGER NOT NULL, level INTEGER NOT NULL, title TEXT NOT NULL, title_path TEXT NOT NULL,
    start_page INTEGER NOT NULL, end_page INTEGER NOT NULL, start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS tree_nodes_document ON tree_nodes (document_id, position);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY, document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, text TEXT NOT NULL, start_offset INTEGER NOT NULL, end_offset INTEGER NOT NULL,
    start_page INTEGER NOT NULL, end_page INTEGER NOT NULL, section_id TEXT NOT NULL, section_path TEXT NOT NULL,
    start_time REAL, end_time REAL, speakers TEXT NOT NULL, index_version INTEGER NOT NULL,
    embedding {vector} NOT NULL, ocr_confidence REAL, table_header TEXT);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id, position);
CREATE TABLE IF NOT EXISTS failures (
    path TEXT PRIMARY KEY, name TEXT NOT NULL, reason TEXT NOT NULL, failed_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS eval_runs (
    id TEXT PRIMARY KEY, created_at TEXT NOT NULL, mode TEXT NOT NULL, config TEXT NOT NULL, summary TEXT NOT NULL,
    per_question TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (
    document_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, summary TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS node_summaries (
    document_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE, node_id TEXT NOT NULL,
    position INTEGER NOT NULL, record TEXT NOT NULL, vector {vector} NOT NULL, PRIMARY KEY (document_id, node_id));
-- Section summaries by content (see tree_summaries.cache_key): a re-ingested document's unchanged sections reuse them.
CREATE TABLE IF NOT EXISTS summary_cache (key TEXT PRIMARY KEY, summary TEXT NOT NULL);
"""


class RecordStore(ABC):
    """The records of one index. Every write is one transaction; a document commits whole or not at all. Reads
    never write."""

    # -- the index as a whole ---------------------------------------------------------------------------------------
    @abstractmethod
    def generation(self) -> int:
        """How many commits (document written, removed or retagged) the index has seen; 0 for a new one."""

    @abstractmethod
    def last_recovery(self) -> tuple[str, str] | None:
        """When the derived indexes were last brought up to the committed documents after a killed run, and what
        was done; None when never."""

    @abstractmethod
    def close(self) -> None: ...

    # -- writers' turns ---------------------------------------------------------------------------------------------
    def claim(self, path: str) -> bool:
        """Claim the ingest of the file at `path` for this process until `release` (or its end); False when another
        process holds it. A folder index has one writer, so this one always may."""
        return True

    def release(self, path: str) -> None:
        """Let go of a claim (nothing when none is held)."""
        return None

    # -- documents, pages, trees -------------------------------------------------------------------------------------
    @abstractmethod
    def documents(self) -> list[DocumentRecord]:
        """Every document, by name then path."""

    @abstractmethod
    def document_by_path(self, path: str) -> DocumentRecord | None: ...

    @abstractmethod
    def pages(self, document_id: str) -> list[Page]:
        """The document's pages in order."""

    @abstractmethod
    def ocr_page_counts(self) -> dict[str, int]:
        """How many pages of each document OCR read (documents with none are left out)."""

    @abstractmethod
    def tree(self, document_id: str) -> list[TreeNode]:
        """The document's section tree in position order, each node with its text."""

    @abstractmethod
    def section_titles(self, max_level: int, documents: Collection[str] | None = None) -> dict[str, list[str]]:
        """Titles of every document's sections (of the `documents` given, when given) down to `max_level` (the root,
        level 0, is the title), in order."""

    # -- chunks ------------------------------------------------------------------------------------------------------
    @abstractmethod
    def iter_chunks(self, document_id: str | None = None) -> Iterator[tuple[Chunk, np.ndarray]]:
        """Chunks in document and position order, each with its stored vector."""

    def chunks(self, document_id: str | None = None) -> list[Chunk]:
        return [chunk for chunk, _ in self.iter_chunks(document_id=document_id)]

    def chunks_with_vectors(self, document_id: str, dimension: int) -> tuple[list[Chunk], np.ndarray]:
        """The document's chunks in position order and their vectors, a `dimension`-wide row each (also when it has
        no chunk)."""
        stored = list(self.iter_chunks(document_id))
        vectors = np.array([vector for _, vector in stored], dtype=np.float32).reshape(len(stored), dimension)
        return [chunk for chunk, _ in stored], vectors

    @abstractmethod
    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        """The chunks with these ids (missing ids are left out), without their vectors."""

    @abstractmethod
    def chunk_count(self) -> int: ...

    @abstractmethod
    def chunk_catalog(self) -> list[tuple[str, str, str, int, int, int, str]]:
        """(chunk id, document id, file name, position, start page, end page, tags JSON) of every chunk, by document
        id and position: the order the BM25 index is built in."""

    # -- writes of whole documents ------------------------------------------------------------------------------------
    @abstractmethod
    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Write a whole document, replacing the stored version `replaces`, in one transaction; False when nothing
        was written because another writer committed the same content first."""

    @abstractmethod
    def remove_document(self, document_id: str) -> None: ...

    @abstractmethod
    def update_tags(self, document_id: str, tags: DocumentTags) -> None: ...

    # -- summaries ---------------------------------------------------------------------------------------------------
    @abstractmethod
    def summaries(self) -> dict[str, StoredSummary]:
        """Document summaries by document id."""

    @abstractmethod
    def set_summary(self, document_id: str, summary: StoredSummary) -> bool:
        """Write (or replace) a document's summary; False when the document is gone meanwhile."""

    @abstractmethod
    def sections(self, document_id: str) -> list[NodeSummary]:
        """The document's section summaries in tree order; empty when none were written yet."""

    @abstractmethod
    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]:
        """Node ids and their sections' vectors, in tree order."""

    @abstractmethod
    def documents_with_sections(self) -> set[str]: ...

    @abstractmethod
    def set_sections(self, document_id: str, sections: SectionSummaries) -> None:
        """Replace all of a document's section summaries."""

    @abstractmethod
    def refine_section(self, document_id: str, node: NodeSummary, cache_entry: tuple[str, str] | None) -> bool:
        """Replace one stored section summary (its vector stays), caching what a model wrote; False when the
        document is gone or was replaced meanwhile (nothing is written then)."""

    @abstractmethod
    def set_section_vectors(self, document_id: str, vectors: dict[str, np.ndarray]) -> None:
        """Replace the vectors of a document's sections (their summaries stay as they are)."""

    @abstractmethod
    def section_vector_recipe(self) -> str | None:
        """How the stored section vectors were made (None: before this was recorded, by embedding the summaries)."""

    @abstractmethod
    def set_section_vector_recipe(self, recipe: str) -> None: ...

    @abstractmethod
    def cached_section_summary(self, key: str) -> str | None: ...

    @abstractmethod
    def summary_cache(self) -> dict[str, str]: ...

    @abstractmethod
    def add_to_summary_cache(self, entries: dict[str, str]) -> None:
        """Add cached section summaries; a key already cached keeps its summary."""

    # -- files that failed, eval runs ---------------------------------------------------------------------------------
    @abstractmethod
    def record_failure(self, path: str, name: str, reason: str) -> None: ...

    @abstractmethod
    def failures(self) -> list[tuple[str, str, str]]:
        """(path, name, reason) of the files that failed to ingest, by name."""

    @abstractmethod
    def forget_failure(self, path: str) -> None: ...

    @abstractmethod
    def save_eval_run(self, run: EvalRun) -> None:
        """Store a run; a resumed run replaces its partial self."""

    @abstractmethod
    def eval_runs(self) -> list[EvalRun]:
        """The stored runs, oldest first."""


# -- records to rows (the vectors in each backend's own encoding) ------------------------------------------------------
def document_row(record: DocumentRecord) -> Row:
    return (
        record.id,
        record.path,
        record.name,
        record.sha256,
        record.source_type.value,
        record.title,
        record.n_pages,
        record.outline_source,
        record.tags.model_dump_json(),
        record.ingested_at,
    )


def page_rows(document_id: str, pages: list[Page]) -> list[Row]:
    return [(document_id, p.number, p.label, p.text, p.error, p.ocr_confidence) for p in pages]


def node_rows(document_id: str, nodes: list[TreeNode]) -> list[Row]:
    return [
        (
            n.id,
            document_id,
            n.parent_id,
            n.position,
            n.level,
            n.title,
            json.dumps(n.title_path),
            n.start_page,
            n.end_page,
            n.start_offset,
            n.end_offset,
        )
        for n in nodes
    ]


def chunk_rows(document_id: str, chunks: list[Chunk], vectors: list[Any]) -> list[Row]:
    return [
        (
            c.id,
            document_id,
            c.position,
            c.text,
            c.start_offset,
            c.end_offset,
            c.start_page,
            c.end_page,
            c.section_id,
            json.dumps(c.section_path),
            c.start_time,
            c.end_time,
            json.dumps(c.speakers),
            c.index_version,
            vector,
            c.ocr_confidence,
            c.table_header,
        )
        for c, vector in zip(chunks, vectors, strict=True)
    ]


def section_rows(document_id: str, sections: SectionSummaries) -> list[tuple[str, str, int, str, np.ndarray]]:
    return [
        (document_id, node.node_id, position, node.model_dump_json(), vector)
        for position, (node, vector) in enumerate(zip(sections.nodes, sections.vectors, strict=True))
    ]


def eval_run_row(run: EvalRun) -> Row:
    return (
        run.id,
        run.created_at,
        run.mode,
        json.dumps(run.config),
        json.dumps(run.summary),
        json.dumps(run.per_question),
    )


# -- rows to records --------------------------------------------------------------------------------------------------
def tree_from_rows(rows: Sequence[RowMapping], pages: list[Page]) -> list[TreeNode]:
    """Tree nodes from their stored rows (in position order), their text cut from the document's text (its `pages`
    joined as offsets count them)."""
    text = PAGE_SEPARATOR.join(page.text for page in pages)
    nodes = [
        TreeNode(
            id=r["id"],
            document_id=r["document_id"],
            parent_id=r["parent_id"],
            position=r["position"],
            level=r["level"],
            title=r["title"],
            title_path=json.loads(r["title_path"]),
            start_page=r["start_page"],
            end_page=r["end_page"],
            start_offset=r["start_offset"],
            end_offset=r["end_offset"],
            text=text[r["start_offset"] : r["end_offset"]].strip(),
        )
        for r in rows
    ]
    by_id = {node.id: node for node in nodes}
    for node in nodes:
        if node.parent_id in by_id:
            by_id[node.parent_id].children_ids.append(node.id)
    return nodes


def page_from_row(row: RowMapping) -> Page:
    return Page(
        number=row["number"],
        label=row["label"],
        text=row["text"],
        error=row["error"],
        ocr_confidence=row["ocr_confidence"],
    )


def chunk_from_row(row: RowMapping, document: DocumentRecord) -> Chunk:
    return Chunk(
        id=row["id"],
        document_id=row["document_id"],
        source=document.name,
        position=row["position"],
        text=row["text"],
        start_offset=row["start_offset"],
        end_offset=row["end_offset"],
        start_page=row["start_page"],
        end_page=row["end_page"],
        section_id=row["section_id"],
        section_path=json.loads(row["section_path"]),
        start_time=row["start_time"],
        end_time=row["end_time"],
        speakers=json.loads(row["speakers"]),
        tags=document.tags,
        index_version=row["index_version"],
        ocr_confidence=row["ocr_confidence"],
        table_header=row["table_header"],
    )


def document_from_row(row: RowMapping) -> DocumentRecord:
    return DocumentRecord(
        id=row["id"],
        path=row["path"],
        name=row["name"],
        sha256=row["sha256"],
        source_type=SourceType(row["source_type"]),
        title=row["title"],
        n_pages=row["n_pages"],
        n_chunks=row["n_chunks"],
        n_nodes=row["n_nodes"],
        outline_source=row["outline_source"],
        tags=DocumentTags.model_validate_json(row["tags"]),
        ingested_at=row["ingested_at"],
    )


def eval_run_from_row(row: RowMapping) -> EvalRun:
    return EvalRun(
        id=row["id"],
        created_at=row["created_at"],
        mode=row["mode"],
        config=json.loads(row["config"]),
        summary=json.loads(row["summary"]),
        per_question=json.loads(row["per_question"]),
    )
