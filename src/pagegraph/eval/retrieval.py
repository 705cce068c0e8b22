"""Retrieval evaluation: every retriever answers every question over the same index; page and document metrics."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import zip_longest

from langchain_core.language_models import BaseChatModel

from pagegraph.config import Context
from pagegraph.eval.baselines import LangChainEnsemble, first_landed_hybrid
from pagegraph.eval.metrics import RetrievedGroup, gold_for, question_metrics, summarise
from pagegraph.llm.calls import model_label
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.retrievers.tree import TreeRetriever, TreeSearch
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.evaluation import EvalQuestion, EvalRun
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.index import Index

# "hybrid" and "hybrid+window" are the retriever as it first landed (eval.baselines); "default" is what the graphs search
# with (Context's defaults); "routing" ranks documents only (doc_hit@k).
RETRIEVERS = ("bm25", "dense", "hybrid", "hybrid+window", "default", "routing", "ensemble", "tree", "hybrid+tree")
TREE_RETRIEVERS = ("tree", "hybrid+tree")
Search = Callable[[str, RetrievalFilter | None], list[RetrievedGroup]]


@dataclass
class RetrievalEvalConfig:
    """`judge` is the model the tree retrievers ask about sections (needed by tree and hybrid+tree only)."""

    retrievers: list[str]
    scope: str = "document"
    ks: tuple[int, ...] = (1, 3, 5, 10, 20)
    window: int = 1
    judge: BaseChatModel | None = None
    context: Context = field(default_factory=Context)  # what "default", "routing" and the tree ones are configured by


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


def _tree_groups(search: TreeSearch) -> list[RetrievedGroup]:
    return [RetrievedGroup(h.source, frozenset(range(h.start_page, h.end_page + 1))) for h in search.hits]


def interleave(first: list[RetrievedGroup], second: list[RetrievedGroup]) -> list[RetrievedGroup]:
    """Round-robin merge, first list first; a group covering nothing new is skipped."""
    merged: list[RetrievedGroup] = []
    for group in (g for pair in zip_longest(first, second) for g in pair if g is not None):
        if group not in merged:
            merged.append(group)
    return merged


def make_searches(index: Index, config: RetrievalEvalConfig) -> dict[str, Search]:
    catalog = index.catalog

    def chunks(ids: list[str]) -> list[RetrievedGroup]:
        return [_covered([chunk_id], catalog) for chunk_id in ids]

    tree: TreeRetriever | None = None
    if any(name in TREE_RETRIEVERS for name in config.retrievers):
        if config.judge is None:
            raise ValueError("the tree retrievers need a model to judge sections")
        # one retriever for both: its cached verdicts spare hybrid+tree the model calls tree already made
        tree = TreeRetriever(
            index=index,
            judge=config.judge,
            start_nodes=config.context.tree.start_nodes,
            max_steps=config.context.tree.max_steps,
            repairs=config.context.repair_attempts,
            chunk_search=first_landed_hybrid(index),
        )
    return {name: _search(name, index, config, chunks, tree) for name in config.retrievers}


def _search(
    name: str,
    index: Index,
    config: RetrievalEvalConfig,
    chunks: Callable[[list[str]], list[RetrievedGroup]],
    tree: TreeRetriever | None,
) -> Search:
    """The search eval's retriever `name` runs; `chunks` groups chunk ids, `tree` is the tree retrievers' one."""
    k, catalog = max(config.ks), index.catalog
    if name == "bm25":
        bm25 = BM25ChunkRetriever(index=index)
        return lambda q, f: chunks([h.chunk_id for h in bm25.search(q, k, f)])
    if name == "dense":
        dense = DenseRetriever(index=index)
        return lambda q, f: chunks([h.chunk_id for h in dense.search(q, k, f)])
    if name == "hybrid":
        hybrid = first_landed_hybrid(index, max_chunks=k)
        return lambda q, f: chunks([h.chunk_id for h in hybrid.fused(q, f)])
    if name == "hybrid+window":
        windowed = first_landed_hybrid(index, max_chunks=k, window=config.window)
        return lambda q, f: [_covered(g, catalog) for g in _groups(windowed.search(q, f))]
    if name == "default":
        product = HybridRetriever.for_context(index, config.context, max_chunks=k)
        return lambda q, f: [_covered(g, catalog) for g in _groups(product.search(q, f))]
    if name == "routing":
        router = HybridRetriever.for_context(index, config.context)
        return lambda q, f: [RetrievedGroup(d.name, frozenset()) for d in router.rank_documents(q, f)[:k]]
    if name == "ensemble":
        ensemble = LangChainEnsemble(index)
        return lambda q, f: chunks(ensemble.search(q, f, k))
    if name == "tree" and tree is not None:
        return lambda q, f: _tree_groups(tree.navigate(q, f))
    if name == "hybrid+tree" and tree is not None:
        fused = first_landed_hybrid(index, max_chunks=k)
        return lambda q, f: interleave(
            chunks([h.chunk_id for h in fused.fused(q, f)]), _tree_groups(tree.navigate(q, f))
        )[:k]
    raise ValueError(f"unknown retriever {name!r} (choose from {', '.join(RETRIEVERS)})")


def run_retrieval_eval(
    index: Index,
    questions: list[EvalQuestion],
    config: RetrievalEvalConfig,
    on_question: Callable[[int], None] | None = None,
) -> EvalRun:
    page_counts = {doc.name: doc.n_pages for doc in index.documents()}
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
                retrieved = search(question.question, flt)
                latencies[name].append((time.perf_counter() - started) * 1000)
                metrics = question_metrics(retrieved, gold, ks)
                if name == "routing":  # documents only: page metrics do not apply
                    metrics = {key: value for key, value in metrics.items() if key.startswith("doc_hit")}
                rows[name].append(metrics)
                per_question.append(
                    {
                        "id": question.id,
                        "retriever": name,
                        **metrics,
                        "latency_ms": round(latencies[name][-1], 2),
                        "top": [f"{g.source} p. {min(g.pages)}-{max(g.pages)}" for g in retrieved[:5] if g.pages],
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
        "index": index.location,
        "index_params": index.params.model_dump(),
        "questions": len(questions),
        "dropped_gold_pages": dropped,
        "rows_with_page_evidence": with_pages,
        "tree_judge": model_label(config.judge) if config.judge is not None else None,
        "tree_start_nodes": config.context.tree.start_nodes,
        "tree_max_steps": config.context.tree.max_steps,
    }
    return EvalRun(
        id=uuid.uuid4().hex[:12], mode="retrieval", config=run_config, summary=summary, per_question=per_question
    )
