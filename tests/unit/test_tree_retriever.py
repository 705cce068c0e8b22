"""The tree retriever over the sample index with a scripted judge: navigation from the closest sections, children
opened under relevant sections, verdicts cached, documents without an outline searched by chunks; and the rag
graph's expand_tree stage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.retrievers.tree import TreeRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index, open_index
from tests.fakes import ScriptedChatModel

MANUAL = "sb40-user-manual.pdf"


def judge_relevant(*titles: str):
    """A judge that finds the sections with these titles (or under them) relevant."""

    def reply(messages) -> str:
        request = str(messages[-1].content)
        section = request.split("Section of", 1)[1].split("\n", 1)[0].split(" > ")[-1].rsplit(" (p.", 1)[0]
        return json.dumps({"relevant": any(section.endswith(title) for title in titles)})

    return reply


@pytest.fixture
def index(sample_index: Path, cache_dir: Path, embedder):
    opened = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    yield opened
    opened.close()


def test_navigation_finds_the_leaf_that_holds_the_answer(index: Index) -> None:
    judge = ScriptedChatModel.replying(*[judge_relevant("Technical specifications")] * 20)
    retriever = TreeRetriever(index=index, judge=judge, start_nodes=4, max_steps=6)
    search = retriever.navigate("How much does the SB-40 weigh?", RetrievalFilter(documents=[MANUAL]))
    assert search.hits and search.hits[0].title == "5 Technical specifications" and search.hits[0].origin == "tree"
    assert "| Weight | 98 kg |" in search.hits[0].text and search.hits[0].start_page == 6
    assert search.judged <= 6 and len(search.calls) == search.judged == len(judge.requests)
    again = retriever.navigate("How much does the SB-40 weigh?", RetrievalFilter(documents=[MANUAL]))
    assert [h.id for h in again.hits] == [h.id for h in search.hits] and not again.calls, "verdicts are cached"


def test_relevant_inner_sections_open_their_children(index: Index) -> None:
    judge = ScriptedChatModel.replying(*[judge_relevant("3 Installation", "3.2 Mounting")] * 30)
    retriever = TreeRetriever(index=index, judge=judge, start_nodes=1, max_steps=30)
    search = retriever.navigate("installing the SB-40: site, mounting and wiring", RetrievalFilter(documents=[MANUAL]))
    judged = [str(m[-1].content).split("Section of", 1)[1].split("\n", 1)[0] for m, _ in judge.requests]
    assert judged[0].endswith("> 3 Installation (p. 4)"), "the closest section is where navigation starts"
    assert len(judged) == 4 and all("3 Installation > 3." in line for line in judged[1:]), "then its children"
    assert [h.title for h in search.hits] == ["3.2 Mounting"]


def test_the_step_budget_stops_navigation(index: Index) -> None:
    judge = ScriptedChatModel.replying(*[judge_relevant("")] * 10)  # everything is relevant
    search = TreeRetriever(index=index, judge=judge, start_nodes=8, max_steps=3).navigate(
        "installation", RetrievalFilter(documents=[MANUAL])
    )
    assert search.judged == 3 and len(judge.requests) == 3


def test_documents_without_an_outline_are_searched_by_chunks(index: Index) -> None:
    judge = ScriptedChatModel.replying()
    search = TreeRetriever(index=index, judge=judge).navigate(
        "What did Dana say about E04?", RetrievalFilter(documents=["support-call-2024-03-14.vtt"])
    )
    assert search.searched_by_chunks == ["support-call-2024-03-14.vtt"] and not judge.requests
    assert search.hits and all(h.origin == "chunks" and h.chunk_ids for h in search.hits)


def test_expand_tree_adds_leaf_sections_to_the_rag_evidence(ask) -> None:
    output, model = ask(
        "What is the operating temperature range for mounting the SB-40?",
        *[judge_relevant("3.1 Site requirements")] * 4,
        "From -10 to 45 degrees Celsius [1].",
        tree={"use": True, "max_steps": 4},
        inputs={"documents": [MANUAL]},
    )
    record = next(r for r in output["trace"] if r.stage == "expand_tree")
    assert (
        len(record.calls) == 4 and output["llm_calls"] == 7
    )  # 4 sections judged, the answer, its judge and second reading
    assert record.details["judged"] == 4
    tree_steps = {e.step for e in output["evidence"] if e.id.endswith(tuple(f":n{i}" for i in range(50)))}
    assert record.details["added"] == [] or tree_steps, "added leaves are evidence the answer model read"
