"""Sliding-window expansion: each hit brings its neighbouring chunks of the same document."""

from __future__ import annotations

import numpy as np

from pagegraph.retrievers.catalog import ChunkCatalog
from pagegraph.retrievers.results import ScoredChunk


def expand_window(
    hits: list[ScoredChunk], catalog: ChunkCatalog, n: int, mask: np.ndarray | None = None
) -> list[ScoredChunk]:
    """Hits in rank order, each followed by its ±n neighbours in position order. A chunk appears once, under the
    best-ranked hit that reaches it; its `hit_id` names that hit. n = 0 returns the hits unchanged."""
    if n <= 0:
        return list(hits)
    seen: set[str] = set()
    expanded: list[ScoredChunk] = []
    for hit in hits:
        if hit.chunk_id in seen:
            continue
        for chunk_id in catalog.neighbours(hit.chunk_id, n, mask):
            if chunk_id not in seen:
                seen.add(chunk_id)
                expanded.append(ScoredChunk(chunk_id, hit.score, hit.retriever, hit_id=hit.chunk_id))
    return expanded
