"""Incremental ingestion: load -> tree -> chunks -> embed -> store, one document at a time, committed whole."""

from __future__ import annotations

import errno
import hashlib
import threading
import time
from collections import deque
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pagegraph.access.records import Access
from pagegraph.errors import IngestCancelled
from pagegraph.ingest.loaders import SUPPORTED_EXTENSIONS, ReadOptions
from pagegraph.ingest.ocr import ocr_options
from pagegraph.ingest.prepare import STOP_POLL_SECONDS, ParseBudget, ParseWorker, PreparedDocument
from pagegraph.ingest.summaries import ExtractiveSummarizer, SummarySource
from pagegraph.ingest.tree_summaries import (
    SECTION_VECTOR_RECIPE,
    ExtractiveNodeSummarizer,
    TreeSummarizer,
    section_vectors,
)
from pagegraph.state.documents import CONFIDENTIALITY_LEVELS, Chunk, DocumentRecord, DocumentTags, TreeNode
from pagegraph.state.ingest import Status
from pagegraph.store.chunk_text import document_label, search_text
from pagegraph.store.index import Index
from pagegraph.store.records import DocumentWrite, SectionSummaries

PARSE_AHEAD = 2

NOT_FOUND = "no such file"


@dataclass
class FileOutcome:
    path: str
    status: Status
    pages: int = 0
    chunks: int = 0
    reason: str = ""
    lowers_confidentiality: bool = False  # refused as it would declassify the document without being asked to

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
    # documents mostly in a script the index's embedder does not read (found by keyword search only)
    unread_by_embedder: list[str] = field(default_factory=list)

    def count(self, status: Status) -> int:
        return sum(1 for outcome in self.outcomes if outcome.status == status)

    @property
    def failed(self) -> list[FileOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "failed"]


class IngestProgress:
    """Receives progress events during a run; this base ignores them."""

    def start(self, total_files: int) -> None: ...
    def file_started(self, path: Path) -> None: ...
    def pages_parsed(self, pages: int) -> None: ...
    def chunks_planned(self, chunks: int) -> None: ...
    def chunks_embedded(self, chunks: int, seconds: float) -> None: ...
    def file_finished(self, outcome: FileOutcome) -> None: ...


def inside(path: Path, roots: list[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def _link_problem(link: Path, roots: list[Path] | None) -> str | None:
    """Why a symbolic link found in a folder cannot be ingested; None when it leads to a readable file. Under
    `roots`, a link leading out of them gets one answer whether or not its target exists."""
    try:
        if roots is not None and not inside(link.resolve(), roots):
            return "a link out of the ingest folders"
        target = link.resolve(strict=True)
    except RuntimeError:
        return "a link loop"
    except OSError as exc:
        return "a link loop" if exc.errno == errno.ELOOP else "a broken link (its target does not exist)"
    return None if target.is_file() or target.is_dir() else "a link to something that is not a file"


def collect_files(paths: Iterable[Path], roots: list[Path] | None = None) -> tuple[list[Path], list[FileOutcome]]:
    """Expand folders into the supported files they hold; a named file is kept whatever its type, so that an
    unsupported one is reported rather than ignored. Files of other types found in folders are listed as skipped,
    links that lead nowhere (or, under `roots`, out of them) as failed; links to folders are not followed."""
    files: list[Path] = []
    outcomes: list[FileOutcome] = []
    for path in paths:
        if not path.is_dir():
            files.append(path.resolve() if path.exists() else path.absolute())
            continue
        for found in sorted(path.rglob("*")):
            if any(part.startswith(".") for part in found.relative_to(path).parts):
                continue
            if found.is_symlink() and (problem := _link_problem(found, roots)):
                outcomes.append(FileOutcome(str(found), "failed", reason=problem))
            elif found.is_dir():
                if found.is_symlink():
                    outcomes.append(FileOutcome(str(found), "skipped", reason="a link to a folder (not followed)"))
            elif found.suffix.lower() in SUPPORTED_EXTENSIONS:
                files.append(found.resolve())
            elif found.is_file():
                outcomes.append(
                    FileOutcome(str(found.resolve()), "skipped", reason=f"unsupported type '{found.suffix}'")
                )
    named = {str(path) for path in files}
    return list(dict.fromkeys(files)), [outcome for outcome in outcomes if outcome.path not in named]


@dataclass
class _Job:
    path: Path
    sha256: str
    existing: DocumentRecord | None
    tags: DocumentTags


class Ingestor:
    def __init__(
        self,
        index: Index,
        progress: IngestProgress | None = None,
        *,
        access: Access | None = None,
        roots: list[Path] | None = None,
        declassify: bool = False,
        stop: threading.Event | None = None,
    ) -> None:
        """Document and section summaries are extracted without a model, so a document is searchable as soon as
        it is embedded; `pagegraph summarize` (ingest.refine) replaces them with the model's later. A server
        user's run passes their `access` and the folders it may read (`roots`): an indexed document they may not
        change is answered as a missing file, prune leaves it alone, and nothing out of the roots is read.

        Setting `stop` (a cancelled server run) ends the run within a fraction of a second, or one embedding batch,
        with IngestCancelled: the parser process is killed, documents already committed stay, none is half-written."""
        self.index = index
        self.stop = stop
        self.progress = progress or IngestProgress()
        self.access = access
        self.roots = roots
        self.declassify = declassify
        self.summarizer = ExtractiveSummarizer()
        self.section_summarizer = ExtractiveNodeSummarizer()
        settings = index.settings
        self.read = ReadOptions(
            ocr_options(settings),
            settings.ingest.pdf_tables,
            settings.ingest.pdf_table_seconds,
            max_file_bytes=settings.limits.max_file_bytes,
            max_unpacked_bytes=settings.limits.max_unpacked_bytes,
            max_unpack_ratio=settings.limits.max_unpack_ratio,
            max_pages=settings.limits.max_pages,
            max_chars=settings.limits.max_document_chars,
        )

    def run(self, paths: list[Path], tags: DocumentTags | None = None, prune: bool = False) -> IngestSummary:
        """Ingest files and folders. `tags` None keeps the tags of documents already indexed (new ones get defaults).

        The next document is parsed in a worker process while the current one is embedded, so the two overlap
        instead of adding up."""
        started = time.perf_counter()
        summary = IngestSummary()
        files, listed = collect_files(paths, self.roots)
        summary.outcomes.extend(listed)
        named = {path.resolve() if path.exists() else path.absolute() for path in paths if not path.is_dir()}
        self._section_vectors_from_chunks()
        self.progress.start(len(files))
        jobs = []
        for path in files:
            self._stop_if_cancelled()
            job_or_outcome = self._triage(path, tags, named=path in named)
            if job_or_outcome is None:
                continue
            if isinstance(job_or_outcome, FileOutcome):
                self._finish(job_or_outcome, summary)
            else:
                jobs.append(job_or_outcome)
        held: list[_Job] = []  # jobs another process held, or had done, when this one reached them
        try:
            self._ingest(jobs, summary, held)
            for job in held:
                # Wait until the other process lets go (committed, or died), then look again: most are unchanged now.
                while not self.index.store.claim(str(job.path)):
                    self._stop_if_cancelled()
                    time.sleep(STOP_POLL_SECONDS)
                again = self._triage(job.path, tags, named=job.path in named)
                if isinstance(again, _Job):
                    self._ingest([again], summary, [])
                elif again is not None:
                    if again.status == "unchanged":
                        again.reason = "ingested meanwhile by another process"
                    self.index.store.release(str(job.path))
                    self._finish(again, summary)
        finally:
            for job in jobs:
                self.index.store.release(str(job.path))
        if prune:
            summary.outcomes.extend(self._prune([*named, *(path.resolve() for path in paths if path.is_dir())]))
        self._summarize_missing()
        self.index.make_searchable()
        summary.seconds = time.perf_counter() - started
        return summary

    def _ingest(self, jobs: list[_Job], summary: IngestSummary, held: list[_Job]) -> None:
        """Parse, embed and commit the jobs this process can claim; those another process holds go to `held`."""
        parsed = self._prepared(jobs, held)
        try:
            for job, prepared, seconds in parsed:
                self._stop_if_cancelled()
                self.progress.file_started(job.path)
                summary.parse_seconds += seconds
                try:
                    self._finish(self._store(job, prepared, summary), summary)
                finally:
                    self.index.store.release(str(job.path))
        finally:
            parsed.close()  # a cancelled or failed run stops its parser now, not when the traceback is freed

    def _stop_if_cancelled(self) -> None:
        if self.stop is not None and self.stop.is_set():
            raise IngestCancelled("the ingest was cancelled")

    def _finish(self, outcome: FileOutcome, summary: IngestSummary) -> None:
        summary.outcomes.append(outcome)
        self.progress.file_finished(outcome)

    def _triage(self, path: Path, tags: DocumentTags | None, *, named: bool) -> _Job | FileOutcome | None:
        """Settle what needs no parsing (unreadable, unchanged, retagged); the rest becomes a job. None: a file found
        in a folder that is a document the user may not change, left out of the report (a named one reads as
        missing), so that its name says nothing."""
        existing = self.index.store.document_by_path(str(path))
        if existing and self.access is not None and not self.access.may_write(existing.tags):
            return FileOutcome(str(path), "failed", reason=NOT_FOUND) if named else None
        if existing and tags is not None and (lowered := self._lowers(existing.tags, tags)):
            return FileOutcome(str(path), "failed", reason=lowered, lowers_confidentiality=True)
        try:
            data = path.read_bytes()
        except OSError as exc:
            reason = NOT_FOUND if isinstance(exc, FileNotFoundError) else f"cannot be read ({exc.strerror or exc})"
            return self._failed(path, reason)
        sha256 = hashlib.sha256(data).hexdigest()
        if existing and existing.sha256 == sha256:
            if tags is not None and tags.date is None:  # a date given before, or the file's own, stays
                tags = tags.model_copy(update={"date": existing.tags.date})
            if tags is not None and tags != existing.tags:
                self.index.retag(existing.id, tags)
                return FileOutcome(str(path), "retagged", existing.n_pages, existing.n_chunks)
            return FileOutcome(str(path), "unchanged", existing.n_pages, existing.n_chunks)
        return _Job(path, sha256, existing, tags or (existing.tags if existing else DocumentTags()))

    def _prepared(
        self, jobs: list[_Job], held: list[_Job]
    ) -> Generator[tuple[_Job, PreparedDocument | str, float], None, None]:
        """The jobs this process claims, each with its parsed document (or why it failed), in job order: parsed by a
        worker process within the parse budget (a hostile file takes down the worker, not the ingest), up to
        PARSE_AHEAD documents ahead of the one being embedded, so a slow-to-parse document rarely keeps the
        embedder waiting. A job is claimed just before it is parsed; one another process holds or has done goes to
        `held`."""
        if not jobs:
            return
        params = self.index.params
        pending = deque(jobs)
        settings = self.index.settings
        budget = ParseBudget(settings.ingest.parse_seconds, settings.ingest.parse_memory_bytes)
        worker = ParseWorker(budget)
        try:
            submitted = 0
            while pending:
                while submitted < min(PARSE_AHEAD, len(pending)):
                    job = pending[submitted]
                    if not self._claim(job):
                        held.append(job)
                        del pending[submitted]
                        continue
                    worker.submit(job.path, job.sha256, job.tags, params, self.read)
                    submitted += 1
                if not pending:
                    break
                try:
                    result = worker.result(self.stop)
                except IngestCancelled:
                    worker.close(kill=True)
                    raise
                except (EOFError, TimeoutError) as exc:
                    # The worker died on this document (a crash in a native library, past its memory budget) or
                    # overran its time: fail the document, start a new worker for the rest.
                    worker.close(kill=True)
                    worker, submitted = ParseWorker(budget), 0
                    result = (
                        (
                            f"parsing took longer than {budget.seconds:g} s (PAGEGRAPH_PARSE_SECONDS)"
                            if isinstance(exc, TimeoutError)
                            else "the parser process died while reading this file (a crash, or past "
                            f"PAGEGRAPH_PARSE_MEMORY_BYTES={budget.memory_bytes:,})"
                        ),
                        0.0,
                    )
                else:
                    submitted -= 1
                yield pending.popleft(), *result
        finally:
            worker.close(kill=bool(pending))  # left early: what it is parsing is not wanted

    def _claim(self, job: _Job) -> bool:
        """Claim the job's file for this process; False when another process holds it, or has committed this very
        content since the job was triaged (it ran ahead of this one): the held jobs' second look reports those."""
        path = str(job.path)
        if not self.index.store.claim(path):
            return False
        current = self.index.store.document_by_path(path)
        if current is not None and current.sha256 == job.sha256:
            self.index.store.release(path)
            return False
        return True

    def _lowers(self, current: DocumentTags, wanted: DocumentTags) -> str | None:
        """Why re-tagging a document would declassify it without being asked to; None when it would not."""
        levels = CONFIDENTIALITY_LEVELS
        if self.declassify or levels.index(wanted.confidentiality) >= levels.index(current.confidentiality):
            return None
        return (
            f"it is {current.confidentiality}; ingesting it as {wanted.confidentiality} would lower that: pass "
            "--declassify (server: `declassify: true`, admins only) to mean it"
        )

    def _store(self, job: _Job, prepared: PreparedDocument | str, summary: IngestSummary) -> FileOutcome:
        if isinstance(prepared, str):
            return self._failed(job.path, prepared)
        summary.pages_parsed += prepared.record.n_pages
        self.progress.pages_parsed(prepared.record.n_pages)
        record, loaded = prepared.record, prepared.loaded
        embeddings = self._embed(prepared.chunks, document_label(record.name, record.title), summary)
        if not self.index.embedder.reads("".join(page.text for page in loaded.pages[:20])):  # its first pages tell
            summary.unread_by_embedder.append(record.name)
        document_summary = self.summarizer.summarize(
            SummarySource.from_parts(record.name, record.title, record.source_type, loaded.pages, prepared.nodes)
        )
        sections = self._sections(prepared.nodes, prepared.chunks, embeddings)
        existing = job.existing
        document = DocumentWrite(
            record, loaded.pages, prepared.nodes, prepared.chunks, embeddings, document_summary, sections
        )
        written = self.index.commit_document(document, replaces=existing.id if existing else None)
        if not written:
            return FileOutcome(
                str(job.path),
                "unchanged",
                prepared.record.n_pages,
                len(prepared.chunks),
                "ingested meanwhile by another process",
            )
        return FileOutcome(
            str(job.path), "updated" if existing else "added", prepared.record.n_pages, len(prepared.chunks)
        )

    def _embed(self, chunks: list[Chunk], label: str, summary: IngestSummary) -> np.ndarray:
        embedder = self.index.embedder
        embedder.load()
        self.progress.chunks_planned(len(chunks))
        texts = [search_text(chunk, label) for chunk in chunks]
        # Similar lengths in a batch waste less work on padding; results go back to chunk order.
        order = sorted(range(len(chunks)), key=lambda i: len(texts[i]))
        vectors = np.zeros((len(chunks), self.index.params.embedding_dimension), dtype=np.float32)
        step = embedder.batch_size
        for start in range(0, len(order), step):
            batch = order[start : start + step]
            began = time.perf_counter()
            self._stop_if_cancelled()
            vectors[batch] = embedder.embed([texts[i] for i in batch])
            seconds = time.perf_counter() - began
            summary.embed_seconds += seconds
            summary.chunks_embedded += len(batch)
            self.progress.chunks_embedded(len(batch), seconds)
        return vectors

    def _sections(self, nodes: list[TreeNode], chunks: list[Chunk], embeddings: np.ndarray) -> SectionSummaries:
        settings = self.index.settings
        tree = TreeSummarizer(
            self.section_summarizer,
            settings.ingest.section_min_chars,
            settings.ingest.section_summary_workers,
            self.index.store.cached_section_summary,
        )
        summaries = tree.summarize(nodes)
        return SectionSummaries(summaries, section_vectors(summaries, nodes, chunks, embeddings), tree.new_entries)

    def _summarize_missing(self) -> None:
        """Documents indexed before document or section summaries existed get them now."""
        store = self.index.store
        have, have_sections = store.summaries(), store.documents_with_sections()
        for doc in store.documents():
            if doc.id in have and doc.id in have_sections:
                continue
            nodes = store.tree(doc.id)
            if doc.id not in have:
                source = SummarySource.from_parts(doc.name, doc.title, doc.source_type, store.pages(doc.id), nodes)
                store.set_summary(doc.id, self.summarizer.summarize(source))
            if doc.id not in have_sections:
                store.set_sections(doc.id, self._sections(nodes, *self._stored_chunks(doc.id)))

    def _section_vectors_from_chunks(self) -> None:
        """An index whose section vectors were embedded from the summaries gets them from the chunks instead, for
        every document at once before new documents join it, so that sections of old and new documents compete
        alike in the tree walk. No embedder call; only the vectors are written, so a summary that `pagegraph
        summarize` writes meanwhile is kept."""
        store = self.index.store
        if store.section_vector_recipe() == SECTION_VECTOR_RECIPE:
            return
        for document_id in store.documents_with_sections():
            sections = store.sections(document_id)
            vectors = section_vectors(sections, store.tree(document_id), *self._stored_chunks(document_id))
            store.set_section_vectors(document_id, {s.node_id: v for s, v in zip(sections, vectors, strict=True)})
        store.set_section_vector_recipe(SECTION_VECTOR_RECIPE)

    def _stored_chunks(self, document_id: str) -> tuple[list[Chunk], np.ndarray]:
        return self.index.store.chunks_with_vectors(document_id, self.index.params.embedding_dimension)

    def _failed(self, path: Path, reason: str) -> FileOutcome:
        self.index.store.record_failure(str(path), path.name, reason)
        return FileOutcome(str(path), "failed", reason=reason)

    def remove(self, names: list[str]) -> list[FileOutcome]:
        """Take the documents called `names` (as `inspect` shows a name, or the file's path) out of the index, with
        their chunks, vectors and keyword postings; their files are left as they are. A name that matches no
        document (or only ones this run's user may not change: the same answer) is reported as failed."""
        outcomes = []
        documents = self.index.store.documents()
        for name in names:
            found = [
                doc
                for doc in documents
                if name in (doc.name, doc.path) and (self.access is None or self.access.may_write(doc.tags))
            ]
            if not found:
                outcomes.append(FileOutcome(name, "failed", reason="no document in the index is called that"))
            for doc in found:
                self.index.remove_document(doc.id)
                outcomes.append(FileOutcome(doc.path, "removed", doc.n_pages, doc.n_chunks))
        self.index.make_searchable()
        return outcomes

    def _prune(self, scope: list[Path]) -> list[FileOutcome]:
        """Drop documents whose file no longer exists on disk, of those under the files and folders in `scope` (the
        run's; none named: every document), so that a machine prunes only what it ingests from."""
        removed = []
        for doc in self.index.store.documents():
            if self.access is not None and not self.access.may_write(doc.tags):
                continue
            if scope and not inside(Path(doc.path), scope):
                continue
            if not Path(doc.path).exists():
                self.index.remove_document(doc.id)
                removed.append(FileOutcome(doc.path, "removed", doc.n_pages, doc.n_chunks))
        for path, _, _ in self.index.store.failures():
            if self.roots is not None and not inside(Path(path), self.roots):
                continue
            if not Path(path).exists():
                self.index.store.forget_failure(path)
        return removed
