"""Retrieval metrics over page- and document-level evidence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pagegraph.state.evaluation import EvalQuestion

PageRef = tuple[str, int]


@dataclass(frozen=True)
class RetrievedGroup:
    """One ranked hit with the chunks its window brought: the document and the pages they cover."""

    source: str
    pages: frozenset[int]


@dataclass(frozen=True)
class Gold:
    pages: frozenset[PageRef]
    documents: frozenset[str]
    dropped_pages: int


def gold_for(question: EvalQuestion, page_counts: dict[str, int]) -> Gold:
    """Gold evidence with pages that are not pages of the document (page 0, past the end, unknown file) dropped."""
    pages, dropped = set(), 0
    for evidence in question.evidence:
        if evidence.page is None:
            continue
        if 1 <= evidence.page <= page_counts.get(evidence.document, 0):
            pages.add((evidence.document, evidence.page))
        else:
            dropped += 1
    documents = {e.document for e in question.evidence} or set(question.documents)
    return Gold(frozenset(pages), frozenset(documents), dropped)


def question_metrics(groups: list[RetrievedGroup], gold: Gold, ks: list[int]) -> dict[str, float | None]:
    """hit@k, recall@k, doc_hit@k and reciprocal rank for one question; None where the gold does not allow it."""
    metrics: dict[str, float | None] = {}
    covered_at: list[set[PageRef]] = []
    covered: set[PageRef] = set()
    for group in groups:
        covered |= {(group.source, page) for page in group.pages}
        covered_at.append(set(covered))
    for k in ks:
        top = covered_at[min(k, len(covered_at)) - 1] if covered_at else set()
        found = gold.pages & top
        metrics[f"hit@{k}"] = float(bool(found)) if gold.pages else None
        metrics[f"recall@{k}"] = len(found) / len(gold.pages) if gold.pages else None
        documents = {group.source for group in groups[:k]}
        metrics[f"doc_hit@{k}"] = float(bool(gold.documents & documents)) if gold.documents else None
    reciprocal = 0.0
    for rank, group in enumerate(groups, start=1):
        if gold.pages & {(group.source, page) for page in group.pages}:
            reciprocal = 1.0 / rank
            break
    metrics["mrr"] = reciprocal if gold.pages else None
    return metrics


def summarise(rows: list[dict[str, float | None]], latencies_ms: list[float], ks: list[int]) -> dict[str, float | None]:
    """Means over the rows where each metric applies (page metrics: rows with page evidence; None when no row
    has any); `n` counts the rows scored, i.e. answerable rows with page or document evidence."""
    summary: dict[str, float | None] = {}
    for key in [*(f"{m}@{k}" for m in ("hit", "recall", "doc_hit") for k in ks), "mrr"]:
        values = [value for row in rows if (value := row.get(key)) is not None]
        summary[key] = round(float(np.mean(values)), 4) if values else None
    summary["n"] = len(rows)
    summary["latency_ms_p50"] = round(float(np.percentile(latencies_ms, 50)), 2) if latencies_ms else 0.0
    summary["latency_ms_p95"] = round(float(np.percentile(latencies_ms, 95)), 2) if latencies_ms else 0.0
    return summary
