"""Turning one file into a document ready to embed: load -> section tree -> chunks. Runs in a worker process
during ingestion, so it imports nothing heavy."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from pagegraph.errors import DocumentError
from pagegraph.indexing.chunking import chunk_document
from pagegraph.indexing.loaders import load_document
from pagegraph.indexing.manifest import IndexParams
from pagegraph.indexing.minilm import count_tokens
from pagegraph.indexing.tree import build_tree, section_outline
from pagegraph.state.records import Chunk, DocumentRecord, DocumentTags, LoadedDocument, TreeNode, now_iso


@dataclass
class PreparedDocument:
    record: DocumentRecord
    loaded: LoadedDocument
    nodes: list[TreeNode]
    chunks: list[Chunk]


def document_id(path: str, sha256: str) -> str:
    return hashlib.sha256(f"{path}\0{sha256}".encode()).hexdigest()[:16]


def prepare_document(path: Path, sha256: str, tags: DocumentTags, params: IndexParams) -> PreparedDocument:
    loaded = load_document(path, params.heading_pattern)
    doc_id = document_id(str(path), sha256)
    entries, outline_source = section_outline(loaded)
    nodes = build_tree(loaded, doc_id, entries)
    chunks = chunk_document(loaded, nodes, params.chunking(), tags, params.index_version, count_tokens=count_tokens)
    if not chunks:
        raise DocumentError(path, "no text to index")
    record = DocumentRecord(
        id=doc_id,
        path=str(path),
        name=loaded.name,
        sha256=sha256,
        source_type=loaded.source_type,
        title=loaded.title,
        n_pages=len(loaded.pages),
        n_chunks=len(chunks),
        n_nodes=len(nodes),
        outline_source=outline_source,
        tags=tags,
        ingested_at=now_iso(),
    )
    return PreparedDocument(record, loaded, nodes, chunks)


def timed_prepare(
    path: Path, sha256: str, tags: DocumentTags, params: IndexParams
) -> tuple[PreparedDocument | str, float]:
    """prepare_document for a worker: a failure comes back as its reason, with the seconds spent either way."""
    began = time.perf_counter()
    try:
        return prepare_document(path, sha256, tags, params), time.perf_counter() - began
    except DocumentError as exc:
        return exc.reason, time.perf_counter() - began
    except Exception as exc:  # a bug or a file no loader anticipated must not stop the other files
        return f"unexpected error while reading ({type(exc).__name__}: {exc})", time.perf_counter() - began


def lower_priority() -> None:
    """Worker initializer: parsing yields the CPU to the embedder, which is what ingestion waits on."""
    os.nice(10)
