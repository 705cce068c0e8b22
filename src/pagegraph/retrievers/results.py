"""How retrieved chunks are handed out: LangChain Documents whose metadata carries the citation fields."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.documents import Document

from pagegraph.state.documents import Chunk


@dataclass(frozen=True)
class ScoredChunk:
    """A retrieved chunk id; `hit_id` names the hit a window brought it in for (itself for a hit)."""

    chunk_id: str
    score: float
    retriever: str
    hit_id: str | None = None


def to_documents(hits: list[ScoredChunk], chunks: dict[str, Chunk]) -> list[Document]:
    documents = []
    for hit in hits:
        chunk = chunks[hit.chunk_id]
        documents.append(
            Document(
                id=chunk.id,
                page_content=chunk.text,
                metadata={
                    "chunk_id": chunk.id,
                    **chunk.location(),
                    "section_path": chunk.section_path,
                    "start_time": chunk.start_time,
                    "end_time": chunk.end_time,
                    "score": hit.score,
                    "retriever": hit.retriever,
                    "hit_id": hit.hit_id or chunk.id,
                    "is_hit": hit.hit_id in (None, chunk.id),
                },
            )
        )
    return documents
