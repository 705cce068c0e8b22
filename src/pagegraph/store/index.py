"""The index folder: manifest, store, vectors and BM25, opened together and kept consistent; or, with a database URL,
the index in PostgreSQL (`DatabaseIndex`, below), where keyword and dense search run in SQL and nothing is kept on
the machine that opens it. Retrievers search through `Index` methods (`keyword_search`, `keyword_scores_of`,
`documents_holding`, `document_frequencies`, `dense_search`, `similarities`) and the chunk `catalog`, whichever
kind it is.

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
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import islice
from pathlib import Path
from typing import Literal, overload

import numpy as np

from pagegraph.config import SERVER_FOLDER, Settings
from pagegraph.errors import IndexLockedError, IndexMismatchError, PagegraphError
from pagegraph.llm.embedder import ChromaEmbeddingFunction, Embedder
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import Chunk, DocumentRecord, DocumentTags, NodeSummary, Page, TreeNode, now_iso
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.bm25 import BM25Index, idf, top_rows
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.chunk_text import CHUNK_HEADER, document_label, search_text
from pagegraph.store.manifest import MANIFEST_FILE, IndexParams, Manifest, read_manifest, write_manifest
from pagegraph.store.page_numbers import printed_numbers
from pagegraph.store.postgres import KeywordScoring, PostgresStore, index_schema, redacted
from pagegraph.store.profiles import DocumentProfiles, chunk_centroids
from pagegraph.store.records import DocumentWrite, RecordStore
from pagegraph.store.sqlite import STORE_FILE, SqliteStore
from pagegraph.store.vectors import CHROMA_DIR, VectorStore
from pagegraph.text.words import word_counts

logger = logging.getLogger(__name__)

_LOCK_FILE = ".lock"
THREADS_FILE = "checkpoints.sqlite"  # LangGraph server threads (pagegraph.server.checkpointer), kept beside the index
SUMMARIZE_LOG = "summarize.log"  # what `pagegraph serve`'s background `pagegraph summarize` prints
_REBUILD_BATCH = 1000


def check_manifest(
    where: str, folder: Path, manifest: Manifest | None, params: IndexParams | None, outdated_ok: bool
) -> None:
    """Refuse an index (`where` names it) built with another chunk text recipe (unless `outdated_ok`) or with other
    parameters than `params`."""
    if manifest is None:
        return
    if manifest.params.chunk_header != CHUNK_HEADER and not outdated_ok:
        raise IndexMismatchError(
            f"{where} was built by an older pagegraph whose chunk search text had no document and "
            f"section header (chunk_header {manifest.params.chunk_header!r}, now {CHUNK_HEADER!r}). Nothing was "
            f"changed. Rebuild it: `pagegraph ingest PATH... --index {folder} --recreate` (re-reads and "
            f"re-embeds every document), or use another --index."
        )
    if params is not None and manifest.params != params:
        diffs = manifest.params.differences(params)
        listed = ", ".join(f"{key}: index has {old!r}, this run asks for {new!r}" for key, (old, new) in diffs.items())
        raise IndexMismatchError(
            f"{where} was built with other parameters ({listed}). Nothing was changed. "
            f"Rebuild it with these parameters: `pagegraph ingest PATH... --index {folder} --recreate` plus your "
            f"options (re-reads and re-embeds every document), or use another --index."
        )


def index_embedder(settings: Settings, params: IndexParams | None, given: Embedder | None) -> Embedder:
    """The embedder of an index with `params` (None: a new index of the default ones): `given` when it is of that
    model (a caller's, already loaded), else a new one."""
    model = (params or IndexParams()).embedding_model
    return given if given is not None and given.model == model else Embedder(settings, model)


def _no_index(where: str, folder: Path) -> PagegraphError:
    return PagegraphError(f"no {where}: create one with `pagegraph ingest PATH... --index {folder}`")


def _records(folder: Path, settings: Settings, *, write: bool, pool_size: int | None = None) -> RecordStore:
    """The one place a store is made: the folder's store.sqlite, or the index's schema in PostgreSQL when
    `Settings.storage.database_url` is set."""
    if settings.storage.database_url:
        pool = pool_size or settings.storage.database_pool_size
        return PostgresStore(settings.storage.database_url, index_schema(folder), pool, write=write)
    return SqliteStore(folder, read_only=not write)


@overload
def open_index(
    folder: Path,
    settings: Settings,
    params: IndexParams | None = None,
    *,
    write: bool = False,
    embedder: Embedder | None = None,
    outdated_ok: bool = False,
    wait_for_writer: Callable[[str], None] | None = None,
    records_only: Literal[False] = False,
) -> Index: ...


@overload
def open_index(folder: Path, settings: Settings, *, records_only: Literal[True]) -> RecordStore: ...


def open_index(
    folder: Path,
    settings: Settings,
    params: IndexParams | None = None,
    *,
    write: bool = False,
    embedder: Embedder | None = None,
    outdated_ok: bool = False,
    wait_for_writer: Callable[[str], None] | None = None,
    records_only: bool = False,
) -> Index | RecordStore:
    """Open (with `write`, create) the index `folder` names: in the folder, or in PostgreSQL when
    `Settings.storage.database_url` is set (a `DatabaseIndex`, schema named after the folder). A writer of a folder that
    another process is writing fails with IndexLockedError, or with `wait_for_writer` is told why (the callback
    gets the reason) and waits its turn; writers of a database work side by side (`RecordStore.claim`).

    With `records_only`, the records of an existing index alone, writable, without its search indexes or its
    writer lock: for writers of summaries and eval runs, which may work beside an ingest."""
    if records_only:
        return _existing_records(folder, settings)
    if settings.storage.database_url:
        return DatabaseIndex(folder, settings, params, write=write, embedder=embedder, outdated_ok=outdated_ok)
    return Index(
        folder,
        settings,
        params,
        write=write,
        embedder=embedder,
        outdated_ok=outdated_ok,
        wait_for_writer=wait_for_writer,
    )


class Index:
    """An index folder (`open_index` opens the right kind for the settings)."""

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
        self._lock = None
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
        self.store = _records(folder, settings, write=write)
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

    def _acquire_lock(self, wait_for_writer: Callable[[str], None] | None) -> None:
        self._lock = open(self.folder / _LOCK_FILE, "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            reason = f"index {self.folder} is being written by another pagegraph process"
            if wait_for_writer is not None:
                wait_for_writer(reason)
                fcntl.flock(self._lock, fcntl.LOCK_EX)
                return
            self._lock.close()
            self._lock = None
            raise IndexLockedError(reason) from exc

    def _recover(self) -> None:
        """Bring Chroma, BM25 and the vector matrix up to the committed documents: drop vectors of documents that
        were being written or replaced when a run was killed, add the committed chunks Chroma lacks, rebuild a
        stale BM25. What was done is recorded in the store (`inspect` shows it)."""
        pending = self.store.journal()
        for document_id in pending:
            self.vectors.delete_document(document_id)
        self.store.clear_journal(pending)
        done = [f"dropped the vectors of {len(pending)} unfinished or replaced document(s)"] if pending else []
        if missing := self._chunks_missing_from_chroma():
            self.vectors.add(*self._stored(missing))
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
        if self.vectors.count() >= self.store.chunk_count():
            return []
        held = self.vectors.ids()
        return [chunk_id for chunk_id in self.store.chunk_ids() if chunk_id not in held]

    def _stored(self, chunk_ids: list[str]) -> tuple[list, np.ndarray]:
        wanted = set(chunk_ids)
        pairs = [(chunk, vector) for chunk, vector in self.store.iter_chunks() if chunk.id in wanted]
        return [chunk for chunk, _ in pairs], np.stack([vector for _, vector in pairs])

    def make_searchable(self) -> None:
        """Make what was committed searchable: rebuild BM25 and the vector matrix when the store has moved on."""
        if self.bm25_is_stale():
            self.refresh_bm25()

    def keyword_search_is_current(self) -> bool:
        """Whether keyword search holds every committed document (else the next ingest brings it up to date)."""
        return not self.bm25_is_stale()

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
        return self.bm25.vectors[[self.catalog.row_of[chunk_id] for chunk_id in chunk_ids]] @ vector

    def dense_search(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter, exact_below: int
    ) -> list[tuple[str, float]]:
        """The k chunks most similar to `vector` that the filter lets through, with their cosine similarities, best
        first: exact over the chunks' vectors when the filter leaves at most `exact_below` chunks, else the HNSW."""
        if self.vectors is None:  # a read-only folder: every chunk the filter lets through, exactly
            mask = self.catalog.mask(flt)
            rows = np.arange(len(self.catalog)) if mask is None else np.flatnonzero(mask)
        elif (mask := self._few_allowed(flt, exact_below)) is not None and self.bm25.has_vectors:
            rows = np.flatnonzero(mask)
        else:
            return [(chunk_id, 1.0 - distance) for chunk_id, distance in self.nearest(vector, k, flt)]
        similarities = self.bm25.vectors[rows] @ vector
        best = np.argsort(-similarities, kind="stable")[:k]
        return [(self.catalog.ids[rows[i]], float(similarities[i])) for i in best]

    def _few_allowed(self, flt: RetrievalFilter, limit: int) -> np.ndarray | None:
        """The catalog mask of a filter that lets at most `limit` chunks through (few enough for an exact dense
        search); None for one that lets more through."""
        mask = self.catalog.mask(flt)
        return mask if mask is not None and int(mask.sum()) <= limit else None

    # -- reads: what the rest of pagegraph asks of the stored records (the store behind it stays inside this package) --
    def documents(self) -> list[DocumentRecord]:
        return self.store.documents()

    def documents_with_sections(self) -> set[str]:
        """Ids of the documents that have section summaries."""
        return self.store.documents_with_sections()

    def pages(self, document_id: str) -> list[Page]:
        return self.store.pages(document_id)

    def printed_pages(self, document_id: str, min_support: float) -> dict[int, str]:
        """The numbers printed on the document's pages where they differ from the pages' places
        (`page_numbers.printed_numbers`), read once per open index."""
        known = self.__dict__.setdefault("_printed_pages", {})
        if (document_id, min_support) not in known:
            known[document_id, min_support] = printed_numbers(self.pages(document_id), min_support)
        return known[document_id, min_support]

    def tree(self, document_id: str) -> list[TreeNode]:
        return self.store.tree(document_id)

    def sections(self, document_id: str) -> list[NodeSummary]:
        return self.store.sections(document_id)

    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]:
        return self.store.section_vectors(document_id)

    def chunks(self, document_id: str | None = None) -> list[Chunk]:
        return self.store.chunks(document_id)

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        return self.store.chunks_by_id(chunk_ids)

    def summaries(self) -> dict[str, StoredSummary]:
        return self.store.summaries()

    def failures(self) -> list[tuple[str, str, str]]:
        """(path, name, reason) of the files that failed to ingest and are not indexed."""
        return self.store.failures()

    def ocr_page_counts(self) -> dict[str, int]:
        return self.store.ocr_page_counts()

    def last_recovery(self) -> tuple[str, str] | None:
        return self.store.last_recovery()

    def committed_generation(self) -> int:
        """The store's generation now (every commit moves it on)."""
        return self.store.generation()

    def successor(self) -> Index:
        """This index opened again at what is committed now, read-only, with the embedder this one loaded (the
        first question after a commit pays for reading the index, not for loading the model); this one stays as it
        is for the runs still reading it."""
        return open_index(self.folder, self.settings, embedder=self.embedder)

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Store a whole document with its vectors, replacing the stored version `replaces`; False when nothing was
        written because another process committed the same content first (never, for a folder: it has one writer).
        Chroma is written first under a journal entry, so a run killed in between leaves vectors that the next
        opening removes."""
        self.store.add_to_journal(document.record.id)
        self.vectors.add(document.chunks, document.embeddings)
        self.store.commit_document(document, replaces)
        if replaces:
            self.vectors.delete_document(replaces)
            self.store.clear_journal([replaces])
        return True

    def remove_document(self, document_id: str) -> None:
        self.store.remove_document(document_id)
        self.vectors.delete_document(document_id)
        self.store.clear_journal([document_id])

    def retag(self, document_id: str, tags: DocumentTags) -> None:
        self.store.update_tags(document_id, tags)
        self.vectors.update_metadata(self.store.chunks(document_id))

    def nearest(self, vector: np.ndarray, k: int, flt: RetrievalFilter) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the k nearest chunks the filter lets through (approximate: HNSW), of
        those BM25's catalog holds (Chroma may hold vectors of a document whose commit did not finish, or of one
        committed after BM25 was built)."""
        catalog = self.catalog
        return [
            (chunk_id, distance)
            for chunk_id, distance in self.vectors.search(vector, k, flt)
            if catalog.holds(chunk_id)
        ]

    def vector_count(self) -> int:
        return self.vectors.count() if self.vectors is not None else len(self.bm25.chunk_ids)

    @property
    def location(self) -> str:
        """Where the index is, for people: its folder, or its schema in a database."""
        return str(self.folder)

    def exists(self) -> bool:
        """Whether the index is still there (not deleted since it was opened)."""
        return (self.folder / MANIFEST_FILE).exists()

    def rebuild_derived(self) -> int:
        """Recreate the vector and BM25 indexes from store.sqlite alone; returns the number of chunks."""
        self.vectors.reset()
        total = 0
        stored = self.store.iter_chunks()
        while batch := list(islice(stored, _REBUILD_BATCH)):
            chunks, vectors = zip(*batch)
            self.vectors.add(list(chunks), np.stack(vectors))
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

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _folder_manifest(folder: Path, params: IndexParams | None, write: bool, outdated_ok: bool) -> Manifest | None:
    """The folder's manifest, checked against `params`; None for a new index (only to a writer, in a folder that
    holds nothing else)."""
    manifest = read_manifest(folder)
    if manifest is None:
        if not write:
            raise _no_index(f"index at {folder}", folder)
        if folder.exists() and any(not _may_precede_index(entry.name) for entry in folder.iterdir()):
            raise PagegraphError(f"{folder} is not empty and holds no {MANIFEST_FILE}: refusing to use it as an index")
    check_manifest(f"index {folder}", folder, manifest, params, outdated_ok)
    return manifest


def _may_precede_index(name: str) -> bool:
    """Files that may sit in an index folder before the index: its lock, the server's folder, threads and summarizer
    log."""
    return name in (_LOCK_FILE, SUMMARIZE_LOG, SERVER_FOLDER) or name.split("-")[0] == THREADS_FILE


def delete_index(folder: Path, settings: Settings) -> None:
    """Remove an index, its vectors (on a Chroma server too) and its folder, refusing anything that does not look
    like one; in a database, its schema and the folder of local caches. An index of an older recipe can be
    deleted."""
    if settings.storage.database_url:
        with DatabaseIndex(folder, settings, write=True, outdated_ok=True) as old:
            old.store.drop()
        shutil.rmtree(folder, ignore_errors=True)
        return
    if not (folder / MANIFEST_FILE).exists() and not (folder / STORE_FILE).exists():
        raise PagegraphError(f"{folder} holds no pagegraph index; not deleting it")
    with open_index(folder, settings, write=True, outdated_ok=True) as old:
        old.vectors.drop()
    shutil.rmtree(folder)


def stored_manifest(folder: Path, settings: Settings) -> Manifest | None:
    """The manifest of the index `folder` names (in the database when one is configured); None when there is none."""
    if not settings.storage.database_url:
        return read_manifest(folder)
    store = _records(folder, settings, write=False, pool_size=1)
    try:
        return store.manifest()
    finally:
        store.close()


def _existing_records(folder: Path, settings: Settings) -> RecordStore:
    if not settings.storage.database_url and read_manifest(folder) is None:
        raise _no_index(f"index at {folder}", folder)
    store = _records(folder, settings, write=True)
    if settings.storage.database_url and store.manifest() is None:
        store.close()
        raise _no_index(f"index {folder.name!r} in the database", folder)
    return store


@dataclass(frozen=True)
class _Snapshot:
    """What a database index's next snapshot carries over from an earlier one."""

    generation: int
    catalog: ChunkCatalog
    centroids: dict[str, np.ndarray]
    profiles: DocumentProfiles


class DatabaseIndex(Index):
    """An index in PostgreSQL (store.postgres), schema named after the folder. Everything lives in the database:
    keyword search and dense search run in SQL, and an opened index holds, in memory only, a snapshot of the chunk
    catalog and the document profiles (centroids stored at commit) at the generation it was opened at; it writes
    nothing on this machine. Many processes may write at once: each document commits in one transaction, writers
    of one path take turns."""

    def __init__(
        self,
        folder: Path,
        settings: Settings,
        params: IndexParams | None = None,
        *,
        write: bool = False,
        embedder: Embedder | None = None,
        outdated_ok: bool = False,
        previous: DatabaseIndex | None = None,
    ) -> None:
        """`previous`: an earlier snapshot of this index, whose catalog rows and centroids carry over for the
        documents not committed since (`successor`)."""
        self.folder = folder
        self.settings = settings
        self.store = _records(folder, settings, write=write)
        where = f"index {folder.name!r} in the database {redacted(settings.storage.database_url)}"
        try:
            manifest = self.store.manifest()
            if manifest is None and not write:
                raise _no_index(where, folder)
            check_manifest(where, folder, manifest, params, outdated_ok)
            self.embedder = index_embedder(settings, manifest.params if manifest else params, embedder)
            if manifest is None:
                manifest = self.store.create(
                    Manifest(embedding_backend=self.embedder.backend, params=params or IndexParams())
                )
                check_manifest(where, folder, manifest, params, outdated_ok)  # another process created it first
            if write and not self.store.search_ready():
                logger.warning("%s: filling its keyword search tables from the stored chunks (once)", where)
                self.store.fill_search(manifest.params.embedding_dimension)
        except BaseException:
            self.store.close()
            raise
        self.manifest = manifest
        self.params = manifest.params
        self._take_snapshot(previous if previous is not None and previous.manifest == manifest else None)
        self.unsearchable = [] if self.searchable else [doc.name for doc in self.profiles.documents]
        if self.unsearchable:
            logger.warning(
                "%s was made by an older pagegraph and has no keyword search this one can read yet (its tables, or "
                "its words, are an older recipe's): questions use vector search alone until the next `pagegraph "
                "ingest` into it fills it",
                where,
            )

    def _take_snapshot(self, previous: DatabaseIndex | None = None) -> None:
        """Read the catalog, the document profiles and the keyword totals of one committed state. With `previous`,
        only the chunks, centroids and profiles of the documents committed since its snapshot are read; the rest
        carry over (its catalog's chunks of documents removed or replaced since stay, as rows no mask lets through,
        until they are a quarter of it)."""
        # read before this snapshot replaces them: `previous` may be this index itself (`make_searchable`)
        carried = (
            _Snapshot(previous.generation, previous.catalog, previous._centroids, previous.profiles)
            if previous is not None and previous.searchable
            else None
        )
        with self.store.snapshot():
            self.generation = self.store_generation = self.store.generation()
            self.searchable = self.store.search_ready()
            self._search_totals = self.store.search_totals() if self.searchable else (0, 0)
            if carried is None or not self.searchable or not self._carry_over(carried):
                rows = self.store.chunk_catalog()
                self.catalog = ChunkCatalog(rows, [row[0] for row in rows])
                self._centroids = self.store.centroids()
                self.profiles = DocumentProfiles(self.store, self.catalog.document_ids)
        zero = np.zeros(self.params.embedding_dimension, dtype=np.float32)
        self.profiles.set_centroids(
            np.stack([self._centroids.get(doc_id, zero) for doc_id in self.profiles.ids])
            if self.profiles.ids
            else np.zeros((0, self.params.embedding_dimension), dtype=np.float32)
        )
        # a question's searches ask for the same query's word weights, and the same words' documents, several times
        self._weights = lru_cache(maxsize=32)(self._query_weights)
        self._holding = lru_cache(maxsize=256)(self._documents_holding)

    def _carry_over(self, previous: _Snapshot) -> bool:
        """Take the catalog, centroids and profiles from `previous`, reading those of the documents committed since;
        False (nothing taken) when its rows of documents gone since would be a quarter of the catalog."""
        committed = self.store.document_generations()
        changed = {doc_id for doc_id, generation in committed.items() if generation > previous.generation}
        gone = changed | {doc_id for doc_id in previous.profiles.ids if doc_id not in committed}
        catalog = previous.catalog.changed(gone, self.store.chunk_catalog(changed))
        if np.count_nonzero(~catalog.live) * 4 > len(catalog):
            return False
        self.catalog = catalog
        kept = {doc_id: centroid for doc_id, centroid in previous.centroids.items() if doc_id not in gone}
        self._centroids = kept | self.store.centroids(changed)
        self.profiles = DocumentProfiles(self.store, catalog.document_ids, previous=previous.profiles, changed=gone)
        return True

    def successor(self) -> DatabaseIndex:
        return DatabaseIndex(self.folder, self.settings, embedder=self.embedder, previous=self)

    def keyword_search_is_current(self) -> bool:
        return self.searchable

    def make_searchable(self) -> None:
        """A commit makes a document searchable in the database: this only moves this process's snapshot on."""
        self._take_snapshot(self)

    def _query_weights(self, query: str) -> dict[str, float]:
        """Each of the query's words some chunk holds, weighted by its idf times how often the query says it."""
        chunks, _ = self._search_totals
        counts = word_counts(query)
        if not chunks or not counts:
            return {}
        held = self.store.document_frequencies(list(counts))
        return {word: counts[word] * idf(self.params.bm25_method, holding, chunks) for word, holding in held.items()}

    def _scoring(self) -> KeywordScoring:
        chunks, total = self._search_totals
        params = self.params
        return KeywordScoring(params.bm25_method, params.bm25_k1, params.bm25_b, total / chunks if chunks else 1.0)

    def keyword_search(self, query: str, k: int, flt: RetrievalFilter | None = None) -> list[tuple[str, float]]:
        weights = self._weights(query)
        if not weights:
            return []
        # Twice k from the database, then ties in catalog order as in a folder index; chunks committed after this
        # snapshot are not in the catalog and are left out.
        found = self.store.keyword_search(weights, self._scoring(), 2 * k, flt, self.generation)
        row_of = self.catalog.row_of
        ranked = sorted((-score, row_of[chunk_id]) for chunk_id, score in found if chunk_id in row_of)
        ids = self.catalog.ids
        return [(ids[row], -negative) for negative, row in ranked[:k]]

    def keyword_scores_of(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        weights = self._weights(query)
        found = self.store.keyword_scores_of(weights, self._scoring(), chunk_ids) if weights else {}
        return np.array([found.get(chunk_id, 0.0) for chunk_id in chunk_ids], dtype=np.float32)

    def documents_holding(self, word: str) -> frozenset[str]:
        return self._holding(word)

    def _documents_holding(self, word: str) -> frozenset[str]:
        return frozenset(self.store.documents_holding(word)) if self.searchable else frozenset()

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        return self.store.document_frequencies(words) if self.searchable else {}

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> np.ndarray:
        found = self.store.similarities(chunk_ids, vector)
        return np.array([found.get(chunk_id, 0.0) for chunk_id in chunk_ids], dtype=np.float32)

    def dense_search(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter, exact_below: int
    ) -> list[tuple[str, float]]:
        """The k chunks most similar to `vector`, in SQL: an exact scan when the filter leaves at most `exact_below`
        chunks (as in a folder index: a filtered HNSW search misses some), else the HNSW."""
        # a filter that restricts nothing is never "few": the catalog's rows of documents gone since it was taken
        # would otherwise decide it, and processes whose catalogs were carried over differently would search apart
        exact = flt.restricts and self._few_allowed(flt, exact_below) is not None
        found = self.store.nearest(vector, k, flt, self.generation, exact=exact)
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in found]

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        return self.store.commit_document(document, replaces)

    def remove_document(self, document_id: str) -> None:
        self.store.remove_document(document_id)

    def retag(self, document_id: str, tags: DocumentTags) -> None:
        self.store.update_tags(document_id, tags)

    def nearest(self, vector: np.ndarray, k: int, flt: RetrievalFilter) -> list[tuple[str, float]]:
        return self.store.nearest(vector, k, flt, self.generation)

    def vector_count(self) -> int:
        return self.store.chunk_count()

    @property
    def location(self) -> str:
        return f"schema {self.store.schema} in {redacted(self.store.url)}"

    def exists(self) -> bool:
        return self.store.manifest() is not None

    def rebuild_derived(self) -> int:
        """Fill the keyword search tables and centroids again from the stored chunks; returns the number of chunks."""
        self.store.fill_search(self.params.embedding_dimension, again=True)
        return self.store.chunk_count()

    def close(self) -> None:
        self.store.close()
