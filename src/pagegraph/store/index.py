"""The index front: `Index`, what the rest of pagegraph asks of an index, whichever kind; `open_index`, the one
factory, which opens an index folder (`store.folder_index.FolderIndex`) or, with a database URL, the index in
PostgreSQL (`store.database_index.DatabaseIndex`: keyword and dense search run in SQL, nothing is kept on the machine
that opens it). Retrievers search through `Index` methods (`keyword_search`,
`keyword_scores_of`, `documents_holding`, `document_frequencies`, `dense_search`, `similarities`) and the chunk
`catalog`, whichever kind it is."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Literal, Protocol, Self, TypeVar, overload

import numpy as np

from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.embedder import Embedder
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import Chunk, DocumentRecord, DocumentTags, NodeSummary, Page, TreeNode
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.database_index import DatabaseIndex, database_store
from pagegraph.store.folder_index import FolderIndex
from pagegraph.store.index_base import KeywordSearchState, no_index
from pagegraph.store.manifest import MANIFEST_FILE, IndexParams, Manifest, read_manifest
from pagegraph.store.profiles import DocumentProfiles
from pagegraph.store.records import DocumentWrite, RecordStore
from pagegraph.store.sqlite import STORE_FILE, SqliteStore

T = TypeVar("T")


class Index(Protocol):
    """An opened index, in a folder or in a database (`open_index` opens the right kind for the settings)."""

    folder: Path
    settings: Settings
    embedder: Embedder
    manifest: Manifest
    params: IndexParams
    store_generation: int
    """What was committed when it was opened (`committed_generation` says what is committed now)."""
    unsearchable: list[str]
    """The names of the documents committed but not searchable by keyword yet (the next ingest makes them so)."""

    @property
    def store(self) -> RecordStore:
        """The records behind the index: for its writer (ingest) alone."""
        ...

    @property
    def catalog(self) -> ChunkCatalog:
        """Chunk metadata in keyword search order, for retrieval pre-filters and windows."""
        ...

    @property
    def profiles(self) -> DocumentProfiles:
        """Document-level representations for routing, in step with the catalog."""
        ...

    @property
    def location(self) -> str:
        """Where the index is, for people: its folder, or its schema in a database."""
        ...

    # -- search: what the retrievers ask ------------------------------------------------------------------------------
    def keyword_search(self, query: str, k: int, flt: RetrievalFilter | None = None) -> list[tuple[str, float]]:
        """The k best chunks by BM25 that the filter lets through, with positive scores, best first (ties: catalog
        order)."""
        ...

    def keyword_scores_of(self, query: str, chunk_ids: list[str]) -> np.ndarray:
        """The BM25 scores of the chunks `chunk_ids` for `query` (0 for a chunk without its words)."""
        ...

    def documents_holding(self, word: str) -> frozenset[str]:
        """The ids of the documents some chunk of which holds `word` (a BM25 word)."""
        ...

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        """How many chunks hold each of `words` (BM25 words) that some chunk holds."""
        ...

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> np.ndarray:
        """The cosine similarity of `vector` (normalised) to the chunks `chunk_ids`."""
        ...

    def dense_search(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter, exact_below: int
    ) -> list[tuple[str, float]]:
        """The k chunks most similar to `vector` that the filter lets through, with their cosine similarities, best
        first: exact when the filter leaves at most `exact_below` chunks, else approximate (HNSW)."""
        ...

    def nearest(self, vector: np.ndarray, k: int, flt: RetrievalFilter) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the k nearest chunks the filter lets through (approximate: HNSW)."""
        ...

    def keyword_search_state(self) -> KeywordSearchState:
        """Whether keyword search holds every committed document, and if not, why (`KeywordSearchState`)."""
        ...

    def make_searchable(self) -> None:
        """Make what was committed searchable through this opened index."""
        ...

    # -- reads of the stored records ----------------------------------------------------------------------------------
    def documents(self) -> list[DocumentRecord]: ...

    def documents_with_sections(self) -> set[str]: ...

    def pages(self, document_id: str) -> list[Page]: ...

    def printed_pages(self, document_id: str, min_support: float) -> dict[int, str]: ...

    def read_from_pages(self, document_id: str, key: Hashable, read: Callable[[list[Page]], T]) -> T: ...

    def tree(self, document_id: str) -> list[TreeNode]: ...

    def sections(self, document_id: str) -> list[NodeSummary]: ...

    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]: ...

    def chunks(self, document_id: str | None = None) -> list[Chunk]: ...

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]: ...

    def summaries(self) -> dict[str, StoredSummary]: ...

    def failures(self) -> list[tuple[str, str, str]]: ...

    def ocr_page_counts(self) -> dict[str, int]: ...

    def last_recovery(self) -> tuple[str, str] | None: ...

    def committed_generation(self) -> int: ...

    def vector_count(self) -> int: ...

    def exists(self) -> bool:
        """Whether the index is still there (not deleted since it was opened)."""
        ...

    # -- writes and the index's life -----------------------------------------------------------------------------------
    def successor(self) -> Index:
        """This index opened again at what is committed now, read-only, with the embedder this one loaded (the
        first question after a commit pays for reading the index, not for loading the model); this one stays as it
        is for the runs still reading it."""
        ...

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Store a whole document with its vectors, replacing the stored version `replaces`; False when nothing was
        written because another process committed the same content first."""
        ...

    def remove_document(self, document_id: str) -> None: ...

    def retag(self, document_id: str, tags: DocumentTags) -> None: ...

    def rebuild_derived(self) -> int:
        """Make what is derived from the records (vectors, keyword search) again; returns the number of chunks."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


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
    return FolderIndex(
        folder,
        settings,
        params,
        write=write,
        embedder=embedder,
        outdated_ok=outdated_ok,
        wait_for_writer=wait_for_writer,
    )


def delete_index(folder: Path, settings: Settings) -> None:
    """Remove an index, its vectors (on a Chroma server too) and its folder, refusing anything that does not look
    like one; in a database, its schema and the folder of local caches. An index of an older recipe can be
    deleted."""
    if settings.storage.database_url:
        with DatabaseIndex(folder, settings, write=True, outdated_ok=True) as database:
            database.store.drop()
        shutil.rmtree(folder, ignore_errors=True)
        return
    if not (folder / MANIFEST_FILE).exists() and not (folder / STORE_FILE).exists():
        raise PagegraphError(f"{folder} holds no pagegraph index; not deleting it")
    with FolderIndex(folder, settings, write=True, outdated_ok=True) as old:
        old.chroma().drop()
    shutil.rmtree(folder)


def stored_manifest(folder: Path, settings: Settings) -> Manifest | None:
    """The manifest of the index `folder` names (in the database when one is configured); None when there is none."""
    if not settings.storage.database_url:
        return read_manifest(folder)
    store = database_store(folder, settings, write=False, pool_size=1)
    try:
        return store.manifest()
    finally:
        store.close()


def _existing_records(folder: Path, settings: Settings) -> RecordStore:
    if not settings.storage.database_url:
        if read_manifest(folder) is None:
            raise no_index(f"index at {folder}", folder)
        return SqliteStore(folder)
    store = database_store(folder, settings, write=True)
    if store.manifest() is None:
        store.close()
        raise no_index(f"index {folder.name!r} in the database", folder)
    return store
