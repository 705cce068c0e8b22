"""Hybrid retrieval: BM25 and dense candidates fused (convex score fusion, or the weighted rank fusion it first
landed with), optionally reranked, expanded with windows or ranked by page; ranked by page, they can be led by the
pages the question points at (named pages and figures, the statements of a report it asks for). A search whose
filter names no documents can first route: rank the documents (retrievers.documents, no model) and search only the
best few, or the best one alone when it clearly leads, as if the question had named it; in a large library the
ranking reads the dense hits alone, scored by keywords too, as a keyword search over all of it would cost too much.
Words the index has never seen can be searched as its nearest spelling (retrievers.spelling).
`HybridRetriever.for_context` is the retriever the graphs use."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal, Protocol, runtime_checkable

import numpy as np
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, SkipValidation, model_validator

from pagegraph.config import Context, RetrievalKnobs
from pagegraph.retrievers.documents import RankedDocument, rank_documents, shared_by_routing
from pagegraph.retrievers.fusion import adaptive_alpha, convex_fusion, weighted_rrf
from pagegraph.retrievers.named_pages import PageReferences, named_pages, page_references
from pagegraph.retrievers.results import ScoredChunk, to_documents
from pagegraph.retrievers.spelling import correct_spelling, spelling_corrections
from pagegraph.retrievers.statements import asked_statement_pages, asks_for_metric, statement_pages
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.retrievers.window import expand_window, page_groups, pages_of
from pagegraph.state.documents import Chunk
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, chunk) pairs, higher is better; e.g. a cross-encoder a user plugs in."""

    def score(self, query: str, chunks: list[Chunk]) -> list[float]: ...


@dataclass(frozen=True)
class FusedSearch:
    """A search's fused hits; the best cosine of its dense list (on MiniLM's scale, `Embedder.comparable`); the
    filter the question is treated as having named (the routed document when routing settled on one alone); the
    router's first document when it routed."""

    hits: list[ScoredChunk]
    relevance: float
    named: RetrievalFilter
    first_routed: str | None


class HybridRetriever(BaseRetriever):
    """Hybrid search over an index, tuned by the graphs' retrieval knobs (`Context.retrieval`, their defaults unless
    `knobs` is given); `for_context` takes a run's. The configuration it first landed with (weighted rank fusion, no
    windows, no page ranking, no routing) is an evaluation baseline: `eval.baselines.first_landed_hybrid`."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: SkipValidation[Index]  # a protocol: any object with its methods
    knobs: RetrievalKnobs = Field(default_factory=RetrievalKnobs)
    fusion: Literal["rrf", "convex"] = Field(
        default="convex", description="convex score fusion, or weighted reciprocal rank fusion (as first landed)"
    )
    rrf_k: int = Field(default=60, ge=1)
    alpha_by_question: bool = Field(
        default=False, description="rrf only: the BM25 weight by question kind (as first landed), not knobs.alpha"
    )
    filter: RetrievalFilter = Field(default_factory=RetrievalFilter)
    reranker: Reranker | None = None

    @model_validator(mode="after")
    def _by_question_is_rrf(self) -> HybridRetriever:
        if self.alpha_by_question and self.fusion != "rrf":
            raise ValueError("a BM25 weight by question kind is a rank-fusion setting: convex fusion uses knobs.alpha")
        return self

    @classmethod
    def for_context(
        cls, index: Index, context: Context, *, flt: RetrievalFilter | None = None, **knobs: object
    ) -> HybridRetriever:
        """The retriever a run's context asks for, searching within `flt` by default; `knobs` change its retrieval
        knobs (e.g. max_chunks, window)."""
        return cls(
            index=index,
            knobs=context.with_changes(retrieval=knobs).retrieval if knobs else context.retrieval,
            filter=flt or RetrievalFilter(),
        )

    def fused(self, query: str, flt: RetrievalFilter | None = None, limit: int | None = None) -> list[ScoredChunk]:
        """Fused (and reranked) hits, best first, without windows."""
        return self._fused(self._as_searched(query), flt or self.filter, limit).hits

    def spelling_corrections(self, query: str) -> dict[str, str]:
        """The question's words the search reads as others (retrievers.spelling), when it corrects spelling."""
        return (
            spelling_corrections(query, self.index, self.knobs.spelling_min_letters)
            if self.knobs.correct_spelling
            else {}
        )

    def _as_searched(self, query: str) -> str:
        return correct_spelling(query, self.spelling_corrections(query))

    def _candidates(
        self, query: str, vector: np.ndarray, flt: RetrievalFilter, *, keywords: bool = True
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        """The fused candidates (unreranked, uncut) and the dense list; `vector` is the query's embedding, computed
        once however many searches a question takes. Without `keywords`, no keyword search of its own: the dense
        hits alone, fused with their BM25 scores."""
        index = self.index
        lexical = index.keyword_search(query, self.knobs.top_k_bm25, flt) if keywords else []
        dense = DenseRetriever(index=index).search(query, self.knobs.top_k_vector, flt, vector=vector)
        if self.fusion == "rrf":
            alpha = adaptive_alpha(query) if self.alpha_by_question else self.knobs.alpha
            ranked = weighted_rrf([c for c, _ in lexical], [h.chunk_id for h in dense], alpha, self.rrf_k)
            return [ScoredChunk(chunk_id, score, "hybrid") for chunk_id, score, _, _ in ranked], dense
        pool = list(dict.fromkeys([c for c, _ in lexical] + [h.chunk_id for h in dense]))
        # the BM25 scores the keyword hits lack, and the similarities the dense hits lack
        keyword_score = dict(lexical)
        if others := [chunk_id for chunk_id in pool if chunk_id not in keyword_score]:
            keyword_score.update(zip(others, index.keyword_scores_of(query, others).tolist()))
        similarity = {hit.chunk_id: hit.score for hit in dense}
        if missing := [chunk_id for chunk_id in pool if chunk_id not in similarity]:
            similarity.update(zip(missing, index.similarities(missing, vector).tolist()))
        lexical_scores = np.array([keyword_score[chunk_id] for chunk_id in pool], dtype=np.float64)
        similarities = np.array([similarity[chunk_id] for chunk_id in pool], dtype=np.float64)
        # a question in a language the embedder was not trained on (MiniLM and Spanish, Greek, Thai, ...): its
        # cosines are noise
        alpha = self.knobs.alpha if index.embedder.understands(query) else 1.0
        fused = convex_fusion(pool, lexical_scores, similarities, alpha)
        return [ScoredChunk(chunk_id, score, "hybrid") for chunk_id, score in fused], dense

    def _routing_candidates(
        self, query: str, vector: np.ndarray, flt: RetrievalFilter
    ) -> tuple[list[ScoredChunk], list[ScoredChunk]]:
        """The candidates routing ranks documents by: a whole search, or in a library of more than
        `route_keywords_up_to` chunks the dense hits scored by keywords (no keyword search over all of it)."""
        keywords = len(self.index.catalog) <= self.knobs.route_keywords_up_to
        return self._candidates(query, vector, flt, keywords=keywords)

    def routes(self, flt: RetrievalFilter) -> bool:
        """Whether a search under `flt` ranks documents first: one naming no documents, in a library of more than
        `route_documents` documents whose average chunk lies in a document of more than `route_chunks_above` chunks."""
        profiles = self.index.profiles
        return bool(
            self.knobs.route_documents
            and flt.documents is None
            and len(profiles) > self.knobs.route_documents
            and profiles.chunks_around_a_chunk(flt) > self.knobs.route_chunks_above
        )

    def _fused(self, query: str, flt: RetrievalFilter, limit: int | None) -> FusedSearch:
        vector = self.index.embedder.embed_queries([query])[0]
        routes = self.routes(flt)
        hits, dense = (self._routing_candidates if routes else self._candidates)(query, vector, flt)
        first = None
        if routes:
            ranked = rank_documents(
                self.index, query, vector, hits, flt, self.knobs.routing, limit=max(2, self.knobs.route_documents)
            )
            # one document alone only where it can fill the search: the passages of a note or a paragraph alone
            # would leave places empty that the next documents' passages could hold
            alone = (
                len(ranked) > 1
                and ranked[1].score < self.knobs.route_alone * ranked[0].score
                and self.index.profiles.chunks_of(ranked[0].name) > self.knobs.max_chunks
            )
            chosen = ranked[:1] if alone else ranked[: self.knobs.route_documents]
            routed = flt.model_copy(update={"documents": [d.name for d in chosen]})
            hits, dense = self._candidates(query, vector, routed)
            hits = shared_by_routing(
                hits, chosen, self.index.catalog, self.knobs.routed_share, by_page=self.knobs.page_ranking
            )
            first = chosen[0].name if chosen else None
            if alone:
                flt = routed
        if self.reranker is not None:
            hits = self._rerank(self.reranker, query, hits[: 2 * self.knobs.max_chunks])
        relevance = float(self.index.embedder.comparable(max(h.score for h in dense))) if dense else 0.0
        return FusedSearch(hits[: limit or self.knobs.max_chunks], relevance, flt, first)

    def search(self, query: str, flt: RetrievalFilter | None = None) -> list[ScoredChunk]:
        """Fused hits expanded with their windows."""
        return self.search_with_relevance(query, flt)[0]

    def search_with_relevance(self, query: str, flt: RetrievalFilter | None = None) -> tuple[list[ScoredChunk], float]:
        """Fused hits with their windows, and the best cosine similarity of any chunk to the query: fusion scores
        only order hits, this says whether anything in the searched documents is close at all."""
        query, flt = self._as_searched(query), flt or self.filter
        mask = self.index.catalog.mask(flt)
        if self.knobs.page_ranking:
            fused = self._fused(query, flt, self.knobs.top_k_bm25 + self.knobs.top_k_vector)
            hits = self._pages_first(query, fused, mask)
            return page_groups(
                hits, self.index.catalog, self.knobs.window, self.knobs.max_chunks, mask
            ), fused.relevance
        fused = self._fused(query, flt, None)
        return expand_window(fused.hits, self.index.catalog, self.knobs.window, mask), fused.relevance

    def _pages_first(self, query: str, fused: FusedSearch, mask: np.ndarray | None) -> list[ScoredChunk]:
        """Hits led by the pages the question points at, each by its best hit, else by the page's first chunk:
        - the pages it names (retrievers.named_pages), and
        - the statement pages it asks for (retrievers.statements: a financial metric's three statements, a statement
          or a line item named),
        in the documents the filter names (at most `lead_documents`; routing to one document alone names it), else
        in the router's first document (else the best hit's). That document is a guess, and a metric's three
        statements fill the top with it: there they take only the places its own pages hold, which move down, so a
        wrong guess leaves the other documents' places alone."""
        hits, flt = fused.hits, fused.named
        few = flt.documents if flt.documents and len(flt.documents) <= self.knobs.lead_documents else None
        references = page_references(query, self.knobs.page_rules) if self.knobs.named_pages else PageReferences()
        statements = self.knobs.statement_pages
        if not (references or statements) or not (few or hits):
            return hits
        catalog, profiles = self.index.catalog, self.index.profiles
        names = few or [fused.first_routed or catalog.sources[catalog.row_of[hits[0].chunk_id]]]
        score = hits[0].score if hits else 0.0
        lead: list[ScoredChunk] = []
        rules = self.knobs.page_rules
        for name in names:
            if name not in profiles.row_named:
                continue
            document_id = profiles.ids[profiles.row_named[name]]
            wanted = named_pages(self.index.pages(document_id), references, rules) if references else []
            if statements:
                key = ("statement pages", rules.model_dump_json())
                found = self.index.read_from_pages(document_id, key, partial(statement_pages, rules=rules))
                wanted += asked_statement_pages(query, found)
            for page in dict.fromkeys(wanted):
                if flt.pages and not flt.pages[0] <= page <= flt.pages[1]:
                    continue
                on_page = next((h for h in hits if (name, page) in pages_of(catalog, h.chunk_id)), None)
                if on_page is None:
                    on_the_page = catalog.mask(flt.model_copy(update={"documents": [name], "pages": (page, page)}))
                    rows = np.flatnonzero(on_the_page) if on_the_page is not None else np.arange(len(catalog))
                    on_page = ScoredChunk(catalog.ids[rows[0]], score, "hybrid+page") if len(rows) else None
                if on_page is not None and on_page not in lead:
                    lead.append(on_page)
        led = {h.chunk_id for h in lead}
        rest = [h for h in hits if h.chunk_id not in led]
        if few or not lead or not asks_for_metric(query):
            return lead + rest
        # the places of the guessed document's own pages, as the search's pages would be grouped
        groups = page_groups(rest, catalog, self.knobs.window, self.knobs.max_chunks, mask)
        places = [(g, catalog.location(g.chunk_id)[0] == names[0]) for g in groups if g.hit_id == g.chunk_id]
        own = iter(lead + [g for g, guessed in places if guessed])
        return [next(own) if guessed else g for g, guessed in places] + list(own) + rest

    def rank_documents(self, query: str, flt: RetrievalFilter | None = None) -> list[RankedDocument]:
        """The documents the filter allows, best first, ranked without a model (retrievers.documents)."""
        query, flt = self._as_searched(query), flt or self.filter
        vector = self.index.embedder.embed_queries([query])[0]
        hits, _ = self._routing_candidates(query, vector, flt)
        return rank_documents(self.index, query, vector, hits, flt, self.knobs.routing)

    def _rerank(self, reranker: Reranker, query: str, hits: list[ScoredChunk]) -> list[ScoredChunk]:
        chunks = self.index.chunks_by_id([h.chunk_id for h in hits])
        scores = reranker.score(query, [chunks[h.chunk_id] for h in hits])
        ranked = sorted(zip(hits, scores), key=lambda pair: -pair[1])
        return [ScoredChunk(hit.chunk_id, float(score), "hybrid+rerank") for hit, score in ranked]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        hits = self.search(query)
        return to_documents(hits, self.index.chunks_by_id([h.chunk_id for h in hits]))
