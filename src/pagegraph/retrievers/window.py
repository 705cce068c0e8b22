"""Sliding-window expansion: each hit brings its neighbouring chunks of the same document."""

from __future__ import annotations

import numpy as np

from pagegraph.retrievers.results import ScoredChunk
from pagegraph.store.catalog import ChunkCatalog


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


def page_groups(
    hits: list[ScoredChunk], catalog: ChunkCatalog, n: int, pages: int, mask: np.ndarray | None = None
) -> list[ScoredChunk]:
    """Hits ranked by page: at most `pages` groups, each led by the best hit on pages no earlier group covers,
    followed by its ±n neighbours save those on pages an earlier group covers. A hit on covered pages takes no
    group of its own. Chunks carry their group's lead as `hit_id`; a group's chunks are in position order."""
    covered: set[tuple[str, int]] = set()
    seen: set[str] = set()
    grouped: list[ScoredChunk] = []
    leads = 0
    for hit in hits:
        if leads == pages:
            break
        if hit.chunk_id in seen or pages_of(catalog, hit.chunk_id) <= covered:
            continue
        leads += 1
        before = set(covered)
        for chunk_id in catalog.neighbours(hit.chunk_id, n, mask) if n > 0 else [hit.chunk_id]:
            chunk_pages = pages_of(catalog, chunk_id)
            if chunk_id in seen or (chunk_id != hit.chunk_id and chunk_pages <= before):
                continue
            seen.add(chunk_id)
            covered |= chunk_pages
            grouped.append(ScoredChunk(chunk_id, hit.score, hit.retriever, hit_id=hit.chunk_id))
    return grouped


def pages_of(catalog: ChunkCatalog, chunk_id: str) -> set[tuple[str, int]]:
    """The (file name, page) pairs a chunk spans."""
    source, first, last = catalog.location(chunk_id)
    return {(source, page) for page in range(first, last + 1)}
