"""An index in a folder: the records in store.sqlite (the source of truth), the vectors in Chroma, BM25 and the
vector matrix kept with it, opened together and kept consistent.

Writers hold an exclusive lock on the folder. A writer that opens an index after a run was killed brings the
derived indexes up to the committed documents before it goes on: it removes vectors without a committed document,
adds vectors Chroma lacks, rebuilds BM25 and the vector matrix, and records the recovery for `inspect`. Readers never
write: one that finds BM25 behind the store searches the documents BM25 was built with (those removed since are
left out) and names the documents committed since, which the next ingest makes searchable (`unsearchable`).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable
from functools import cached_property, lru_cache
from itertools import islice
from pathlib import Path
from typing import TextIO

import numpy as np

from pagegraph.config import SERVER_FOLDER, Settings
from pagegraph.errors import IndexLockedError, PagegraphError
from pagegraph.llm.embedder import ChromaEmbeddingFunction, Embedder
from pagegraph.state.documents import Chunk, DocumentRecord, DocumentTags, now_iso
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.bm25 import BM25Index, top_rows
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.chunk_text import document_label, search_text
from pagegraph.store.index_base import (
    KeywordSearchState,
    StoredReads,
    check_manifest,
    few_allowed,
    index_embedder,
    no_index,
)
from pagegraph.store.manifest import MANIFEST_FILE, IndexParams, Manifest, read_manifest, write_manifest
from pagegraph.store.profiles import DocumentProfiles, chunk_centroids
from pagegraph.store.records import DocumentWrite
from pagegraph.store.sqlite import SqliteStore
from pagegraph.store.vectors import CHROMA_DIR, VectorStore

logger = logging.getLogger(__name__)

_LOCK_FILE = ".lock"
THREADS_FILE = "checkpoints.sqlite"  # LangGraph server threads (pagegraph.server.checkpointer), kept beside the index
SUMMARIZE_LOG = "summarize.log"  # what `pagegraph serve`'s background `pagegraph summarize` prints
_REBUILD_BATCH = 1000


class FolderIndex(StoredReads[SqliteStore]):
    """An index folder (`store.index.open_index` opens the right kind for the settings)."""

    def __init__(
        self,
        folder: Path,
        settings: Settings,
        params: IndexParams | None = None,
        *,
        write: bool = False,
        embedder: Embedder | None = None,
        outdated_ok: bool = False,
        wait_for_writer: Callable[[str], None] | None = None,
    ) -> None:
        """Open (and with `write`, create) an index. `params` None means: whatever the index was built with. An
        index of an older chunk text recipe is refused unless `outdated_ok` (only to delete it)."""
        self.folder = folder
        self.settings = settings
        self._lock: TextIO | None = None
        if write:
            folder.mkdir(parents=True, exist_ok=True)
            # the manifest is read once this process writes alone: another writer may have just created the index
            self._acquire_lock(wait_for_writer)
        try:
            manifest = _folder_manifest(folder, params, write, outdated_ok)
        except PagegraphError:
            self._release_lock()
            raise
        self.embedder = index_embedder(settings, manifest.params if manifest else params, embedder)
        if manifest is None:
            manifest = Manifest(embedding_backend=self.embedder.backend, params=params or IndexParams())
            write_manifest(folder, manifest)
        self.manifest = manifest
        self.params = manifest.params
        self.store = SqliteStore(folder, read_only=not write)
        # Chroma cannot open a folder it may not write (it has no read-only client): a reader of such a folder
        # searches the vector matrix kept with BM25 instead, exactly.
        self.vectors = (
            VectorStore(folder, manifest.index_id, ChromaEmbeddingFunction(self.embedder), settings.storage.chroma_url)
            if write or settings.storage.chroma_url or os.access(folder / CHROMA_DIR, os.W_OK)
            else None
        )
        if self.vectors is None:
            logger.info("index %s is read-only here: dense search is exact over its vector matrix", folder)
        self.bm25 = BM25Index(folder, self.params)
        # the BM25 score of every catalog chunk for a query; a question's searches ask for the same ones several times
        self._keyword_scores = lru_cache(maxsize=8)(self.bm25.scores)
        if write:
            self._recover()
        self.generation = self.bm25.built_generation()
        self.store_generation = self.store.generation()  # what was committed when it was opened
        self.unsearchable = [] if write else [doc.name for doc in self._documents_after_bm25()]
        if self.unsearchable:
            logger.warning(
                "index %s: %d document(s) committed since its keyword index was built are not searchable yet (%s); "
                "the next `pagegraph ingest` into it makes them searchable",
                folder,
                len(self.unsearchable),
                ", ".join(self.unsearchable[:5]) + (", ..." if len(self.unsearchable) > 5 else ""),
            )

    def chroma(self) -> VectorStore:
        """The folder's Chroma collection; a reader of a folder it may not write has none (it searches the vector
        matrix)."""
        if self.vectors is None:
            raise PagegraphError(f"index {self.folder} is read-only here: its Chroma collection is not open")
        return self.vectors

    def _acquire_lock(self, wait_for_writer: Callable[[str], None] | None) -> None:
        lock = open(self.folder / _LOCK_FILE, "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            reason = f"index {self.folder} is being written by another pagegraph process"
            if wait_for_writer is None:
                lock.close()
                raise IndexLockedError(reason) from exc
            wait_for_writer(reason)
            fcntl.flock(lock, fcntl.LOCK_EX)
        self._lock = lock

    def _recover(self) -> None:
        """Bring Chroma, BM25 and the vector matrix up to the committed documents: drop vectors of documents that
        were being written or replaced when a run was killed, add the committed chunks Chroma lacks, rebuild a
        stale BM25. What was done is recorded in the store (`inspect` shows it)."""
        pending = self.store.journal()
        for document_id in pending:
            self.chroma().delete_document(document_id)
        self.store.clear_journal(pending)
        done = [f"dropped the vectors of {len(pending)} unfinished or replaced document(s)"] if pending else []
        if missing := self._chunks_missing_from_chroma():
            self.chroma().add(*self._stored(missing))
            done.append(f"added {len(missing)} committed chunk(s) missing from Chroma")
        if self.bm25_is_stale():
            built, generation = self.bm25.built_generation(), self.store.generation()
            self.refresh_bm25()
            if generation:  # a new index's first build is no recovery
                behind = f"built at generation {built}" if built is not None else "missing, or of an older tokenizer"
                done.append(f"rebuilt BM25 and the vector matrix ({behind}, store at generation {generation})")
        if done:
            self.store.record_recovery(now_iso(), "; ".join(done))

    def _documents_after_bm25(self) -> list[DocumentRecord]:
        """The stored documents none of whose chunks BM25 holds (committed after it was built); none while it is
        current."""
        if not self.bm25_is_stale():
            return []
        searchable = set(self.catalog.document_ids[self.catalog.live])
        return [doc for doc in self.store.documents() if doc.id not in searchable and doc.n_chunks]

    def _chunks_missing_from_chroma(self) -> list[str]:
        """Committed chunk ids Chroma does not hold (only looked for when the counts differ)."""
        if self.chroma().count() >= self.store.chunk_count():
            return []
        held = self.chroma().ids()
        return [chunk_id for chunk_id in self.store.chunk_ids() if chunk_id not in held]

    def _stored(self, chunk_ids: list[str]) -> tuple[list[Chunk], np.ndarray]:
        wanted = set(chunk_ids)
        pairs = [(chunk, vector) for chunk, vector in self.store.iter_chunks() if chunk.id in wanted]
        return [chunk for chunk, _ in pairs], np.stack([vector for _, vector in pairs])

    def make_searchable(self) -> None:
        """Make what was committed searchable: rebuild BM25 and the vector matrix when the store has moved on."""
        if self.bm25_is_stale():
            self.refresh_bm25()

    def keyword_search_state(self) -> KeywordSearchState:
        if not self.bm25_is_stale():
            return "current"
        return "older" if self.bm25.built_by_another_tokenizer() else "behind"

    def bm25_is_stale(self) -> bool:
        return self.bm25.built_generation() != self.store.generation()

    def refresh_bm25(self) -> None:
        generation = self.store.generation()  # read first: a document committed meanwhile makes it stale again
        labels = {doc.id: document_label(doc.name, doc.title) for doc in self.store.documents()}
        ids, texts, vectors = [], [], []
        for chunk, vector in self.store.iter_chunks():
            ids.append(chunk.id)
            texts.append(search_text(chunk, labels[chunk.document_id]))
            vectors.append(vector)
        matrix = np.stack(vectors) if vectors else np.zeros((0, self.params.embedding_dimension), dtype=np.float32)
        self.bm25.build(ids, texts, matrix, generation)
        self.generation = generation
        self._keyword_scores.cache_clear()
        self._forget_derived()

    def _forget_derived(self) -> None:
        self.__dict__.pop("catalog", None)
        self.__dict__.pop("profiles", None)

    @cached_property
    def catalog(self) -> ChunkCatalog:
        """Chunk metadata in BM25 order, for retrieval pre-filters and windows."""
        return ChunkCatalog(self.store.chunk_catalog(), self.bm25.chunk_ids)

    @cached_property
    def profiles(self) -> DocumentProfiles:
        """Document-level representations for routing, in step with the catalog."""
        vectors = self.bm25.vectors if self.bm25.has_vectors else np.zeros((0, self.params.embedding_dimension))
        later = frozenset(doc.id for doc in self._documents_after_bm25())
        profiles = DocumentProfiles(self.store, self.catalog.document_ids, later)
        profiles.set_centroids(chunk_centroids(profiles.chunk_rows, vectors, len(profiles)))
        return profiles

    # -- search: what the retrievers ask ------------------------------------------------------------------------------
    def keyword_search(self, query: str, k: int, flt: RetrievalFilter | None = None) -> list[tuple[str, float]]:
        """The k best chunks by BM25 that the filter lets through, with positive scores, best first (ties: catalog
        order)."""
        ids = self.catalog.ids
        return [(ids[row], score) for row, score in top_rows(self._keyword_scores(query), k, self.catalog.mask(flt))]

    def keyword_scores_of(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        """The BM25 scores of the chunks `chunk_ids` for `query` (0 for a chunk without its words)."""
        scores = self._keyword_scores(query)
        if not len(scores):
            return np.zeros(len(chunk_ids), dtype=np.float32)
        return scores[[self.catalog.row_of[chunk_id] for chunk_id in chunk_ids]]

    def documents_holding(self, word: str) -> frozenset[str]:
        """The ids of the documents some chunk of which holds `word` (a BM25 word)."""
        return frozenset(self.catalog.document_ids[np.flatnonzero(self._keyword_scores(word) > 0)])

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        """How many chunks hold each of `words` (BM25 words) that some chunk holds."""
        return self.bm25.document_frequencies(words)

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> np.ndarray:
        """The cosine similarity of `vector` (normalised) to the chunks `chunk_ids`."""
        return np.asarray(self.bm25.vectors[[self.catalog.row_of[chunk_id] for chunk_id in chunk_ids]] @ vector)

    def dense_search(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter, exact_below: int
    ) -> list[tuple[str, float]]:
        """The k chunks most similar to `vector` that the filter lets through, with their cosine similarities, best
        first: exact over the chunks' vectors when the filter leaves at most `exact_below` chunks, else the HNSW."""
        if self.vectors is None:  # a read-only folder: every chunk the filter lets through, exactly
            mask = self.catalog.mask(flt)
            rows = np.arange(len(self.catalog)) if mask is None else np.flatnonzero(mask)
        elif (mask := few_allowed(self.catalog, flt, exact_below)) is not None and self.bm25.has_vectors:
            rows = np.flatnonzero(mask)
        else:
            return [(chunk_id, 1.0 - distance) for chunk_id, distance in self.nearest(vector, k, flt)]
        similarities = self.bm25.vectors[rows] @ vector
        best = np.argsort(-similarities, kind="stable")[:k]
        return [(self.catalog.ids[rows[i]], float(similarities[i])) for i in best]

    def successor(self) -> FolderIndex:
        return FolderIndex(self.folder, self.settings, embedder=self.embedder)

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Store a whole document with its vectors, replacing the stored version `replaces`; False when nothing was
        written because another process committed the same content first (never, for a folder: it has one writer).
        Chroma is written first under a journal entry, so a run killed in between leaves vectors that the next
        opening removes."""
        self.store.add_to_journal(document.record.id)
        self.chroma().add(document.chunks, document.embeddings)
        self.store.commit_document(document, replaces)
        if replaces:
            self.chroma().delete_document(replaces)
            self.store.clear_journal([replaces])
        return True

    def remove_document(self, document_id: str) -> None:
        self.store.remove_document(document_id)
        self.chroma().delete_document(document_id)
        self.store.clear_journal([document_id])

    def retag(self, document_id: str, tags: DocumentTags) -> None:
        self.store.update_tags(document_id, tags)
        self.chroma().update_metadata(self.store.chunks(document_id))

    def nearest(self, vector: np.ndarray, k: int, flt: RetrievalFilter) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the k nearest chunks the filter lets through (approximate: HNSW), of
        those BM25's catalog holds (Chroma may hold vectors of a document whose commit did not finish, or of one
        committed after BM25 was built)."""
        catalog = self.catalog
        return [
            (chunk_id, distance)
            for chunk_id, distance in self.chroma().search(vector, k, flt)
            if catalog.holds(chunk_id)
        ]

    def vector_count(self) -> int:
        return self.vectors.count() if self.vectors is not None else len(self.bm25.chunk_ids)

    @property
    def location(self) -> str:
        return str(self.folder)

    def exists(self) -> bool:
        return (self.folder / MANIFEST_FILE).exists()

    def rebuild_derived(self) -> int:
        """Recreate the vector and BM25 indexes from store.sqlite alone; returns the number of chunks."""
        self.chroma().reset()
        total = 0
        stored = self.store.iter_chunks()
        while batch := list(islice(stored, _REBUILD_BATCH)):
            chunks, vectors = zip(*batch)
            self.chroma().add(list(chunks), np.stack(vectors))
            total += len(batch)
        self.refresh_bm25()
        return total

    def close(self) -> None:
        self.store.close()
        if self.vectors is not None:
            self.vectors.close()
        self._release_lock()

    def _release_lock(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None


def _folder_manifest(folder: Path, params: IndexParams | None, write: bool, outdated_ok: bool) -> Manifest | None:
    """The folder's manifest, checked against `params`; None for a new index (only to a writer, in a folder that
    holds nothing else)."""
    manifest = read_manifest(folder)
    if manifest is None:
        if not write:
            raise no_index(f"index at {folder}", folder)
        if folder.exists() and any(not _may_precede_index(entry.name) for entry in folder.iterdir()):
            raise PagegraphError(f"{folder} is not empty and holds no {MANIFEST_FILE}: refusing to use it as an index")
    check_manifest(f"index {folder}", folder, manifest, params, outdated_ok)
    return manifest


def _may_precede_index(name: str) -> bool:
    """Files that may sit in an index folder before the index: its lock, the server's folder, threads and summarizer
    log."""
    return name in (_LOCK_FILE, SUMMARIZE_LOG, SERVER_FOLDER) or name.split("-")[0] == THREADS_FILE
