"""Document routing without a model: which documents a question is about, from four rankings of the documents the
filter allows, fused by weighted reciprocal rank:

- profile: BM25 over each document's label, title, summary, topics and section titles;
- centroid: cosine between the question and the mean of the document's chunk vectors;
- chunks: the sum of the document's best few fused chunk scores (the passages that would be retrieved; in a large
  library, of the dense hits alone: retrievers.hybrid);
- terms: the names and years the question writes (retrievers.key_terms) whose every BM25 word ("q2"; "gpt" and
  "4o") the document holds somewhere, each weighted by how few of the allowed documents hold it: "Amazon's Q3 2023
  10-Q" favours the filings that name Amazon, whatever their file names say; a term every document holds counts
  nothing.

Documents with equal scores on a ranking share its rank.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from pagegraph.config import RoutingWeights
from pagegraph.retrievers.key_terms import documents_holding, key_terms
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.index import Index
from pagegraph.text.words import tokenize

SIGNALS = ("profile", "centroid", "chunks", "terms")


@dataclass(frozen=True)
class RankedDocument:
    name: str
    score: float
    ranks: dict[str, int]


def rank_documents(
    index: Index,
    query: str,
    query_vector: np.ndarray,
    chunk_hits: list[ScoredChunk],
    flt: RetrievalFilter | None,
    weights: RoutingWeights,
    limit: int | None = None,
) -> list[RankedDocument]:
    """The documents the filter allows, best first (the first `limit` of them, when given). `chunk_hits` are fused
    chunk hits under the same filter."""
    profiles = index.profiles
    allowed = profiles.allowed(flt)
    evidence = np.zeros(len(profiles), dtype=np.float64)
    counted: dict[int, int] = defaultdict(int)
    catalog = index.catalog
    for hit in chunk_hits:
        row = profiles.row_of.get(catalog.document_ids[catalog.row_of[hit.chunk_id]])
        if row is not None and counted[row] < weights.per_document:
            counted[row] += 1
            evidence[row] += hit.score
    scores = {
        "profile": np.asarray(profiles.lexical(query), dtype=np.float64),
        "centroid": np.asarray(profiles.similarity(query_vector), dtype=np.float64),
        "chunks": evidence,
        "terms": term_scores(index, query, allowed),
    }
    candidates = np.flatnonzero(allowed)
    fused = np.zeros(len(profiles), dtype=np.float64)
    ranks: dict[str, np.ndarray] = {}  # per signal, each document's rank on it (0: none)
    for signal in SIGNALS:
        values = scores[signal][candidates]
        # documents with no score on a signal get no rank from it (nothing lexical matched, no chunk retrieved)
        present = candidates[values > 0] if signal != "centroid" else candidates
        present_values = scores[signal][present]
        ranks[signal] = np.zeros(len(profiles), dtype=np.int64)
        ranks[signal][present] = 1 + np.searchsorted(np.sort(-present_values), -present_values, side="left")
        if weight := getattr(weights, signal):
            fused[present] += weight / (weights.rrf_k + ranks[signal][present])
    best = candidates[np.argsort(-fused[candidates], kind="stable")][:limit]
    return [
        RankedDocument(
            profiles.names[row], float(fused[row]), {s: int(ranks[s][row]) for s in SIGNALS if ranks[s][row]}
        )
        for row in best
    ]


def shared_by_routing(
    hits: list[ScoredChunk], routed: list[RankedDocument], catalog: ChunkCatalog, power: float, *, by_page: bool
) -> list[ScoredChunk]:
    """`hits` (within the routed documents, best first) reordered so that each routed document holds the first
    places in proportion to its routing score raised to `power`: each place goes to the document with the highest
    weight per place it already holds (D'Hondt's sequence; ties to the better routed), which gives it its next
    best hit (`by_page`: its next best on a page it has not placed yet, as hits ranked by page take no place on a
    page already placed; those follow). `power` 0, or one routed document, leaves the order alone."""
    if power <= 0 or len(routed) < 2:
        return hits
    queues: dict[str, list[ScoredChunk]] = {document.name: [] for document in routed}
    placed_pages: set[tuple[str, int]] = set()
    repeats: list[ScoredChunk] = []
    for hit in hits:
        source, first, _ = catalog.location(hit.chunk_id)
        if source in queues and not (by_page and (source, first) in placed_pages):
            placed_pages.add((source, first))
            queues[source].append(hit)
        else:
            repeats.append(hit)
    weights = {document.name: document.score**power for document in routed}
    held = dict.fromkeys(queues, 0)
    shared: list[ScoredChunk] = []
    while waiting := [name for name in queues if len(queues[name]) > held[name]]:
        name = max(waiting, key=lambda n: weights[n] / (held[n] + 1))
        shared.append(queues[name][held[name]])
        held[name] += 1
    return shared + repeats


def term_scores(index: Index, query: str, allowed: np.ndarray) -> np.ndarray:
    """Per document: the summed log(allowed documents / allowed documents holding the term) of the question's key
    terms it holds."""
    scores = np.zeros(len(allowed), dtype=np.float64)
    total = int(allowed.sum())
    for term in key_terms(query):
        holding = documents_holding(index, tokenize(term)) & allowed
        if holding.any():
            scores[holding] += np.log(total / holding.sum())
    return scores
