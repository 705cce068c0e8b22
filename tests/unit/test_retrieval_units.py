from __future__ import annotations

import json
from datetime import date

import numpy as np
import pytest

from pagegraph.eval.metrics import Gold, RetrievedGroup, gold_for, question_metrics, summarise
from pagegraph.retrievers.fusion import ALPHA_BY_KIND, adaptive_alpha, convex_fusion, question_kind, weighted_rrf
from pagegraph.retrievers.results import ScoredChunk
from pagegraph.retrievers.window import expand_window, page_groups
from pagegraph.state.documents import Chunk, DocumentTags
from pagegraph.state.evaluation import EvalQuestion
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.catalog import ChunkCatalog
from pagegraph.store.filters import chroma_where
from pagegraph.store.vectors import chunk_metadata


def test_weighted_rrf_arithmetic() -> None:
    fused = weighted_rrf(["a", "b", "c"], ["c", "d"], alpha=0.75, k=60)
    scores = {chunk_id: score for chunk_id, score, _, _ in fused}
    assert scores["a"] == pytest.approx(0.75 / 61)
    assert scores["b"] == pytest.approx(0.75 / 62)
    assert scores["c"] == pytest.approx(0.75 / 63 + 0.25 / 61)
    assert scores["d"] == pytest.approx(0.25 / 62)
    assert [chunk_id for chunk_id, *_ in fused] == ["c", "a", "b", "d"]  # found by both lists: first
    ranks = {chunk_id: (lex, dense) for chunk_id, _, lex, dense in fused}
    assert ranks["c"] == (3, 1) and ranks["d"] == (None, 2)


def test_weighted_rrf_dedupes_and_bounds_alpha() -> None:
    fused = weighted_rrf(["a", "a", "b"], ["b", "b"], alpha=0.5)
    assert [chunk_id for chunk_id, *_ in fused] == ["b", "a"]
    assert weighted_rrf(["a"], ["b"], alpha=1.0)[-1][1] == 0.0
    with pytest.raises(ValueError):
        weighted_rrf(["a"], ["b"], alpha=1.5)


def test_convex_fusion_normalises_each_list() -> None:
    fused = convex_fusion(["a", "b", "c"], np.array([10.0, 5.0, 0.0]), np.array([0.2, 0.6, 0.4]), alpha=0.4)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(0.4 * 1.0 + 0.6 * 0.0)
    assert scores["b"] == pytest.approx(0.4 * 0.5 + 0.6 * 1.0)
    assert scores["c"] == pytest.approx(0.4 * 0.0 + 0.6 * 0.5)
    assert [chunk_id for chunk_id, _ in fused] == ["b", "a", "c"]
    # a query no chunk matches lexically ranks by cosine alone; one candidate, or equal cosines, do not divide by 0
    assert [c for c, _ in convex_fusion(["a", "b"], np.zeros(2), np.array([0.1, 0.3]), 0.4)] == ["b", "a"]
    assert convex_fusion(["a"], np.array([2.0]), np.array([0.5]), 0.4) == [("a", pytest.approx(1.0))]
    assert convex_fusion([], np.zeros(0), np.zeros(0), 0.4) == []
    with pytest.raises(ValueError):
        convex_fusion(["a"], np.zeros(1), np.zeros(1), alpha=-0.1)


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("List all the operating modes of the battery.", "enumeration"),
        ("How many error codes are there?", "enumeration"),
        ("What are all the warning codes?", "enumeration"),
        ("Enumerate the installation steps", "enumeration"),
        ("Why does the unit reduce its power in the cold?", "reasoning"),
        ("How does time-of-use mode save money compared to backup mode?", "reasoning"),
        ("What is the weight of the SB-40?", "lookup"),
        ("When do firmware updates install?", "lookup"),
    ],
)
def test_question_kind(question: str, kind: str) -> None:
    assert question_kind(question) == kind
    assert adaptive_alpha(question) == ALPHA_BY_KIND[kind]


def test_enumeration_weighs_bm25_more_than_reasoning() -> None:
    assert ALPHA_BY_KIND["enumeration"] > ALPHA_BY_KIND["lookup"] > ALPHA_BY_KIND["reasoning"]


A_TAGS = json.dumps(
    {"project": "x", "source_type": "manual", "confidentiality": "public", "date": "2023-04-01", "extra": {}}
)


def make_catalog() -> ChunkCatalog:
    tags = {
        "a": A_TAGS,
        "b": json.dumps({"project": "y", "source_type": None, "confidentiality": "confidential", "extra": {}}),
    }
    rows = [(f"a{i}", "A", "a.pdf", i, i + 1, i + 1, tags["a"]) for i in range(5)]
    rows += [(f"b{i}", "B", "b.pdf", i, 1, 1, tags["b"]) for i in range(3)]
    return ChunkCatalog(rows, order=[row[0] for row in reversed(rows)])


def test_chunks_removed_since_bm25_was_built_pass_no_mask() -> None:
    """A reader over a BM25 index older than the store: chunks it lists that the store no longer holds stay as rows
    no filter lets through, and their neighbours' windows skip them."""
    full = make_catalog()
    tags = json.dumps({"project": "x", "source_type": "manual", "confidentiality": "public", "extra": {}})
    rows = [(f"a{i}", "A", "a.pdf", i, i + 1, i + 1, tags) for i in range(5)]
    catalog = ChunkCatalog(rows, order=full.ids)  # b.pdf was removed after BM25 was built
    assert not catalog.all_live and not catalog.holds("b0") and catalog.holds("a0") and not catalog.holds("zz")
    assert set(np.array(catalog.ids)[catalog.mask(None)]) == {f"a{i}" for i in range(5)}
    assert not catalog.mask(RetrievalFilter(documents=["b.pdf"])).any()
    assert catalog.neighbours("a1", 1) == ["a0", "a1", "a2"]


def test_a_changed_catalog_masks_as_one_built_whole_from_the_new_rows() -> None:
    """A database reader's next snapshot: b.pdf replaced (same document id, new chunks and tags), c.pdf added, the
    rest carried over; every filter lets through what a catalog built from the new rows would."""
    before = make_catalog()
    tags = json.dumps({"project": "z", "source_type": "memo", "confidentiality": "internal", "extra": {}})
    replaced = [(f"b{i}", "B", "b.pdf", i, 2, 2, tags) for i in range(2)]
    added = [(f"c{i}", "C", "c.pdf", i, 1, 1, tags) for i in range(2)]
    changed = before.changed({"B"}, replaced + added)
    kept = [(f"a{i}", "A", "a.pdf", i, i + 1, i + 1, A_TAGS) for i in range(5)]
    whole = ChunkCatalog(kept + replaced + added, order=[row[0] for row in kept + replaced + added])
    assert not changed.all_live and changed.holds("b1") and not changed.holds("b2")
    cases = [
        None,
        RetrievalFilter(documents=["b.pdf"]),
        RetrievalFilter(documents=["c.pdf", "a.pdf"]),
        RetrievalFilter(projects=["y"]),
        RetrievalFilter(projects=["z"]),
        RetrievalFilter(source_types=["memo"]),
        RetrievalFilter(max_confidentiality="internal"),
        RetrievalFilter(pages=(2, 2)),
    ]
    for flt in cases:
        mask, expected = changed.mask(flt), whole.mask(flt)
        got = {c for c, keep in zip(changed.ids, changed.live if mask is None else mask) if keep}
        assert got == {c for c, keep in zip(whole.ids, whole.live if expected is None else expected) if keep}, flt
    assert changed.neighbours("b0", 2) == ["b0", "b1"] and changed.location("b1") == ("b.pdf", 2, 2)
    assert before.holds("b2") and before.location("b0") == ("b.pdf", 1, 1), "the earlier catalog stays as it was"


def test_catalog_follows_bm25_order_and_masks_before_scoring() -> None:
    catalog = make_catalog()
    assert catalog.ids[0] == "b2" and catalog.sources[catalog.row_of["a0"]] == "a.pdf"
    assert catalog.mask(None) is None and catalog.mask(RetrievalFilter()) is None
    cases = [
        (RetrievalFilter(documents=["a.pdf"]), {f"a{i}" for i in range(5)}),
        (RetrievalFilter(projects=["y"]), {"b0", "b1", "b2"}),
        (RetrievalFilter(source_types=["manual"]), {f"a{i}" for i in range(5)}),
        (RetrievalFilter(max_confidentiality="internal"), {f"a{i}" for i in range(5)}),
        (RetrievalFilter(pages=(2, 3)), {"a1", "a2"}),
        (RetrievalFilter(documents=["a.pdf", "b.pdf"], pages=(1, 1)), {"a0", "b0", "b1", "b2"}),
        (RetrievalFilter(date_from=date(2023, 4, 1)), {f"a{i}" for i in range(5)}),  # b is undated: in no range
        (RetrievalFilter(date_to=date(2023, 3, 31)), set()),
        (RetrievalFilter(date_from=date(2023, 1, 1), date_to=date(2023, 4, 1)), {f"a{i}" for i in range(5)}),
    ]
    for flt, expected in cases:
        mask = catalog.mask(flt)
        assert {chunk_id for chunk_id, keep in zip(catalog.ids, mask) if keep} == expected, flt


def test_chroma_where_mirrors_the_mask() -> None:
    assert chroma_where(RetrievalFilter()) is None and not RetrievalFilter().restricts
    assert chroma_where(RetrievalFilter(documents=["a.pdf"])) == {"source": {"$in": ["a.pdf"]}}
    where = chroma_where(RetrievalFilter(max_confidentiality="internal", pages=(2, 3)))
    assert where == {
        "$and": [{"confidentiality_rank": {"$lte": 1}}, {"end_page": {"$gte": 2}}, {"start_page": {"$lte": 3}}]
    }
    dated = chroma_where(RetrievalFilter(date_from=date(2023, 1, 2), date_to=date(2023, 12, 31)))
    assert dated == {"$and": [{"date": {"$gte": 20230102}}, {"date": {"$lte": 20231231}}]}
    tags = DocumentTags(date=date(2023, 1, 2))
    assert (
        chunk_metadata(
            Chunk(
                id="c",
                document_id="d",
                source="s",
                position=0,
                text="t",
                start_offset=0,
                end_offset=1,
                start_page=1,
                end_page=1,
                section_id="n",
                section_path=[],
                tags=tags,
                index_version=1,
            )
        )["date"]
        == 20230102
    )
    assert RetrievalFilter(date_from=date(2023, 1, 2)).allows(tags)
    assert not RetrievalFilter(date_to=date(2023, 1, 1)).allows(tags)
    assert not RetrievalFilter(date_to=date(2023, 1, 1)).allows(DocumentTags())  # undated: in no range
    assert RetrievalFilter().allows(DocumentTags())


def test_window_expansion_at_document_edges_and_dedupe() -> None:
    catalog = make_catalog()
    hits = [ScoredChunk("a0", 0.9, "hybrid"), ScoredChunk("a1", 0.8, "hybrid"), ScoredChunk("b2", 0.7, "hybrid")]
    expanded = expand_window(hits, catalog, n=1)
    assert [(h.chunk_id, h.hit_id) for h in expanded] == [
        ("a0", "a0"),
        ("a1", "a0"),  # a0 has no left neighbour; a1 is reached by a0 first
        ("b1", "b2"),
        ("b2", "b2"),  # b2 is the last chunk of its document
    ]
    assert expand_window(hits, catalog, n=0) == hits
    wide = expand_window([ScoredChunk("a2", 1.0, "hybrid")], catalog, n=5)
    assert [h.chunk_id for h in wide] == ["a0", "a1", "a2", "a3", "a4"]  # never crosses into another document
    mask = catalog.mask(RetrievalFilter(pages=(3, 5)))
    assert [h.chunk_id for h in expand_window([ScoredChunk("a3", 1.0, "hybrid")], catalog, 1, mask)] == [
        "a2",
        "a3",
        "a4",
    ]
    assert [h.chunk_id for h in expand_window([ScoredChunk("a2", 1.0, "hybrid")], catalog, 1, mask)] == ["a2", "a3"]


def test_page_groups_give_each_page_one_slot() -> None:
    catalog = make_catalog()  # a0..a4 on pages 1..5 of a.pdf; b0..b2 all on page 1 of b.pdf
    hits = [ScoredChunk(c, 1.0 - i / 10, "hybrid") for i, c in enumerate(["b1", "b0", "a2", "a3", "b2", "a0"])]
    grouped = page_groups(hits, catalog, n=1, pages=3)
    assert [(h.chunk_id, h.hit_id) for h in grouped] == [
        ("b0", "b1"),
        ("b1", "b1"),
        ("b2", "b1"),  # b0 and b2 share b1's page: no slot of their own
        ("a1", "a2"),
        ("a2", "a2"),
        ("a3", "a2"),
        ("a0", "a0"),  # a3's page is covered by a2's window: a3 takes no slot, a0 does; a1 is not repeated
    ]
    assert [h.chunk_id for h in page_groups(hits, catalog, n=0, pages=2)] == ["b1", "a2"]
    mask = catalog.mask(RetrievalFilter(pages=(3, 5)))
    assert [h.chunk_id for h in page_groups([ScoredChunk("a2", 1.0, "h")], catalog, 1, 5, mask)] == ["a2", "a3"]


def test_gold_drops_pages_that_are_not_pages_of_the_document() -> None:
    question = EvalQuestion.model_validate(
        {
            "id": "q",
            "question": "?",
            "answerable": True,
            "documents": ["a.pdf"],
            "evidence": [
                {"document": "a.pdf", "page": 0},
                {"document": "a.pdf", "page": 3},
                {"document": "a.pdf", "page": 99},
            ],
        }
    )
    gold = gold_for(question, {"a.pdf": 10})
    assert gold.pages == {("a.pdf", 3)} and gold.dropped_pages == 2 and gold.documents == {"a.pdf"}


def test_question_metrics() -> None:
    gold = Gold(pages=frozenset({("a.pdf", 3), ("a.pdf", 7)}), documents=frozenset({"a.pdf"}), dropped_pages=0)
    groups = [
        RetrievedGroup("b.pdf", frozenset({3})),
        RetrievedGroup("a.pdf", frozenset({2, 3})),
        RetrievedGroup("a.pdf", frozenset({7})),
    ]
    metrics = question_metrics(groups, gold, [1, 2, 3, 5])
    assert [metrics[f"hit@{k}"] for k in (1, 2, 3, 5)] == [0.0, 1.0, 1.0, 1.0]
    assert [metrics[f"recall@{k}"] for k in (1, 2, 3, 5)] == [0.0, 0.5, 1.0, 1.0]
    assert [metrics[f"doc_hit@{k}"] for k in (1, 2)] == [0.0, 1.0]
    assert metrics["mrr"] == 0.5
    document_only = Gold(pages=frozenset(), documents=frozenset({"a.pdf"}), dropped_pages=0)
    metrics = question_metrics(groups, document_only, [1, 2])
    assert metrics["hit@1"] is None and metrics["mrr"] is None and metrics["doc_hit@2"] == 1.0


def test_summary_keys_and_means() -> None:
    rows = [
        {"hit@1": 1.0, "recall@1": 1.0, "doc_hit@1": 1.0, "mrr": 1.0},
        {"hit@1": 0.0, "recall@1": 0.0, "doc_hit@1": 1.0, "mrr": 0.25},
        {"hit@1": None, "recall@1": None, "doc_hit@1": 0.0, "mrr": None},
    ]
    summary = summarise(rows, [10.0, 20.0, 30.0], [1])
    assert set(summary) == {"hit@1", "recall@1", "doc_hit@1", "mrr", "n", "latency_ms_p50", "latency_ms_p95"}
    assert summary["hit@1"] == 0.5 and summary["mrr"] == 0.625 and summary["n"] == 3
    assert summary["doc_hit@1"] == pytest.approx(0.6667, abs=1e-4) and summary["latency_ms_p50"] == 20.0
    assert np.isclose(summary["latency_ms_p95"], 29.0)
    assert summarise([{"hit@1": None, "recall@1": None, "doc_hit@1": 1.0, "mrr": None}], [5.0], [1])["hit@1"] is None
