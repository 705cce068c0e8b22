"""Baselines the retrieval evaluation compares the graphs' retriever with: the hybrid retriever as it first landed,
and what a LangChain user would write (EnsembleRetriever over rank-bm25's BM25Retriever and a Chroma retriever,
weights 0.5/0.5, on the same chunks and the same embedder)."""

from __future__ import annotations

import warnings

from langchain_core.documents import Document

from pagegraph.config import RetrievalKnobs
from pagegraph.errors import PagegraphError
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.folder_index import FolderIndex
from pagegraph.store.index import Index

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # langchain-community announces its sunset on import
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

# The hybrid retriever as it first landed: weighted reciprocal rank fusion with a BM25 weight by question kind, no
# spelling correction, no document routing, hits ranked one by one (not by page), no windows.
FIRST_LANDED_KNOBS: dict[str, object] = {
    "window": 0,
    "page_ranking": False,
    "named_pages": False,
    "statement_pages": False,
    "route_documents": 0,
    "route_alone": 0.0,
    "correct_spelling": False,
}


def first_landed_hybrid(index: Index, **knobs: object) -> HybridRetriever:
    """The hybrid retriever as it first landed (eval's `hybrid`, `hybrid+window`, and the tree retrievers' chunk
    search); `knobs` change its retrieval knobs (an `alpha` among them fixes the BM25 weight)."""
    return HybridRetriever(
        index=index,
        knobs=RetrievalKnobs.model_validate({**FIRST_LANDED_KNOBS, **knobs}),
        fusion="rrf",
        alpha_by_question="alpha" not in knobs,
    )


class LangChainEnsemble:
    def __init__(self, index: Index) -> None:
        if not isinstance(index, FolderIndex):
            raise PagegraphError(
                "the LangChain baseline (retriever `ensemble`) searches the index's Chroma collection; an index in "
                "a database has none: compare against it on a folder index"
            )
        self._chunks = index.chunks()
        chroma = index.chroma()
        self._vectorstore = Chroma(
            client=chroma.client,
            collection_name=chroma.collection_name,
            embedding_function=index.embedder,
        )
        self._bm25: dict[tuple[str, ...] | None, BM25Retriever] = {}

    def _bm25_for(self, documents: tuple[str, ...] | None, k: int) -> BM25Retriever:
        if documents not in self._bm25:
            corpus = [
                Document(page_content=c.text, metadata={"chunk_id": c.id})
                for c in self._chunks
                if documents is None or c.source in documents
            ]
            self._bm25[documents] = BM25Retriever.from_documents(corpus)
        retriever = self._bm25[documents]
        retriever.k = k
        return retriever

    def search(self, query: str, flt: RetrievalFilter | None, k: int) -> list[str]:
        """Chunk ids, best first. Only the document restriction of `flt` is applied (as a user would)."""
        documents = tuple(sorted(flt.documents)) if flt and flt.documents is not None else None
        search_kwargs: dict = {"k": k}
        if documents is not None:
            search_kwargs["filter"] = {"source": {"$in": list(documents)}}
        ensemble = EnsembleRetriever(
            retrievers=[self._bm25_for(documents, k), self._vectorstore.as_retriever(search_kwargs=search_kwargs)],
            weights=[0.5, 0.5],
        )
        ids = [str(doc.metadata.get("chunk_id") or doc.id) for doc in ensemble.invoke(query)]
        return list(dict.fromkeys(ids))[:k]
