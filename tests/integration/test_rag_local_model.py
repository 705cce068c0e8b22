"""The rag graph with the real local model on two shared PDFs: a cited answer on the right page, an abstention."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.services import Services
from pagegraph.store.index import open_index
from tests.conftest import markdown_library
from tests.unit.test_pick import FILING

pytestmark = pytest.mark.slow

WATCH = "watch_d.pdf"
OTHER = "a4f3ced0696009fec3179f493e4f28c4.pdf"


@pytest.fixture(scope="module")
def services(shared_docs: Path, tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    folder = tmp_path_factory.mktemp("rag-local") / "index"
    settings = Settings(cache_dir=cache_dir)
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([shared_docs / WATCH, shared_docs / OTHER]).failed
    index = open_index(folder, settings, embedder=embedder)
    # Settings() for the model: the joined weights live in the default cache and are reused across runs
    yield Services(Settings(), index=index)
    index.close()


@pytest.fixture(scope="module")
def rag(services: Services):
    return build_graph("rag", services=services)


def test_answer_cites_the_page_that_holds_it(rag) -> None:
    output = rag.invoke({"question": "What will happen when you press and hold the down button?"}, context=Context())
    assert not output["abstained"], output["answer"]
    cited = {(c.source, page) for c in output["citations"] for page in range(c.start_page, c.end_page + 1)}
    assert (WATCH, 3) in cited, output["answer"]
    assert "voice assistant" in output["answer"].lower()


def test_unrelated_question_abstains(rag) -> None:
    output = rag.invoke({"question": "What is the boiling point of mercury in kelvin?"}, context=Context())
    assert output["abstained"] and output["citations"] == []
    assert "could not answer" in output["answer"]


def test_small_model_answers_from_cited_facts(services: Services) -> None:
    graph = build_graph("small_model", services=services)
    output = graph.invoke({"question": "What will happen when you press and hold the down button?"}, context=Context())
    assert not output["abstained"], output["answer"]
    assert output["llm_calls"] == 3 + Context().small_model.map_chunks  # plan, the maps, reduce, judge
    cited = {(c.source, page) for c in output["citations"] for page in range(c.start_page, c.end_page + 1)}
    assert (WATCH, 3) in cited, output["answer"]


@pytest.mark.xfail(
    strict=False,
    reason="known: with the llama.cpp build this machine compiles (-march=native), the model chooses sections on "
    "pages 9-18, not page 3, also with the code of the previous landing (9b162bf); to fix at the root (a portable "
    "build), not by changing the question",
)
def test_pageindex_reads_the_section_that_holds_it(services: Services) -> None:
    graph = build_graph("pageindex", services=services)
    output = graph.invoke(
        {"question": "What will happen when you press and hold the down button?", "documents": [WATCH]},
        context=Context(),
    )
    assert not output["abstained"], output["answer"]
    history = {r.stage: r.details for r in output["trace"] if r.details}
    assert history["find_files"]["selected"] == [WATCH]
    assert len(history["select[0]"]["selected"]) == Context().pageindex.nodes_per_file
    read = {(e.source, page) for e in output["evidence"] for page in range(e.start_page, e.end_page + 1)}
    assert (WATCH, 3) in read, [e.label() for e in output["evidence"]]
    assert all(c.label.startswith(f"[{WATCH}, ") for c in output["citations"])


def test_extract_picks_a_table_cell_under_the_grammar(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder
) -> None:
    """The grammar path with the embedded model: llama-server decodes only the candidates' texts and reports the
    log-probabilities the pick's confidence is read from; the answer is the cell, with its row and column."""
    folder = tmp_path_factory.mktemp("pick-local")
    with markdown_library(folder, {"report.md": FILING}, cache_dir, embedder) as index:
        graph = build_graph("extract", services=Services(Settings(), index=index))
        question = {"question": "What was the net income in 2013?"}
        output = graph.invoke(question, context=Context(picking={"use": True}))
    chosen = output["pick"]
    assert chosen is not None and chosen.from_logprobs, output["trace"]
    assert [c.value for c in chosen.chosen()] == ["112,403"], output["answer"]
    assert output["answer"].startswith("112,403 (Net income, 2013, in thousands) [report.md")
    assert output["llm_calls"] == 1 and 0.0 < chosen.probability <= 1.0
