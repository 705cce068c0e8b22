"""Dense retrieval with the packaged MiniLM embedder. Unfiltered queries and large filtered subsets search the
index's HNSW (Chroma with the filter as its `where`, or pgvector with it in SQL); a filter that leaves few chunks is
answered exactly, by cosine over just those chunks' vectors (in a folder index from its matrix, which is also
faster; in a database by an exact scan)."""

from __future__ import annotations

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, SkipValidation

from pagegraph.retrievers.results import ScoredChunk, to_documents
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index


class DenseRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SkipValidation[Index]  # a protocol: any object with its methods
    k: int = Field(default=40, ge=1)
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)
    exact_search_limit: int = Field(
        default=20_000, ge=0, description="filtered searches over at most this many chunks are exact"
    )

    def search(
        self, query: str, k: int | None = None, flt: RetrievalFilter | None = None, vector: np.ndarray | None = None
    ) -> list[ScoredChunk]:
        """Chunks by cosine similarity, best first (`vector`: the query's, when already embedded)."""
        flt, k = flt or self.filter, k or self.k
        if vector is None:
            vector = self.index.embedder.embed_queries([query])[0]
        hits = self.index.dense_search(vector, k, flt, self.exact_search_limit)
        return [ScoredChunk(chunk_id, similarity, "dense") for chunk_id, similarity in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.search(query)
        return to_documents(hits, self.index.chunks_by_id([h.chunk_id for h in hits]))
