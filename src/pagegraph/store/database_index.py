"""An index in PostgreSQL (store.postgres), schema named after the folder: keyword and dense search run in SQL,
and nothing is kept on the machine that opens it."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from pagegraph.config import Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.state.documents import DocumentTags
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.bm25 import idf
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.index_base import (
    KeywordSearchState,
    StoredReads,
    check_manifest,
    few_allowed,
    index_embedder,
    no_index,
)
from pagegraph.store.manifest import IndexParams, Manifest
from pagegraph.store.postgres import KeywordScoring, PostgresStore, index_schema, redacted
from pagegraph.store.profiles import DocumentProfiles
from pagegraph.store.records import DocumentWrite
from pagegraph.text.words import query_words

logger = logging.getLogger(__name__)


def database_store(folder: Path, settings: Settings, *, write: bool, pool_size: int | None = None) -> PostgresStore:
    """The records of the index `folder` names in the database `Settings.storage.database_url` names: the schema
    named after the folder, over a pool of `pool_size` connections (default: the settings')."""
    url = settings.storage.database_url
    if not url:
        raise ValueError("a database index needs Settings.storage.database_url")
    return PostgresStore(url, index_schema(folder), pool_size or settings.storage.database_pool_size, write=write)


@dataclass(frozen=True)
class _Snapshot:
    """What a database index's next snapshot carries over from an earlier one."""

    generation: int
    catalog: ChunkCatalog
    centroids: dict[str, np.ndarray]
    profiles: DocumentProfiles


class DatabaseIndex(StoredReads[PostgresStore]):
    """An index in PostgreSQL (store.postgres), schema named after the folder. Everything lives in the database:
    keyword search and dense search run in SQL, and an opened index holds, in memory only, a snapshot of the chunk
    catalog and the document profiles (centroids stored at commit) at the generation it was opened at; it writes
    nothing on this machine. Many processes may write at once: each document commits in one transaction, writers
    of one path take turns."""

    # the snapshot (`_take_snapshot`): the committed state it was taken at, and what was read at it
    generation: int
    store_generation: int
    searchable: bool  # its keyword search can be read: today's recipe, or the one before stems
    search_current: bool  # ... of today's recipe
    catalog: ChunkCatalog
    profiles: DocumentProfiles
    _centroids: dict[str, np.ndarray]
    _search_totals: tuple[int, int]

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
        self.store = database_store(folder, settings, write=write)
        where = f"index {folder.name!r} in the database {redacted(self.store.url)}"
        try:
            manifest = self.store.manifest()
            if manifest is None and not write:
                raise no_index(where, folder)
            check_manifest(where, folder, manifest, params, outdated_ok)
            self.embedder = index_embedder(settings, manifest.params if manifest else params, embedder)
            if manifest is None:
                manifest = self.store.create(
                    Manifest(embedding_backend=self.embedder.backend, params=params or IndexParams())
                )
                check_manifest(where, folder, manifest, params, outdated_ok)  # another process created it first
            if write and not self.store.search.search_ready():
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
        elif not self.search_current:
            logger.warning(
                "%s was made by an older pagegraph: its keyword search holds no stems (other forms of a word in 21 "
                "languages) and is searched as it is until the next `pagegraph ingest` into it fills it again",
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
        with self.store.db.snapshot():
            self.generation = self.store_generation = self.store.generation()
            self.search_current = self.store.search.search_ready()
            self.searchable = self.search_current or self.store.search.search_readable()
            self._search_totals = self.store.search.search_totals() if self.searchable else (0, 0)
            if carried is None or not self.searchable or not self._carry_over(carried):
                rows = self.store.chunk_catalog()
                self.catalog = ChunkCatalog(rows, [row[0] for row in rows])
                self._centroids = self.store.search.centroids()
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
        self._centroids = kept | self.store.search.centroids(changed)
        self.profiles = DocumentProfiles(self.store, catalog.document_ids, previous=previous.profiles, changed=gone)
        return True

    def successor(self) -> DatabaseIndex:
        return DatabaseIndex(self.folder, self.settings, embedder=self.embedder, previous=self)

    def keyword_search_state(self) -> KeywordSearchState:
        """A commit writes its keyword search in its own transaction, so it is never behind the documents."""
        return "current" if self.search_current else "older"

    def make_searchable(self) -> None:
        """A commit makes a document searchable in the database: this only moves this process's snapshot on."""
        self._take_snapshot(self)

    def _query_weights(self, query: str) -> dict[str, float]:
        """Each of the query's words some chunk holds, weighted by its idf times how often the query says it."""
        chunks, _ = self._search_totals
        counts = Counter(query_words(query))
        if not chunks or not counts:
            return {}
        held = self.store.search.document_frequencies(list(counts))
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
        found = self.store.search.keyword_search(weights, self._scoring(), 2 * k, flt, self.generation)
        row_of = self.catalog.row_of
        ranked = sorted((-score, row_of[chunk_id]) for chunk_id, score in found if chunk_id in row_of)
        ids = self.catalog.ids
        return [(ids[row], -negative) for negative, row in ranked[:k]]

    def keyword_scores_of(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        weights = self._weights(query)
        found = self.store.search.keyword_scores_of(weights, self._scoring(), chunk_ids) if weights else {}
        return np.array([found.get(chunk_id, 0.0) for chunk_id in chunk_ids], dtype=np.float32)

    def documents_holding(self, word: str) -> frozenset[str]:
        return self._holding(word)

    def _documents_holding(self, word: str) -> frozenset[str]:
        return frozenset(self.store.search.documents_holding(word)) if self.searchable else frozenset()

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        return self.store.search.document_frequencies(words) if self.searchable else {}

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> np.ndarray:
        found = self.store.search.similarities(chunk_ids, vector)
        return np.array([found.get(chunk_id, 0.0) for chunk_id in chunk_ids], dtype=np.float32)

    def dense_search(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter, exact_below: int
    ) -> list[tuple[str, float]]:
        """The k chunks most similar to `vector`, in SQL: an exact scan when the filter leaves at most `exact_below`
        chunks (as in a folder index: a filtered HNSW search misses some), else the HNSW."""
        # a filter that restricts nothing is never "few": the catalog's rows of documents gone since it was taken
        # would otherwise decide it, and processes whose catalogs were carried over differently would search apart
        exact = flt.restricts and few_allowed(self.catalog, flt, exact_below) is not None
        found = self.store.search.nearest(vector, k, flt, self.generation, exact=exact)
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in found]

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        return self.store.commit_document(document, replaces)

    def remove_document(self, document_id: str) -> None:
        self.store.remove_document(document_id)

    def retag(self, document_id: str, tags: DocumentTags) -> None:
        self.store.update_tags(document_id, tags)

    def nearest(self, vector: np.ndarray, k: int, flt: RetrievalFilter) -> list[tuple[str, float]]:
        return self.store.search.nearest(vector, k, flt, self.generation)

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
