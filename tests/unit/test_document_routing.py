"""The document router's key-term ranking: documents that hold the names and years a question writes come first,
rarer terms weigh more, and only the documents the filter allows are ranked or counted."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pagegraph.config import Context, RoutingWeights
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.documents import RankedDocument, shared_by_routing, term_scores
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
    # three documents count as large, and long enough to route
    large = Context(retrieval={"route_keywords_up_to": 1, "route_documents": 1, "route_chunks_above": 0})
    retriever = HybridRetriever.for_context(reports, large)
    question = "How much did Globex services revenue grow in 2023?"
    ranked = retriever.rank_documents(question)
    assert ranked[0].name == "globex-2023.md" and "chunks" in ranked[0].ranks, "the dense hits, scored by keywords"
    assert not searched
    hits = retriever.search(question)
    assert searched and all(flt is not None and flt.documents for flt in searched), "the routed documents alone"
    catalog = reports.catalog
    assert catalog.sources[catalog.row_of[hits[0].chunk_id]] == "globex-2023.md"


def _service_notes(company: str) -> str:
    sections = "".join(
        f"## Services note {n}\n\nServices spending on services contracts: services spending rose, "
        f"spending on cloud services and services staff (note {n}).\n\n"
        for n in range(1, 5)
    )
    return f"# {company} services review\n\n{sections}"


LIBRARY = {
    "initech-annual-report.md": "# Initech annual report\n\n## Costs\n\n"
    "Outside contractors cost Initech 4.2 million, up from 3.9 million.\n",
    **{
        f"{company.lower()}-services.md": _service_notes(company) for company in ("Acme", "Globex", "Umbrella", "Hooli")
    },
    "vandelay-services.md": _service_notes("Vandelay"),
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    with markdown_library(tmp_path_factory.mktemp("library"), LIBRARY, cache_dir, embedder) as index:
        yield index


def test_a_document_too_short_to_fill_the_search_is_not_searched_alone(library: Index) -> None:
    """Routing settles on one document alone only where its passages can fill the search; a document of a chunk or
    two is searched with the next routed ones."""
    question = "How did Globex services spending change?"
    catalog = library.catalog

    def searched(max_chunks: int) -> set[str]:
        knobs = {
            "route_documents": 2,
            "route_alone": 1.0,
            "max_chunks": max_chunks,
            "window": 0,
            "route_chunks_above": 0,
        }
        retriever = HybridRetriever.for_context(library, Context(retrieval=knobs))
        return {catalog.sources[catalog.row_of[h.chunk_id]] for h in retriever.search(question)}

    first = HybridRetriever.for_context(library, Context()).rank_documents(question)[0].name
    assert first == "globex-services.md" and library.profiles.chunks_of(first) == 2
    assert len(searched(15)) == 2, "the two routed documents together"
    assert searched(1) == {first}, "one passage asked for: the first document fills it alone"


def test_a_library_of_documents_shorter_than_a_search_is_searched_whole(library: Index) -> None:
    """Its chunks lie in documents shorter than a search hands on: no routing, every document's passages compete."""
    question = "What did outside contractors cost Initech?"
    catalog = library.catalog
    assert library.profiles.chunks_around_a_chunk(None) == (1 + 5 * 2 * 2) / 11  # one note of a chunk, five of two
    routed = Context(retrieval={"route_documents": 2, "window": 0, "route_chunks_above": 0})
    whole = Context(retrieval={"route_documents": 2, "window": 0})
    for context, routes in ((routed, True), (whole, False)):
        retriever = HybridRetriever.for_context(library, context)
        assert retriever.routes(RetrievalFilter()) is routes
        searched = {catalog.sources[catalog.row_of[h.chunk_id]] for h in retriever.search(question)}
        assert "initech-annual-report.md" in searched
        assert len(searched) == (2 if routes else len(LIBRARY)), searched
    shorter = Context(retrieval={"route_chunks_above": 1})  # the line under the library's: routed
    assert HybridRetriever.for_context(library, shorter).routes(RetrievalFilter())


def test_a_routed_document_whose_passages_lose_on_score_still_reaches_the_top_five(library: Index) -> None:
    catalog = library.catalog
    searched = HybridRetriever.for_context(library, Context(retrieval={"route_documents": 0, "page_ranking": False}))
    hits = searched.fused("How much went on services contracts and cloud services?", limit=30)

    def sources(ranked: list) -> list[str]:
        return [catalog.location(hit.chunk_id)[0] for hit in ranked]

    by_score = list(dict.fromkeys(sources(hits)))
    assert by_score[-1] == "initech-annual-report.md"  # its one passage loses to the others' on fused score
    routed = [
        RankedDocument("initech-annual-report.md", 1.0, {}),
        RankedDocument(by_score[0], 0.5, {}),
        RankedDocument(by_score[1], 0.5, {}),
    ]
    shared = shared_by_routing(hits, routed, catalog, 1.0, by_page=False)
    # places by D'Hondt: 1.0, then 0.5 and 0.5 (each document's best), then its second place at 1.0 / 2 would be
    # Initech's, which has no second passage, so the others take turns in proportion
    assert sources(shared)[:5] == ["initech-annual-report.md", by_score[0], by_score[1], by_score[0], by_score[1]]
    assert sorted(h.chunk_id for h in shared) == sorted(h.chunk_id for h in hits)  # reordered, nothing lost
    assert shared_by_routing(hits, routed, catalog, 0.0, by_page=False) == hits
    # ranked by page, a hit on a page its document already placed takes no place of its own (Markdown: page 1), so
    # each document's best hit is shared and the rest follow in fused order
    paged = shared_by_routing(hits, routed, catalog, 1.0, by_page=True)
    assert sources(paged)[:3] == ["initech-annual-report.md", by_score[0], by_score[1]]
    assert paged[3:] == [hit for hit in hits if hit not in paged[:3]]
