"""Incremental ingestion: load -> tree -> chunks -> embed -> store, one document at a time, committed whole."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import numpy as np

from pagegraph.errors import DocumentError
from pagegraph.indexing.chunking import chunk_document
from pagegraph.indexing.index import Index
from pagegraph.indexing.loaders import SUPPORTED_EXTENSIONS, load_document
from pagegraph.indexing.store import now_iso
from pagegraph.indexing.tree import build_tree, section_outline
from pagegraph.state.records import Chunk, DocumentRecord, DocumentTags, LoadedDocument, TreeNode

log = logging.getLogger(__name__)

Status = Literal["added", "updated", "unchanged", "retagged", "failed", "skipped", "removed"]


@dataclass
class FileOutcome:
    path: str
    status: Status
    pages: int = 0
    chunks: int = 0
    reason: str = ""

    @property
    def name(self) -> str:
        return Path(self.path).name


@dataclass
class IngestSummary:
    outcomes: list[FileOutcome] = field(default_factory=list)
    seconds: float = 0.0
    parse_seconds: float = 0.0
    embed_seconds: float = 0.0
    pages_parsed: int = 0
    chunks_embedded: int = 0

    def count(self, status: Status) -> int:
        return sum(1 for outcome in self.outcomes if outcome.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "failed"]


class IngestProgress(Protocol):
    def start(self, total_files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def pages_parsed(self, pages: int) -> None: ...
    def chunks_planned(self, chunks: int) -> None: ...
    def chunks_embedded(self, chunks: int, seconds: float) -> None: ...
    def file_finished(self, outcome: FileOutcome) -> None: ...


class SilentProgress:
    def start(self, total_files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def pages_parsed(self, pages: int) -> None: ...
    def chunks_planned(self, chunks: int) -> None: ...
    def chunks_embedded(self, chunks: int, seconds: float) -> None: ...
    def file_finished(self, outcome: FileOutcome) -> None: ...


def collect_files(paths: Iterable[Path]) -> tuple[list[Path], list[FileOutcome]]:
    """Expand folders into the supported files they hold; a named file is kept whatever its type, so that an
    unsupported one is reported rather than ignored. Files of other types found in folders are listed as skipped."""
    files: list[Path] = []
    skipped: list[FileOutcome] = []
    for path in paths:
        if path.is_dir():
            for found in sorted(p for p in path.rglob("*") if p.is_file()):
                if any(part.startswith(".") for part in found.relative_to(path).parts):
                    continue
                if found.suffix.lower() in SUPPORTED_EXTENSIONS:
                    files.append(found.resolve())
                else:
                    skipped.append(FileOutcome(str(found.resolve()), "skipped", reason=f"unsupported type '{found.suffix}'"))
        else:
            files.append(path.resolve() if path.exists() else path.absolute())
    return list(dict.fromkeys(files)), skipped


def document_id(path: str, sha256: str) -> str:
    return hashlib.sha256(f"{path}\0{sha256}".encode()).hexdigest()[:16]


@dataclass
class _Job:
    path: Path
    sha256: str
    existing: DocumentRecord | None
    tags: DocumentTags


@dataclass
class PreparedDocument:
    record: DocumentRecord
    loaded: LoadedDocument
    nodes: list[TreeNode]
    chunks: list[Chunk]


class Ingestor:
    def __init__(self, index: Index, progress: IngestProgress | None = None) -> None:
        self.index = index
        self.progress = progress or SilentProgress()

    def run(self, paths: list[Path], tags: DocumentTags | None = None, prune: bool = False) -> IngestSummary:
        """Ingest files and folders. `tags` None keeps the tags of documents already indexed (new ones get defaults).

        The next document is parsed on a worker thread while the current one is embedded: pypdf holds the GIL,
        the embedder releases it, so the two overlap instead of adding up."""
        started = time.perf_counter()
        summary = IngestSummary()
        files, skipped = collect_files(paths)
        summary.outcomes.extend(skipped)
        self.progress.start(len(files))
        jobs = []
        for path in files:
            job_or_outcome = self._triage(path, tags)
            if isinstance(job_or_outcome, FileOutcome):
                self._finish(job_or_outcome, summary)
            else:
                jobs.append(job_or_outcome)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pagegraph-parse") as parser:
            pending = parser.submit(self._timed_prepare, jobs[0]) if jobs else None
            for position, job in enumerate(jobs):
                self.progress.file_started(job.path)
                prepared, seconds = pending.result()
                if position + 1 < len(jobs):
                    pending = parser.submit(self._timed_prepare, jobs[position + 1])
                summary.parse_seconds += seconds
                self._finish(self._store(job, prepared, summary), summary)
        if prune:
            summary.outcomes.extend(self._prune())
        if self.index.bm25_is_stale():
            self.index.refresh_bm25()
        summary.seconds = time.perf_counter() - started
        return summary

    def _finish(self, outcome: FileOutcome, summary: IngestSummary) -> None:
        summary.outcomes.append(outcome)
        self.progress.file_finished(outcome)

    def _triage(self, path: Path, tags: DocumentTags | None) -> _Job | FileOutcome:
        """Settle what needs no parsing (unreadable, unchanged, retagged); the rest becomes a job."""
        try:
            data = path.read_bytes()
        except OSError as exc:
            reason = "no such file" if isinstance(exc, FileNotFoundError) else f"cannot be read ({exc.strerror or exc})"
            return self._failed(path, reason)
        sha256 = hashlib.sha256(data).hexdigest()
        existing = self.index.store.document_by_path(str(path))
        if existing and existing.sha256 == sha256:
            if tags is not None and tags != existing.tags:
                self._retag(existing, tags)
                return FileOutcome(str(path), "retagged", existing.n_pages, existing.n_chunks)
            return FileOutcome(str(path), "unchanged", existing.n_pages, existing.n_chunks)
        return _Job(path, sha256, existing, tags or (existing.tags if existing else DocumentTags()))

    def _timed_prepare(self, job: _Job) -> tuple[PreparedDocument | DocumentError, float]:
        began = time.perf_counter()
        try:
            return self.prepare(job.path, job.sha256, job.tags), time.perf_counter() - began
        except DocumentError as exc:
            return exc, time.perf_counter() - began

    def _store(self, job: _Job, prepared: PreparedDocument | DocumentError, summary: IngestSummary) -> FileOutcome:
        if isinstance(prepared, DocumentError):
            return self._failed(job.path, prepared.reason)
        summary.pages_parsed += prepared.record.n_pages
        self.progress.pages_parsed(prepared.record.n_pages)
        embeddings = self._embed(prepared.chunks, summary)
        store, existing = self.index.store, job.existing
        store.add_to_journal(prepared.record.id)
        self.index.vectors.add(prepared.chunks, embeddings)
        store.commit_document(
            prepared.record, prepared.loaded.pages, prepared.nodes, prepared.chunks, embeddings,
            replaces=existing.id if existing else None,
        )
        if existing:
            self.index.vectors.delete_document(existing.id)
            store.clear_journal([existing.id])
        return FileOutcome(str(job.path), "updated" if existing else "added", prepared.record.n_pages, len(prepared.chunks))

    def prepare(self, path: Path, sha256: str, tags: DocumentTags) -> PreparedDocument:
        params = self.index.params
        loaded = load_document(path, params.heading_pattern)
        doc_id = document_id(str(path), sha256)
        entries, outline_source = section_outline(loaded)
        nodes = build_tree(loaded, doc_id, entries)
        chunks = chunk_document(
            loaded, nodes, params.chunking(), tags, params.index_version, count_tokens=self.index.embedder.count_tokens
        )
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

    def _embed(self, chunks: list[Chunk], summary: IngestSummary) -> np.ndarray:
        embedder = self.index.embedder
        embedder.load()
        self.progress.chunks_planned(len(chunks))
        # Similar lengths in a batch waste less work on padding; results go back to chunk order.
        order = sorted(range(len(chunks)), key=lambda i: len(chunks[i].text))
        vectors = np.zeros((len(chunks), self.index.params.embedding_dimension), dtype=np.float32)
        step = embedder.batch_size
        for start in range(0, len(order), step):
            batch = order[start : start + step]
            began = time.perf_counter()
            vectors[batch] = embedder.embed([chunks[i].text for i in batch])
            seconds = time.perf_counter() - began
            summary.embed_seconds += seconds
            summary.chunks_embedded += len(batch)
            self.progress.chunks_embedded(len(batch), seconds)
        return vectors

    def _retag(self, existing: DocumentRecord, tags: DocumentTags) -> None:
        self.index.store.update_tags(existing.id, tags)
        self.index.vectors.update_metadata(self.index.store.chunks(existing.id))

    def _failed(self, path: Path, reason: str) -> FileOutcome:
        self.index.store.record_failure(str(path), path.name, reason)
        return FileOutcome(str(path), "failed", reason=reason)

    def _prune(self) -> list[FileOutcome]:
        """Drop documents whose file no longer exists on disk."""
        removed = []
        for doc in self.index.store.documents():
            if not Path(doc.path).exists():
                self.index.store.remove_document(doc.id)
                self.index.vectors.delete_document(doc.id)
                self.index.store.clear_journal([doc.id])
                removed.append(FileOutcome(doc.path, "removed", doc.n_pages, doc.n_chunks))
        for path, _, _ in self.index.store.failures():
            if not Path(path).exists():
                self.index.store.forget_failure(path)
        return removed
