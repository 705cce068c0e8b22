"""A question's words the index has never seen are searched as the index's word one edit away; words it holds,
common English words, stopwords and short words stay as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph.config import Context, RetrievalKnobs, RoutingWeights
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.spelling import correct_spelling, one_edit_away, spelling_corrections
from pagegraph.store.index import Index
from tests.conftest import markdown_library

MIN_LETTERS = RetrievalKnobs().spelling_min_letters

REPORTS = {
    "acme.md": "# Acme report\n\nAcme Corporation sold tools and tolls passes; sales compared well with last year.\n",
    "globex.md": "# Globex report\n\nGlobex services revenue grew as its tools sold.\n",
    "initech.md": "# Annual report\n\nThe company licensed software to Zorbak and to Zorbeks.\n",
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    with markdown_library(tmp_path_factory.mktemp("spelling"), REPORTS, cache_dir, embedder) as index:
        yield index


def searched(question: str, index: Index) -> str:
    return correct_spelling(question, spelling_corrections(question, index, MIN_LETTERS))


def test_one_edit_is_a_letter_dropped_added_changed_or_two_neighbours_swapped() -> None:
    edits = one_edit_away("abc")
    assert {"bc", "ac", "ab", "bac", "acb", "xbc", "abxc", "abcx"} <= edits
    assert "abc" not in edits and "cab" not in edits and "ab c" not in edits


def test_unseen_words_are_searched_as_the_nearest_held_spelling_in_their_case(reports: Index) -> None:
    assert spelling_corrections("How did Glboex and GLOBX do?", reports, MIN_LETTERS) == {
        "Glboex": "Globex",
        "GLOBX": "GLOBEX",
    }
    assert searched("How did Glboex do?", reports) == "How did Globex do?"  # two letters swapped
    assert searched("GLOBX services", reports) == "GLOBEX services"  # a letter dropped
    assert searched("What did Acmme sell?", reports) == "What did Acme sell?"  # a letter added
    assert searched("servixes revenue", reports) == "services revenue"  # a letter changed


def test_of_several_near_spellings_the_one_more_chunks_hold_wins_then_one_that_adds_an_ending(reports: Index) -> None:
    held = reports.document_frequencies(["tools", "tolls", "zorbak", "zorbeks"])
    assert held["tools"] > held["tolls"] > 0
    assert searched("toolls", reports) == "tools"
    assert held["zorbak"] == held["zorbeks"] == 1
    assert searched("zorbek", reports) == "zorbeks"  # not "zorbak", as near and as often held


def test_held_common_short_stop_and_unmatched_words_stay_as_written(reports: Index) -> None:
    # "compare" is an English word the index does not hold ("compared" is one edit away): it stays; so does a name
    # written in mixed case ("GlobX", one letter from "globex")
    for question in (
        "compare the sales",
        "Globex revenue",
        "toos sold",
        "Initrode licences",
        "abouts their tools",
        "GlobX",
    ):
        assert searched(question, reports) == question


def test_the_router_finds_a_misspelt_name_only_with_correction_on(reports: Index) -> None:
    terms_only = RoutingWeights(profile=0.0, centroid=0.0, chunks=0.0, terms=1.0)
    spelled = HybridRetriever.for_context(reports, Context(retrieval={"routing": terms_only})).rank_documents(
        "What did Glboex sell?"
    )
    assert spelled[0].name == "globex.md" and "terms" in spelled[0].ranks
    as_written = Context(retrieval={"routing": terms_only, "correct_spelling": False})
    ranked = HybridRetriever.for_context(reports, as_written).rank_documents("What did Glboex sell?")
    assert all("terms" not in d.ranks for d in ranked)


def test_words_of_other_scripts_are_never_corrected(reports: Index) -> None:
    for question in ("渡轮早上几点出发？", "Когда отправляется паром из гавани?", "เรือข้ามฟากออกกี่โมง"):
        assert spelling_corrections(question, reports, MIN_LETTERS) == {} and searched(question, reports) == question
