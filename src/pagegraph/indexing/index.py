"""The index folder: manifest, store, vectors and BM25, opened together and kept consistent.

Writers hold an exclusive lock on the folder and, on opening, remove vectors that a killed run left without a
committed document; readers never write.
"""

from __future__ import annotations

import fcntl
import shutil
from functools import cached_property
from itertools import islice
from pathlib import Path

import numpy as np

from pagegraph.config import Settings
from pagegraph.errors import IndexLockedError, IndexMismatchError, PagegraphError
from pagegraph.indexing.bm25 import BM25Index
from pagegraph.indexing.embedder import ChromaEmbeddingFunction, Embedder
from pagegraph.indexing.manifest import MANIFEST_FILE, IndexParams, Manifest, read_manifest, write_manifest
from pagegraph.indexing.store import STORE_FILE, Store
from pagegraph.indexing.vectors import VectorStore
from pagegraph.retrievers.catalog import ChunkCatalog

_LOCK_FILE = ".lock"
THREADS_FILE = "checkpoints.sqlite"  # LangGraph server threads (pagegraph.server.checkpointer), kept beside the index
_REBUILD_BATCH = 1000


def describe_mismatch(folder: Path, built: IndexParams, requested: IndexParams) -> str:
    diffs = built.differences(requested)
    listed = ", ".join(f"{key}: index has {old!r}, this run asks for {new!r}" for key, (old, new) in diffs.items())
    return (
        f"index {folder} was built with other parameters ({listed}). Nothing was changed. "
        f"Rebuild it with these parameters: `pagegraph ingest PATH... --index {folder} --recreate` plus your options "
        f"(re-reads and re-embeds every document), or use another --index."
    )


class Index:
    def __init__(
        self,
        folder: Path,
        settings: Settings,
        params: IndexParams | None = None,
        *,
        write: bool = False,
        embedder: Embedder | None = None,
    ) -> None:
        """Open (and with `write`, create) an index. `params` None means: whatever the index was built with."""
        self.folder = folder
        self.settings = settings
        self._lock = None
        manifest = read_manifest(folder)
        if manifest is None:
            if not write:
                raise PagegraphError(
                    f"no index at {folder}: create one with `pagegraph ingest PATH... --index {folder}`"
                )
            if folder.exists() and any(not _may_precede_index(entry.name) for entry in folder.iterdir()):
                raise PagegraphError(
                    f"{folder} is not empty and holds no {MANIFEST_FILE}: refusing to use it as an index"
                )
        elif params is not None and manifest.params != params:
            raise IndexMismatchError(describe_mismatch(folder, manifest.params, params))
        if write:
            folder.mkdir(parents=True, exist_ok=True)
            self._acquire_lock()
        self.embedder = embedder or Embedder(settings)
        if manifest is None:
            manifest = Manifest(embedding_backend=self.embedder.backend, params=params or IndexParams())
            write_manifest(folder, manifest)
        self.manifest = manifest
        self.params = manifest.params
        self.store = Store(folder, read_only=not write)
        self.vectors = VectorStore(
            folder, manifest.index_id, ChromaEmbeddingFunction(self.embedder), settings.chroma_url
        )
        self.bm25 = BM25Index(folder, self.params)
        if write:
            self._recover()

    def _acquire_lock(self) -> None:
        self._lock = open(self.folder / _LOCK_FILE, "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock.close()
            self._lock = None
            raise IndexLockedError(f"index {self.folder} is being written by another pagegraph process") from exc

    def _recover(self) -> None:
        """Drop vectors of documents that were being written or replaced when a run was killed."""
        pending = self.store.journal()
        for document_id in pending:
            self.vectors.delete_document(document_id)
        self.store.clear_journal(pending)
        if pending or self.bm25_is_stale():
            self.refresh_bm25()

    def bm25_is_stale(self) -> bool:
        return self.bm25.built_generation() != self.store.generation()

    def refresh_bm25(self) -> None:
        ids, texts, vectors = [], [], []
        for chunk, vector in self.store.iter_chunks():
            ids.append(chunk.id)
            texts.append(chunk.text)
            vectors.append(vector)
        matrix = np.stack(vectors) if vectors else np.zeros((0, self.params.embedding_dimension), dtype=np.float32)
        self.bm25.build(ids, texts, matrix, self.store.generation())
        self.__dict__.pop("catalog", None)

    @cached_property
    def catalog(self) -> ChunkCatalog:
        """Chunk metadata in BM25 order, for retrieval pre-filters and windows."""
        return ChunkCatalog(self.store.chunk_catalog(), self.bm25.chunk_ids)

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
        self.vectors.close()
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _may_precede_index(name: str) -> bool:
    """Files that may sit in an index folder before the index: its lock, and the server's threads."""
    return name == _LOCK_FILE or name.split("-")[0] == THREADS_FILE


def delete_index(folder: Path) -> None:
    """Remove an index folder, refusing anything that does not look like one."""
    if not (folder / MANIFEST_FILE).exists() and not (folder / STORE_FILE).exists():
        raise PagegraphError(f"{folder} holds no pagegraph index; not deleting it")
    shutil.rmtree(folder)
