"""Lexical retrieval: the index's BM25 (bm25s in a folder index, SQL in a database index), filtered before
ranking."""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, SkipValidation

from pagegraph.retrievers.results import ScoredChunk, to_documents
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index


class BM25ChunkRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SkipValidation[Index]  # a protocol: any object with its methods
    k: int = Field(default=20, ge=1)
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)

    def search(self, query: str, k: int | None = None, flt: RetrievalFilter | None = None) -> list[ScoredChunk]:
        hits = self.index.keyword_search(query, k or self.k, flt or self.filter)
        return [ScoredChunk(chunk_id, score, "bm25") for chunk_id, score in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.search(query)
        return to_documents(hits, self.index.chunks_by_id([h.chunk_id for h in hits]))
