"""What both kinds of index (`store.folder_index.FolderIndex`, `store.database_index.DatabaseIndex`) share: the
check of a manifest against what a run asks for, the embedder an index was built with, and the reads answered from
the stored records alone (the store behind an index stays inside this package)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Generic, Literal, Self, TypeVar, cast

import numpy as np

from pagegraph.config import Settings
from pagegraph.errors import IndexMismatchError, PagegraphError
from pagegraph.llm.embedder import Embedder
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import Chunk, DocumentRecord, NodeSummary, Page, TreeNode
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.chunk_text import CHUNK_HEADER
from pagegraph.store.manifest import IndexParams, Manifest
from pagegraph.store.page_numbers import printed_numbers
from pagegraph.store.records import RecordStore

StoreT = TypeVar("StoreT", bound=RecordStore)
T = TypeVar("T")
# Where keyword search stands: it holds every committed document; documents were committed after it was built
# (a folder index's next writer rebuilds it); or an older pagegraph built it with another recipe of words.
KeywordSearchState = Literal["current", "behind", "older"]


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


def no_index(where: str, folder: Path) -> PagegraphError:
    return PagegraphError(f"no {where}: create one with `pagegraph ingest PATH... --index {folder}`")


def few_allowed(catalog: ChunkCatalog, flt: RetrievalFilter, limit: int) -> np.ndarray | None:
    """The catalog mask of a filter that lets at most `limit` chunks through (few enough for an exact dense search);
    None for one that lets more through."""
    mask = catalog.mask(flt)
    return mask if mask is not None and int(mask.sum()) <= limit else None


class StoredReads(ABC, Generic[StoreT]):
    """The reads an index answers from its records alone, the same in both kinds: what the rest of pagegraph asks
    of the stored documents, pages, trees, chunks and summaries."""

    store: StoreT

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
        return self.read_from_pages(document_id, ("printed", min_support), lambda p: printed_numbers(p, min_support))

    def read_from_pages(self, document_id: str, key: Hashable, read: Callable[[list[Page]], T]) -> T:
        """`read` of the document's pages, computed once per open index for each `key` (what `read` finds in them):
        a search that needs a fact of a document's pages reads them from the store once, not each time."""
        known: dict[tuple[str, Hashable], object] = self.__dict__.setdefault("_read_from_pages", {})
        if (document_id, key) not in known:
            known[document_id, key] = read(self.pages(document_id))
        return cast(T, known[document_id, key])

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

    @abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
