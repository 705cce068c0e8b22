"""Hybrid retrieval: BM25 and dense candidates fused by weighted RRF, optionally reranked, expanded with windows;
and document ranking from the same fused scores (no LLM)."""

from __future__ import annotations

from collections import defaultdict
from typing import Protocol, runtime_checkable

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from pagegraph.indexing.index import Index
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.fusion import adaptive_alpha, weighted_rrf
from pagegraph.retrievers.results import ScoredChunk, to_documents
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.retrievers.window import expand_window
from pagegraph.state.records import Chunk, RetrievalFilter


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, chunk) pairs, higher is better; e.g. a cross-encoder a user plugs in."""

    def score(self, query: str, chunks: list[Chunk]) -> list[float]: ...


class HybridRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Index
    top_k_bm25: int = Field(default=20, ge=1)
    top_k_vector: int = Field(default=40, ge=1)
    max_chunks: int = Field(default=15, ge=1, description="hits kept after fusion (before windows)")
    rrf_k: int = Field(default=60, ge=1)
    alpha: float | None = Field(default=None, ge=0.0, le=1.0, description="BM25 weight; None adapts to the question")
    window: int = Field(default=0, ge=0, description="neighbouring chunks added on each side of a hit")
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)
    reranker: Reranker | None = None

    def fused(self, query: str, flt: RetrievalFilter | None = None, limit: int | None = None) -> list[ScoredChunk]:
        """Fused (and reranked) hits, best first, without windows."""
        return self._fused(query, flt or self.filter, limit)[0]

    def _fused(self, query: str, flt: RetrievalFilter, limit: int | None) -> tuple[list[ScoredChunk], float]:
        lexical = BM25ChunkRetriever(index=self.index).search(query, self.top_k_bm25, flt)
        dense = DenseRetriever(index=self.index).search(query, self.top_k_vector, flt)
        alpha = self.alpha if self.alpha is not None else adaptive_alpha(query)
        fused = weighted_rrf([h.chunk_id for h in lexical], [h.chunk_id for h in dense], alpha, self.rrf_k)
        hits = [ScoredChunk(chunk_id, score, "hybrid") for chunk_id, score, _, _ in fused]
        if self.reranker is not None:
            hits = self._rerank(query, hits[: 2 * self.max_chunks])
        return hits[: limit or self.max_chunks], max((h.score for h in dense), default=0.0)

    def search(self, query: str, flt: RetrievalFilter | None = None) -> list[ScoredChunk]:
        """Fused hits expanded with their windows."""
        return self.search_with_relevance(query, flt)[0]

    def search_with_relevance(self, query: str, flt: RetrievalFilter | None = None) -> tuple[list[ScoredChunk], float]:
        """Fused hits with their windows, and the best cosine similarity of any chunk to the query: rank fusion
        scores only order hits, this says whether anything in the filtered documents is close at all."""
        flt = flt or self.filter
        hits, relevance = self._fused(query, flt, None)
        return expand_window(hits, self.index.catalog, self.window, self.index.catalog.mask(flt)), relevance

    def rank_documents(
        self, query: str, flt: RetrievalFilter | None = None, per_document: int = 3
    ) -> list[tuple[str, float]]:
        """Documents (file names) ordered by the sum of their best `per_document` fused chunk scores."""
        hits = self.fused(query, flt, limit=self.top_k_bm25 + self.top_k_vector)
        by_document: dict[str, list[float]] = defaultdict(list)
        for hit in hits:
            source, _, _ = self.index.catalog.location(hit.chunk_id)
            if len(by_document[source]) < per_document:
                by_document[source].append(hit.score)
        return sorted(((source, sum(scores)) for source, scores in by_document.items()), key=lambda item: -item[1])

    def _rerank(self, query: str, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        chunks = self.index.store.chunks_by_id([h.chunk_id for h in hits])
        scores = self.reranker.score(query, [chunks[h.chunk_id] for h in hits])
        ranked = sorted(zip(hits, scores), key=lambda pair: -pair[1])
        return [ScoredChunk(hit.chunk_id, float(score), "hybrid+rerank") for hit, score in ranked]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.search(query)
        return to_documents(hits, self.index.store.chunks_by_id([h.chunk_id for h in hits]))
