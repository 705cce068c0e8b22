"""pagegraph's whole default search as a LangChain retriever, for someone else's chain or agent: document routing,
hybrid search, page ranking, windows and highlighted sentences, under a filter, with no model call."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from pagegraph.config import Context
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Highlight
from pagegraph.state.filters import RetrievalFilter
from pagegraph.tools.documents import DocumentTools, found_sentences


def passage_document(passage: Evidence, highlights: list[Highlight]) -> Document:
    """A passage as a LangChain document: its text, and where it is in `metadata` — `source` (file name), `section`,
    `start_page`/`end_page` (of the file), `label` (the citation, with printed page numbers), `score`, `chunk_ids`
    and `highlights` (its best sentences, each with its page and character offsets on that page)."""
    sentences = [h for h in highlights if h.passage_id == passage.id]
    return Document(
        id=passage.id,
        page_content=passage.text,
        metadata={
            "source": passage.source,
            "section": passage.section,
            "start_page": passage.start_page,
            "end_page": passage.end_page,
            "label": passage.label(),
            "score": passage.score,
            "chunk_ids": list(passage.chunk_ids),
            "highlights": [s.model_dump() for s in found_sentences(sentences)],
        },
    )


class PagegraphRetriever(BaseRetriever):
    """The `k` best passages of an index for a query, narrowed by `filter` (documents, projects, source types,
    confidentiality, pages, dates). Build one with `pagegraph.as_retriever`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tools: DocumentTools
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)
    k: int = Field(default=5, ge=1)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        passages, highlights = self.tools.find(query, self.filter, self.k)
        return [passage_document(p, highlights) for p in passages]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        passages, highlights = await self.tools.afind(query, self.filter, self.k)
        return [passage_document(p, highlights) for p in passages]


def as_retriever(
    index: str | None = None,
    *,
    filters: RetrievalFilter | dict[str, Any] | None = None,
    k: int = 5,
    services: Services | None = None,
) -> PagegraphRetriever:
    """A LangChain retriever over the index at `index` (default: the configured one, $PAGEGRAPH_INDEX), returning
    the `k` best passages under `filters` (a RetrievalFilter or its fields as a dict, e.g.
    {"documents": ["manual.pdf"], "date_from": "2024-01-01"}). `services`: a pagegraph Services to share."""
    flt = filters if isinstance(filters, RetrievalFilter) else RetrievalFilter.model_validate(filters or {})
    tools = DocumentTools(services or Services(), Context(index=index))
    return PagegraphRetriever(tools=tools, filter=flt, k=k)
