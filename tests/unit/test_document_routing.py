"""The document router's key-term ranking: documents that hold the names and years a question writes come first,
rarer terms weigh more, and only the documents the filter allows are ranked or counted."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pagegraph.config import Context, RoutingWeights
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.documents import term_scores
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index
from tests.conftest import markdown_library

REPORTS = {
    "acme-2023.md": "# Quarterly report\n\nAcme Corporation, period ended June 30, 2023.\n\n## Results\n\n"
    "Sales of tools rose 4 percent; services were flat.\n",
    "globex-2023.md": "# Quarterly report\n\nGlobex Inc, period ended June 30, 2023.\n\n## Services\n\n"
    "Services revenue grew 9 percent as services customers grew.\n",
    "globex-2022.md": "# Quarterly report\n\nGlobex Inc, period ended September 30, 2022.\n\n## Services\n\n"
    "Services revenue grew 2 percent.\n",
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    with markdown_library(tmp_path_factory.mktemp("reports"), REPORTS, cache_dir, embedder) as index:
        yield index


def scores_by_name(index: Index, question: str, flt: RetrievalFilter | None = None) -> dict[str, float]:
    scores = term_scores(index, question, index.profiles.allowed(flt))
    return {name: round(float(score), 4) for name, score in zip(index.profiles.names, scores)}


def test_rarer_terms_weigh_more_and_a_term_every_document_holds_counts_nothing(reports: Index) -> None:
    held_by_one, held_by_two = round(math.log(3), 4), round(math.log(3 / 2), 4)
    assert scores_by_name(reports, "What did Globex report for 2023?") == {
        "acme-2023.md": held_by_two,  # 2023
        "globex-2023.md": round(2 * math.log(3 / 2), 4),  # Globex and 2023
        "globex-2022.md": held_by_two,  # Globex
    }
    assert scores_by_name(reports, "What did Acme sell?")["acme-2023.md"] == held_by_one
    assert set(scores_by_name(reports, "Which Quarterly report is longest?").values()) == {0.0}  # all hold it
    assert set(scores_by_name(reports, "What did Initech sell?").values()) == {0.0}  # nobody holds it


def test_the_ranking_follows_the_terms_and_documents_with_equal_scores_share_a_rank(reports: Index) -> None:
    terms_only = Context(retrieval={"routing": RoutingWeights(profile=0.0, centroid=0.0, chunks=0.0, terms=1.0)})
    ranked = HybridRetriever.for_context(reports, terms_only).rank_documents("How did Globex do in 2023?")
    assert ranked[0].name == "globex-2023.md"
    assert {d.name: d.ranks["terms"] for d in ranked[1:]} == {"acme-2023.md": 2, "globex-2022.md": 2}
    assert "terms" not in HybridRetriever.for_context(reports, Context()).rank_documents("services revenue")[0].ranks


def test_only_the_documents_the_filter_allows_are_counted(reports: Index) -> None:
    flt = RetrievalFilter(documents=["globex-2023.md", "globex-2022.md"])
    scores = scores_by_name(reports, "What did Globex report for 2023?", flt)
    assert scores == {"acme-2023.md": 0.0, "globex-2023.md": round(math.log(2), 4), "globex-2022.md": 0.0}
    ranked = HybridRetriever.for_context(reports, Context()).rank_documents("Globex in 2023", flt)
    assert [d.name for d in ranked][0] == "globex-2023.md" and "acme-2023.md" not in {d.name for d in ranked}


def test_a_large_library_is_routed_without_a_keyword_search_over_all_of_it(
    reports: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched: list[RetrievalFilter | None] = []
    keyword_search = type(reports).keyword_search

    def spy(index: Index, query: str, k: int, flt: RetrievalFilter | None = None) -> list[tuple[str, float]]:
        searched.append(flt)
        return keyword_search(index, query, k, flt)

    monkeypatch.setattr(type(reports), "keyword_search", spy)
    large = Context(retrieval={"route_keywords_up_to": 1, "route_documents": 1})  # three documents count as large
    retriever = HybridRetriever.for_context(reports, large)
    question = "How much did Globex services revenue grow in 2023?"
    ranked = retriever.rank_documents(question)
    assert ranked[0].name == "globex-2023.md" and "chunks" in ranked[0].ranks, "the dense hits, scored by keywords"
    assert not searched
    hits = retriever.search(question)
    assert searched and all(flt is not None and flt.documents for flt in searched), "the routed documents alone"
    catalog = reports.catalog
    assert catalog.sources[catalog.row_of[hits[0].chunk_id]] == "globex-2023.md"
