"""Retrieval evaluation: every retriever answers every question over the same index; page and document metrics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from pagegraph.eval.baselines import LangChainEnsemble
from pagegraph.eval.metrics import RetrievedGroup, gold_for, question_metrics, summarise
from pagegraph.indexing.index import Index
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.catalog import ChunkCatalog
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.records import EvalQuestion, EvalRun, RetrievalFilter

RETRIEVERS = ("bm25", "dense", "hybrid", "hybrid+window", "ensemble")
Search = Callable[[str, RetrievalFilter | None], list[list[str]]]


@dataclass
class RetrievalEvalConfig:
    retrievers: list[str]
    scope: str = "document"
    ks: tuple[int, ...] = (1, 3, 5, 10, 20)
    window: int = 1


def _groups(hits: list[ScoredChunk]) -> list[list[str]]:
    """Chunk ids grouped under the hit that brought them, in rank order."""
    grouped: dict[str, list[str]] = {}
    for hit in hits:
        grouped.setdefault(hit.hit_id or hit.chunk_id, []).append(hit.chunk_id)
    return list(grouped.values())


def _covered(group: list[str], catalog: ChunkCatalog) -> RetrievedGroup:
    """The document and pages a hit and its window cover."""
    locations = [catalog.location(chunk_id) for chunk_id in group]
    pages = frozenset(page for _, first, last in locations for page in range(first, last + 1))
    return RetrievedGroup(source=locations[0][0], pages=pages)


def make_searches(index: Index, config: RetrievalEvalConfig) -> dict[str, Search]:
    k = max(config.ks)
    searches: dict[str, Search] = {}
    for name in config.retrievers:
        if name == "bm25":
            bm25 = BM25ChunkRetriever(index=index)
            searches[name] = lambda q, f, r=bm25: [[h.chunk_id] for h in r.search(q, k, f)]
        elif name == "dense":
            dense = DenseRetriever(index=index)
            searches[name] = lambda q, f, r=dense: [[h.chunk_id] for h in r.search(q, k, f)]
        elif name == "hybrid":
            hybrid = HybridRetriever(index=index, max_chunks=k)
            searches[name] = lambda q, f, r=hybrid: [[h.chunk_id] for h in r.fused(q, f)]
        elif name == "hybrid+window":
            windowed = HybridRetriever(index=index, max_chunks=k, window=config.window)
            searches[name] = lambda q, f, r=windowed: _groups(r.search(q, f))
        elif name == "ensemble":
            ensemble = LangChainEnsemble(index)
            searches[name] = lambda q, f, r=ensemble: [[chunk_id] for chunk_id in r.search(q, f, k)]
        else:
            raise ValueError(f"unknown retriever {name!r} (choose from {', '.join(RETRIEVERS)})")
    return searches


def run_retrieval_eval(
    index: Index,
    questions: list[EvalQuestion],
    config: RetrievalEvalConfig,
    on_question: Callable[[int], None] | None = None,
) -> EvalRun:
    catalog = index.catalog
    page_counts = {doc.name: doc.n_pages for doc in index.store.documents()}
    searches = make_searches(index, config)
    ks = list(config.ks)
    rows: dict[str, list[dict]] = {name: [] for name in searches}
    latencies: dict[str, list[float]] = {name: [] for name in searches}
    per_question: list[dict] = []
    dropped = with_pages = 0
    for number, question in enumerate(questions, start=1):
        gold = gold_for(question, page_counts)
        dropped += gold.dropped_pages
        if question.answerable and (gold.pages or gold.documents):
            with_pages += bool(gold.pages)
            flt = RetrievalFilter(documents=question.documents) if config.scope == "document" else None
            for name, search in searches.items():
                started = time.perf_counter()
                groups = search(question.question, flt)
                latencies[name].append((time.perf_counter() - started) * 1000)
                retrieved = [_covered(group, catalog) for group in groups]
                metrics = question_metrics(retrieved, gold, ks)
                rows[name].append(metrics)
                per_question.append(
                    {
                        "id": question.id,
                        "retriever": name,
                        **metrics,
                        "latency_ms": round(latencies[name][-1], 2),
                        "top_chunks": [group[0] for group in groups[:5]],
                    }
                )
        if on_question:
            on_question(number)
    summary = {name: summarise(rows[name], latencies[name], ks) for name in searches}
    run_config = {
        "retrievers": list(searches),
        "scope": config.scope,
        "ks": ks,
        "window": config.window,
        "index": str(index.folder),
        "index_params": index.params.model_dump(),
        "questions": len(questions),
        "dropped_gold_pages": dropped,
        "rows_with_page_evidence": with_pages,
    }
    return EvalRun(
        id=uuid.uuid4().hex[:12], mode="retrieval", config=run_config, summary=summary, per_question=per_question
    )
