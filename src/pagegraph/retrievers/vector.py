"""Dense retrieval: the packaged MiniLM embedder and Chroma, pre-filtered by Chroma's `where` before the search."""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from pagegraph.indexing.index import Index
from pagegraph.retrievers.results import ScoredChunk, to_documents
from pagegraph.state.records import RetrievalFilter


class DenseRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    k: int = Field(default=40, ge=1)
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)

    def search(self, query: str, k: int | None = None, flt: RetrievalFilter | None = None) -> list[ScoredChunk]:
        """Chunks by cosine similarity (1 - cosine distance), best first."""
        where = (flt or self.filter).chroma_where()
        vector = self.index.embedder.embed([query])[0]
        hits = self.index.vectors.search(vector, k or self.k, where=where)
        return [ScoredChunk(chunk_id, 1.0 - distance, "dense") for chunk_id, distance in hits]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.search(query)
        return to_documents(hits, self.index.store.chunks_by_id([h.chunk_id for h in hits]))
