"""Retrievers and the retrieval evaluator on real PDFs, the real embedder, Chroma and BM25."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pagegraph.cli import app
from pagegraph.config import Context, RetrievalKnobs, Settings
from pagegraph.eval.baselines import first_landed_hybrid
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.documents import DocumentTags
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index, open_index
from tests.conftest import BACKENDS, SAMPLES, on_backend

pytestmark = pytest.mark.slow
PAPER, MANUAL = "2303.05039v2.pdf", "watch_d.pdf"


@pytest.fixture(scope="module", params=BACKENDS)
def index(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    cache_dir: Path,
    embedder: Embedder,
    shared_docs: Path,
):
    folder = Settings(index=tmp_path_factory.mktemp("retrieval") / "index", cache_dir=cache_dir)
    settings = on_backend(folder, request.param, request)
    with open_index(settings.index, settings, write=True, embedder=embedder) as opened:
        Ingestor(opened).run(
            [shared_docs / PAPER], tags=DocumentTags(project="research", confidentiality="confidential")
        )
        Ingestor(opened).run([shared_docs / MANUAL], tags=DocumentTags(project="products", confidentiality="public"))
        yield opened


QUESTIONS = [
    "personality traits of users",
    "how to measure heart rate",
    "battery charging time",
    "dataset statistics",
    "What does the figure on page 2 show, and Figure 1?",  # named pages lead: still only what the filter allows
]
FILTERS = [
    RetrievalFilter(documents=[MANUAL]),
    RetrievalFilter(projects=["research"]),
    RetrievalFilter(max_confidentiality="internal"),
    RetrievalFilter(documents=[PAPER], pages=(3, 4)),
    RetrievalFilter(date_from=date(2023, 1, 1)),  # the PDFs' own creation dates: paper 2023-03-22, manual 2022-05-13
    RetrievalFilter(date_from=date(2022, 5, 13), date_to=date(2022, 12, 31)),
]


def sources_and_pages(index: Index, chunk_ids: list[str]) -> list[tuple[str, int, int]]:
    chunks = index.store.chunks_by_id(chunk_ids)
    return [(chunks[c].source, chunks[c].start_page, chunks[c].end_page) for c in chunk_ids]


@pytest.mark.parametrize("flt", FILTERS, ids=["document", "project", "ceiling", "pages", "since", "date range"])
def test_no_result_from_outside_the_filter(index: Index, flt: RetrievalFilter) -> None:
    allowed = {MANUAL} if flt.documents == [MANUAL] or flt.max_confidentiality or flt.date_to else {PAPER}
    retrievers = {
        "bm25": lambda q: [h.chunk_id for h in BM25ChunkRetriever(index=index).search(q, 40, flt)],
        "dense": lambda q: [h.chunk_id for h in DenseRetriever(index=index).search(q, 40, flt)],
        "dense by HNSW": lambda q: [
            h.chunk_id for h in DenseRetriever(index=index, exact_search_limit=0).search(q, 40, flt)
        ],
        "hybrid": lambda q: [
            h.chunk_id for h in HybridRetriever(index=index, knobs=RetrievalKnobs(window=2)).search(q, flt)
        ],
        "hybrid as first landed": lambda q: [h.chunk_id for h in first_landed_hybrid(index, window=2).search(q, flt)],
        "routed by page": lambda q: [
            h.chunk_id
            for h in HybridRetriever(index=index, knobs=RetrievalKnobs(window=2, route_documents=1)).search(q, flt)
        ],
        "the graphs' retriever, no window": lambda q: [
            h.chunk_id for h in HybridRetriever.for_context(index, Context(retrieval={"window": 0})).search(q, flt)
        ],
    }
    for name, search in retrievers.items():
        returned = 0
        for question in QUESTIONS:
            for source, start, end in sources_and_pages(index, search(question)):
                returned += 1
                assert source in allowed, (name, question)
                if flt.pages:
                    assert end >= flt.pages[0] and start <= flt.pages[1], (name, question)
        assert returned > 0, name


def test_hybrid_dedupes_fuses_and_returns_langchain_documents(index: Index) -> None:
    hybrid = first_landed_hybrid(index, max_chunks=10, window=1)  # windows around single hits, not pages
    fused = hybrid.fused("heart rate measurement")
    assert len(fused) == 10 and len({h.chunk_id for h in fused}) == 10
    docs = hybrid.invoke("heart rate measurement")
    ids = [d.metadata["chunk_id"] for d in docs]
    assert len(ids) == len(set(ids)) >= 10
    assert {h.chunk_id for h in fused} <= set(ids)
    # a hit that falls inside a better hit's window is listed under that hit
    hits = [d.metadata["chunk_id"] for d in docs if d.metadata["is_hit"]]
    assert hits == [h.chunk_id for h in fused if h.chunk_id in hits]
    assert all(d.metadata["hit_id"] in {h.chunk_id for h in fused} for d in docs)
    assert {"source", "start_page", "end_page", "section_path", "score"} <= set(docs[0].metadata)
    assert BM25ChunkRetriever(index=index, k=3).invoke("personality")[0].metadata["source"] == PAPER


def test_explicit_alpha_overrides_the_detector(index: Index) -> None:
    question = "how to measure heart rate"
    lexical = [h.chunk_id for h in BM25ChunkRetriever(index=index).search(question, 20)][:5]
    dense = [h.chunk_id for h in DenseRetriever(index=index).search(question, 40)][:5]
    assert [h.chunk_id for h in first_landed_hybrid(index, alpha=1.0, max_chunks=5).fused(question)] == lexical
    assert [h.chunk_id for h in first_landed_hybrid(index, alpha=0.0, max_chunks=5).fused(question)] == dense


def test_document_ranking_without_a_model(index: Index) -> None:
    hybrid = HybridRetriever(index=index)
    watch = hybrid.rank_documents("How do I measure my heart rate with the watch?")
    assert [d.name for d in watch] == [MANUAL, PAPER]
    assert set(watch[0].ranks) == {"profile", "centroid", "chunks"} and watch[0].score > watch[1].score
    assert hybrid.rank_documents("Which personality traits were inferred from product reviews?")[0].name == PAPER
    ranked = hybrid.rank_documents("personality traits", RetrievalFilter(projects=["products"]))
    assert [d.name for d in ranked] == [MANUAL]  # only what the filter allows, however well the other matches


def test_routing_searches_only_the_best_documents(index: Index) -> None:
    routed = HybridRetriever(index=index, knobs=RetrievalKnobs(route_documents=1, window=1, max_chunks=5))
    hits = routed.search("How do I measure my heart rate with the watch?")
    assert {source for source, *_ in sources_and_pages(index, [h.chunk_id for h in hits])} == {MANUAL}
    pages = [index.catalog.location(h.chunk_id)[1] for h in hits if h.hit_id == h.chunk_id]
    assert len(pages) == len(set(pages)) == 5  # five hits on five pages


def test_routing_to_one_document_alone_keeps_the_rest_of_the_filter(index: Index) -> None:
    alone = HybridRetriever(index=index, knobs=RetrievalKnobs(route_documents=1, route_alone=1.0, window=1))
    flt = RetrievalFilter(pages=(3, 4))
    for question in ("How do I measure my heart rate with the watch?", "What does page 9 of the watch manual show?"):
        ranked = alone.rank_documents(question, flt)
        assert ranked[1].score < ranked[0].score, "the first document leads: searched alone"
        located = sources_and_pages(index, [h.chunk_id for h in alone.search(question, flt)])
        assert located and {source for source, *_ in located} == {ranked[0].name}
        assert all(end >= 3 and start <= 4 for _, start, end in located), located  # page 9 is not let in


def test_reranker_hook_reorders_hits(index: Index) -> None:
    class PrefersShortChunks:
        def score(self, query: str, chunks: list) -> list[float]:
            return [-len(chunk.text) for chunk in chunks]

    hits = HybridRetriever(index=index, knobs=RetrievalKnobs(max_chunks=5), reranker=PrefersShortChunks()).fused(
        "heart rate"
    )
    lengths = [len(c.text) for c in index.store.chunks_by_id([h.chunk_id for h in hits]).values()]
    chunks = index.store.chunks_by_id([h.chunk_id for h in hits])
    assert [len(chunks[h.chunk_id].text) for h in hits] == sorted(lengths)
    assert hits[0].retriever == "hybrid+rerank"


def test_eval_command_end_to_end(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "e04",
            "question": "What does error code E04 mean?",
            "answerable": True,
            "documents": ["sb40-user-manual.pdf"],
            "evidence": [{"document": "sb40-user-manual.pdf", "page": 8}],
        },
        {
            "id": "weight",
            "question": "What is the weight of the unit?",
            "answerable": True,
            "documents": ["sb40-user-manual.pdf"],
            "evidence": [
                {"document": "sb40-user-manual.pdf", "page": 6},
                {"document": "sb40-user-manual.pdf", "page": 40},
            ],
        },
        {
            "id": "ticket",
            "question": "Which ticket number was opened?",
            "answerable": True,
            "documents": ["support-call-2024-03-14.vtt"],
            "evidence": [{"document": "support-call-2024-03-14.vtt"}],
        },
        {"id": "none", "question": "Who won the 1998 world cup?", "answerable": False, "documents": []},
    ]
    questions.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    index_dir, out, png = tmp_path / "index", tmp_path / "run.json", tmp_path / "run.png"
    args = [
        "eval",
        str(questions),
        "--docs",
        str(SAMPLES),
        "--index",
        str(index_dir),
        "--scope",
        "corpus",
        "--k",
        "1,3,5",
        "--out",
        str(out),
        "--plot",
        str(png),
    ]
    for name in ("bm25", "dense", "hybrid", "hybrid+window", "ensemble"):
        args += ["--retriever", name]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert set(report) >= {"summary", "per_question", "config"}
    assert set(report["summary"]) == {"bm25", "dense", "hybrid", "hybrid+window", "ensemble"}
    for metrics in report["summary"].values():
        assert set(metrics) == {
            *(f"{m}@{k}" for m in ("hit", "recall", "doc_hit") for k in (1, 3, 5)),
            "mrr",
            "n",
            "latency_ms_p50",
            "latency_ms_p95",
        }
        assert metrics["n"] == 3
    assert report["config"]["rows_with_page_evidence"] == 2
    assert report["config"]["dropped_gold_pages"] == 1 and report["config"]["scope"] == "corpus"
    assert report["summary"]["hybrid+window"]["hit@5"] >= report["summary"]["hybrid"]["hit@5"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with open_index(index_dir, Settings()) as opened:
        runs = opened.store.eval_runs()
    assert [run.summary for run in runs] == [report["summary"]]


def test_exact_filtered_search_matches_the_hnsw_search(index: Index) -> None:
    flt = RetrievalFilter(documents=[MANUAL], pages=(2, 20))
    exact = DenseRetriever(index=index)
    approximate = DenseRetriever(index=index, exact_search_limit=0)
    for question in QUESTIONS:
        ours = exact.search(question, 10, flt)
        theirs = approximate.search(question, 10, flt)
        assert [h.chunk_id for h in ours] == [h.chunk_id for h in theirs]
        assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-4)
