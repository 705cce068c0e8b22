"""Fusing the lexical and dense rankings: a convex combination of normalised scores (what the graphs use), and
weighted reciprocal rank fusion with weights by question kind (the hybrid retriever as it first landed, kept for
comparison); and the question-kind detector."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from pagegraph.state.answering import QuestionKind

_ENUMERATION = re.compile(
    r"\b(list(ed)?\s+(all|every|each|the)|enumerate|what\s+are\s+(all|the)|which\s+(ones|of\s+the)|how\s+many|"
    r"name\s+(all|every|the)|all\s+(the\s+)?\w+s\b|every\s+\w+|number\s+of|count)\b",
    re.IGNORECASE,
)
_REASONING = re.compile(
    r"\b(why|how\s+(does|do|did|can|could|would|should)|explain|reason|compare|comparison|difference|differ|"
    r"impact|effect|affect|cause|implication|relationship|trade-?off|evaluate|assess|justify)\b",
    re.IGNORECASE,
)

# Weight of BM25 in the rank fusion (dense gets 1 - alpha) per question kind, as first chosen on page-level evidence
# within named documents. Across a library these weights trail dense retrieval alone (see convex_fusion).
ALPHA_BY_KIND: dict[QuestionKind, float] = {"enumeration": 0.9, "lookup": 0.85, "reasoning": 0.4}


def question_kind(question: str) -> QuestionKind:
    """Enumeration questions want every matching passage (lexical), reasoning ones want meaning (dense)."""
    if _ENUMERATION.search(question):
        return "enumeration"
    if _REASONING.search(question):
        return "reasoning"
    return "lookup"


def adaptive_alpha(question: str) -> float:
    return ALPHA_BY_KIND[question_kind(question)]


def weighted_rrf(
    lexical: Sequence[str], dense: Sequence[str], alpha: float, k: int = 60
) -> list[tuple[str, float, int | None, int | None]]:
    """Fuse two rankings: score = alpha / (k + lexical rank) + (1 - alpha) / (k + dense rank), ranks from 1.

    Returns (chunk id, fused score, lexical rank, dense rank) best first; ties keep the lexical list's order."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    scores: dict[str, float] = {}
    lexical_rank: dict[str, int] = {}
    dense_rank: dict[str, int] = {}
    for rank, chunk_id in enumerate(dict.fromkeys(lexical), start=1):
        lexical_rank[chunk_id] = rank
        scores[chunk_id] = scores.get(chunk_id, 0.0) + alpha / (k + rank)
    for rank, chunk_id in enumerate(dict.fromkeys(dense), start=1):
        dense_rank[chunk_id] = rank
        scores[chunk_id] = scores.get(chunk_id, 0.0) + (1.0 - alpha) / (k + rank)
    order = sorted(scores, key=lambda chunk_id: -scores[chunk_id])
    return [(c, scores[c], lexical_rank.get(c), dense_rank.get(c)) for c in order]


def convex_fusion(
    chunk_ids: Sequence[str], lexical: np.ndarray, dense: np.ndarray, alpha: float
) -> list[tuple[str, float]]:
    """Fuse the scores of one pool of candidates: alpha * BM25 / the pool's best BM25 + (1 - alpha) * the cosine
    rescaled to [0, 1] between the pool's worst and best. Unlike ranks, scores keep how far apart candidates are,
    so a list with one clear winner outweighs a list of near-ties. Best first; ties keep the pool's order."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    if not len(chunk_ids):
        return []
    lexical = np.maximum(np.asarray(lexical, dtype=np.float64), 0.0)
    dense = np.asarray(dense, dtype=np.float64)
    top = lexical.max()
    lexical_part = lexical / top if top > 0 else lexical
    spread = dense.max() - dense.min()
    dense_part = (dense - dense.min()) / spread if spread > 0 else np.ones_like(dense)
    fused = alpha * lexical_part + (1.0 - alpha) * dense_part
    order = np.argsort(-fused, kind="stable")
    return [(chunk_ids[i], float(fused[i])) for i in order]
