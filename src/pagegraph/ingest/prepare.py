"""Turning one file into a document ready to embed: load -> section tree -> chunks. Runs in a worker process
during ingestion, so it imports nothing heavy."""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import queue
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pagegraph.errors import DocumentError, IngestCancelled
from pagegraph.ingest.chunking import chunk_document
from pagegraph.ingest.document_dates import document_date
from pagegraph.ingest.filing_cover import filing_cover
from pagegraph.ingest.loaders import ReadOptions, load_document
from pagegraph.ingest.tree import build_tree, section_outline
from pagegraph.llm.minilm import count_tokens
from pagegraph.state.documents import Chunk, DocumentRecord, DocumentTags, LoadedDocument, TreeNode, now_iso
from pagegraph.store.manifest import IndexParams

STOP_POLL_SECONDS = 0.2  # how often a wait for the parser looks whether the ingest was cancelled


@dataclass
class PreparedDocument:
    record: DocumentRecord
    loaded: LoadedDocument
    nodes: list[TreeNode]
    chunks: list[Chunk]


def document_id(path: str, sha256: str) -> str:
    return hashlib.sha256(f"{path}\0{sha256}".encode()).hexdigest()[:16]


def prepare_document(
    path: Path, sha256: str, tags: DocumentTags, params: IndexParams, read: ReadOptions | None = None
) -> PreparedDocument:
    loaded = load_document(path, params.heading_pattern, read or ReadOptions())
    if (cover := filing_cover(loaded)) is not None:
        loaded = loaded.model_copy(update={"title": cover.title})
    if tags.date is None:
        tags = tags.model_copy(update={"date": document_date(loaded)})
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
    path: Path, sha256: str, tags: DocumentTags, params: IndexParams, read: ReadOptions | None
) -> tuple[PreparedDocument | str, float]:
    """prepare_document for a worker: a failure comes back as its reason, with the seconds spent either way."""
    began = time.perf_counter()
    try:
        return prepare_document(path, sha256, tags, params, read), time.perf_counter() - began
    except DocumentError as exc:
        return exc.reason, time.perf_counter() - began
    except Exception as exc:  # a bug or a file no loader anticipated must not stop the other files
        return f"unexpected error while reading ({type(exc).__name__}: {exc})", time.perf_counter() - began


@dataclass(frozen=True)
class ParseBudget:
    """What the parser process may spend on one document: seconds, and address space (its memory limit)."""

    seconds: float
    memory_bytes: int


class ParseWorker:
    """A child process (running `serve_parse_jobs`) that prepares the documents sent to it, in order, at
    low CPU priority so the embedder keeps the cores, within a budget: an address-space limit set in the child, and
    a time limit per result after which the parent stops it. Jobs and results travel as pickles over its stdin and
    stdout.

    A plain subprocess rather than multiprocessing: multiprocessing's spawn re-runs the caller's script in the
    child, which breaks any user script without a `__main__` guard."""

    command = [sys.executable, "-c", "from pagegraph.ingest.prepare import serve_parse_jobs; serve_parse_jobs()"]

    def __init__(self, budget: ParseBudget) -> None:
        self.budget = budget

        def limit_memory() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (budget.memory_bytes, budget.memory_bytes))

        self._process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=limit_memory
        )
        assert self._process.stdin is not None and self._process.stdout is not None  # both piped, above
        self._to_worker, self._from_worker = self._process.stdin, self._process.stdout
        self._results: queue.Queue[tuple[PreparedDocument | str, float] | EOFError] = queue.Queue()
        threading.Thread(target=self._read_results, daemon=True).start()

    def _read_results(self) -> None:
        """Results as the worker writes them, into a queue `result` waits on with a timeout; EOFError when it ends."""
        while True:
            try:
                self._results.put(pickle.load(self._from_worker))
            except Exception as exc:  # noqa: BLE001 - EOF or a truncated pickle: the worker is gone either way
                self._results.put(EOFError(str(exc)))
                return

    def submit(self, path: Path, sha256: str, tags: DocumentTags, params: IndexParams, read: ReadOptions) -> None:
        try:
            pickle.dump((path, sha256, tags, params, read), self._to_worker)
            self._to_worker.flush()
        except BrokenPipeError:
            pass  # the worker died; result() reports it as EOFError for the document it was on

    def result(self, stop: threading.Event | None = None) -> tuple[PreparedDocument | str, float]:
        """The next result; a worker that died mid-document raises EOFError, one past its time TimeoutError, and a
        `stop` set while waiting IngestCancelled (the caller then kills the worker)."""
        deadline = time.monotonic() + self.budget.seconds
        while True:
            try:
                result = self._results.get(timeout=min(STOP_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
                break
            except queue.Empty:
                if stop is not None and stop.is_set():
                    raise IngestCancelled("the ingest was cancelled") from None
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"no result in {self.budget.seconds:g} s") from None
        if isinstance(result, EOFError):
            raise result
        return result

    def close(self, *, kill: bool = False) -> None:
        if kill:
            self._process.kill()
        try:
            self._to_worker.close()
        except BrokenPipeError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def serve_parse_jobs() -> None:
    """The worker's loop: read a job from stdin, write its result to stdout, until stdin closes."""
    os.nice(10)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it then closes our stdin
    # Results own the real stdout; anything a library prints goes to stderr instead of corrupting them.
    results = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    jobs = sys.stdin.buffer
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        pickle.dump(timed_prepare(*job), results)
        results.flush()
