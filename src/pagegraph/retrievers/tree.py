"""Tree retrieval: start from the section summaries closest to the question, let the model judge each section
("is this section relevant?", cached per question and section), open the subsections of relevant sections, collect
the relevant leaves, stop after `max_steps` judgements. Documents without a real outline are searched by chunks.
"""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SkipValidation

from pagegraph.llm.structured import DEFAULT_REPAIRS, structured_call
from pagegraph.prompts.tree import JUDGE_REQUEST, JUDGE_SYSTEM
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.tree_nodes import DocumentTree, get_node_by_id, has_outline, load_tree, page_span
from pagegraph.state.answering import Evidence
from pagegraph.state.documents import DocumentRecord
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.usage import ModelCall
from pagegraph.store.index import Index


class Relevance(BaseModel):
    relevant: bool = Field(description="whether the section (or one of its subsections) likely holds the answer")


@dataclass(frozen=True)
class TreeHit:
    """A relevant leaf section, or (for documents without an outline) a chunk."""

    source: str
    id: str
    title: str
    start_page: int
    end_page: int
    text: str
    similarity: float
    origin: str  # "tree" or "chunks"
    chunk_ids: tuple[str, ...] = ()


@dataclass
class TreeSearch:
    hits: list[TreeHit] = field(default_factory=list)
    judged: int = 0
    relevant: int = 0
    calls: list[ModelCall] = field(default_factory=list)
    searched_by_chunks: list[str] = field(default_factory=list)


class TreeRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SkipValidation[Index]  # a protocol: any object with its methods
    judge: BaseChatModel
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)
    start_nodes: int = Field(default=4, ge=1, description="sections closest to the question to start from")
    max_steps: int = Field(default=8, ge=1, description="the most sections judged per question")
    max_chars: int = Field(default=3000, ge=100, description="characters of a section's text returned")
    chunk_hits: int = Field(default=5, ge=1, description="chunks per search of a document without an outline")
    judge_max_tokens: int = Field(default=24, ge=8, description='reply cap of one judgement (`{"relevant": true}`)')
    repairs: int = Field(default=DEFAULT_REPAIRS, ge=0, description="repair calls after an invalid judgement")
    chunk_search: HybridRetriever | None = Field(
        default=None, description="how documents without an outline are searched (default: HybridRetriever's own)"
    )
    _verdicts: dict[tuple[str, str], bool] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def split_by_outline(self, flt: RetrievalFilter) -> tuple[list[DocumentRecord], list[DocumentRecord]]:
        """The documents `flt` selects: those whose section tree can be navigated (a real outline with section
        summaries), and the others."""
        with_sections = self.index.documents_with_sections()
        navigable: list[DocumentRecord] = []
        others: list[DocumentRecord] = []
        for doc in self.index.documents():
            if flt.selects(doc):
                (navigable if has_outline(doc) and doc.id in with_sections else others).append(doc)
        return navigable, others

    def navigate(self, query: str, flt: RetrievalFilter | None = None) -> TreeSearch:
        flt = flt or self.filter
        navigable, others = self.split_by_outline(flt)
        search = TreeSearch(searched_by_chunks=[doc.name for doc in others])
        trees = {doc.id: load_tree(self.index, doc) for doc in navigable}
        if trees:
            self._walk(query, trees, search)
        if search.searched_by_chunks:
            search.hits.extend(self._chunk_hits(query, flt, search.searched_by_chunks))
        return search

    def _walk(self, query: str, trees: dict[str, DocumentTree], search: TreeSearch) -> None:
        vector = self.index.embedder.embed_queries([query])[0]
        similarity: dict[str, float] = {}
        owner: dict[str, DocumentTree] = {}
        for document_id, tree in trees.items():
            ids, vectors = self.index.section_vectors(document_id)
            for node_id, score in zip(ids, vectors @ vector, strict=True):
                similarity[node_id] = float(score)
                owner[node_id] = tree
        sections = {s.node_id: s for tree in trees.values() for s in tree.sections}
        starts = sorted((n for n, s in sections.items() if s.level > 0), key=lambda n: -similarity[n])
        queue = [(-similarity[n], n) for n in starts[: self.start_nodes]]
        heapq.heapify(queue)
        seen = {n for _, n in queue}
        while queue and search.judged < self.max_steps:
            _, node_id = heapq.heappop(queue)
            section, tree = sections[node_id], owner[node_id]
            relevant, calls = self._judge(query, tree, node_id)
            search.judged += 1
            search.calls.extend(calls)
            if not relevant:
                continue
            search.relevant += 1
            if section.is_leaf:
                node = get_node_by_id(tree, node_id)
                if node is None:  # not met: the queue holds the tree's own sections
                    continue
                search.hits.append(
                    TreeHit(
                        source=tree.document.name,
                        id=node_id,
                        title=node.title,
                        start_page=node.start_page,
                        end_page=node.end_page,
                        text=node.text[: self.max_chars],
                        similarity=similarity[node_id],
                        origin="tree",
                    )
                )
            for child in section.children_ids:
                if child in sections and child not in seen:
                    seen.add(child)
                    heapq.heappush(queue, (-similarity.get(child, 0.0), child))
        search.hits.sort(key=lambda hit: -hit.similarity)

    def _judge(self, query: str, tree: DocumentTree, node_id: str) -> tuple[bool, list[ModelCall]]:
        """The model's verdict on one section, asked once per question and section, and the calls it took."""
        key = (query, node_id)
        with self._lock:
            if key in self._verdicts:
                return self._verdicts[key], []
        section = tree.by_short_id[tree.short_id(node_id)]
        messages = [
            SystemMessage(content=JUDGE_SYSTEM),
            HumanMessage(
                content=JUDGE_REQUEST.format(
                    question=query,
                    document=tree.document.name,
                    path=" > ".join(tree.paths.get(node_id, [section.title])),
                    pages=page_span(section),
                    summary=section.summary,
                )
            ),
        ]
        result = structured_call(
            self.judge,
            Relevance,
            messages,
            default=Relevance(relevant=False),
            purpose="judge_section",
            repairs=self.repairs,
            max_tokens=self.judge_max_tokens,
        )
        with self._lock:
            self._verdicts[key] = result.value.relevant
        return result.value.relevant, [a.call for a in result.attempts if a.call is not None]

    def _chunk_hits(self, query: str, flt: RetrievalFilter, documents: list[str]) -> list[TreeHit]:
        hybrid = self.chunk_search or HybridRetriever(index=self.index)
        hits = hybrid.fused(query, flt.model_copy(update={"documents": documents}), limit=self.chunk_hits)
        chunks = self.index.chunks_by_id([h.chunk_id for h in hits])
        return [
            TreeHit(
                source=chunks[h.chunk_id].source,
                id=h.chunk_id,
                title=chunks[h.chunk_id].section_path[-1] if chunks[h.chunk_id].section_path else "",
                start_page=chunks[h.chunk_id].start_page,
                end_page=chunks[h.chunk_id].end_page,
                text=chunks[h.chunk_id].text,
                similarity=h.score,
                origin="chunks",
                chunk_ids=(h.chunk_id,),
            )
            for h in hits
        ]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(
                page_content=hit.text,
                metadata={
                    "source": hit.source,
                    "id": hit.id,
                    "title": hit.title,
                    "start_page": hit.start_page,
                    "end_page": hit.end_page,
                    "origin": hit.origin,
                },
            )
            for hit in self.navigate(query).hits
        ]


def hit_evidence(hit: TreeHit, step: int, rank: int) -> Evidence:
    return Evidence(
        id=hit.id,
        chunk_ids=list(hit.chunk_ids or (hit.id,)),
        source=hit.source,
        section=hit.title,
        start_page=hit.start_page,
        end_page=hit.end_page,
        text=hit.text,
        score=hit.similarity,
        step=step,
        rank=rank,
    )
