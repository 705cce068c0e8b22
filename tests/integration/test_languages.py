"""Documents in other languages: a Chinese and a Thai note beside the English samples, found by a question in their
own language, and a Russian one by a question whose words it holds only in other inflections, on both backends; a folder index whose BM25 an older tokenizer built is rebuilt by the next writer; and
an index of the multilingual embedder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pagegraph.config import Context, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import MULTILINGUAL_MODEL, Embedder
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.bm25 import BM25Index
from pagegraph.store.index import open_index
from pagegraph.text.words import TOKENIZER
from tests.conftest import BACKENDS, PAGEGRAPH, SAMPLES, on_backend

pytestmark = pytest.mark.slow
NOTES = {
    "ferry-zh.md": "# 港口渡轮\n\n渡轮每天清晨六点从北港出发，船票在码头的售票处购买，儿童半价。\n",
    "ferry-th.md": "# เรือข้ามฟาก\n\nเรือข้ามฟากออกจากท่าเรือทุกวันเวลาหกโมงเช้า ซื้อตั๋วได้ที่ช่องขายตั๋วบนท่าเรือ\n",
}
QUESTIONS = {"ferry-zh.md": "渡轮早上几点出发？", "ferry-th.md": "เรือข้ามฟากออกกี่โมง"}
# A Russian note that holds the question's words only in other inflections ("гаваней", "гавани"), and one that
# holds two of its words as written but is about something else.
INFLECTED = {
    "ferry-ru.md": "# Паром\n\nПаром отправляется из северной гавани каждое утро, билет продаётся в кассе на причале.\n",
    "museum-ru.md": "# Музей\n\nКогда открывается музей? Музей открывается в десять часов утра, из-за ремонта позже.\n",
}
INFLECTED_QUESTION = "Когда отправляются паромы из гаваней и где продаются билеты?"


@pytest.fixture(scope="module", params=BACKENDS)
def index(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder
):
    root = tmp_path_factory.mktemp("languages")
    docs = root / "docs"
    shutil.copytree(SAMPLES, docs)
    for name, text in (NOTES | INFLECTED).items():
        (docs / name).write_text(text)
    settings = on_backend(Settings(index=root / "index", cache_dir=cache_dir), request.param, request)
    with open_index(settings.index, settings, write=True, embedder=embedder) as opened:
        Ingestor(opened).run([docs])
        yield opened


@pytest.mark.parametrize("name", sorted(NOTES))
def test_a_note_is_found_by_a_question_in_its_language(index, name: str) -> None:
    best = index.keyword_search(QUESTIONS[name], 1)[0][0]
    assert index.catalog.location(best)[0] == name, "by keyword"
    hits = HybridRetriever.for_context(index, Context()).search(QUESTIONS[name])
    assert index.catalog.location(hits[0].chunk_id)[0] == name, "by the graphs' search"


def test_a_question_finds_a_note_that_holds_its_words_in_other_inflections(index) -> None:
    best = index.keyword_search(INFLECTED_QUESTION, 1)[0][0]
    assert index.catalog.location(best)[0] == "ferry-ru.md", "by the stems of its words"
    hits = HybridRetriever.for_context(index, Context()).search(INFLECTED_QUESTION)
    assert index.catalog.location(hits[0].chunk_id)[0] == "ferry-ru.md", "by the graphs' search"


def test_a_bm25_an_older_tokenizer_built_is_rebuilt_by_the_next_writer(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "ferry-zh.md").write_text(NOTES["ferry-zh.md"])
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([docs])
    state = settings.index / "bm25" / "state.json"
    older = {**json.loads(state.read_text()), "tokenizer": "lower-words-en-stopwords-v1"}
    state.write_text(json.dumps(older))
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.keyword_search_state() == "older", "a reader leaves it, and says why it is behind"
    with open_index(settings.index, settings, write=True, embedder=embedder) as writer:
        assert writer.keyword_search_state() == "current"
        assert writer.catalog.location(writer.keyword_search(QUESTIONS["ferry-zh.md"], 1)[0][0])[0] == "ferry-zh.md"
    assert json.loads(state.read_text())["tokenizer"] == TOKENIZER
    assert BM25Index(settings.index, writer.params).built_generation() is not None


def test_an_index_of_the_multilingual_embedder_keeps_it_and_refuses_another(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    """An English index names the Chinese note it cannot read and the embedder that can. `ingest --embedder
    multilingual-e5` builds an index whose vectors alone find a note by a question in its language; later ingests
    keep that embedder, and asking for another is refused with the rebuild command."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in {
        **NOTES,
        "ferry-en.md": "# Ferry\n\nThe ferry leaves the north harbour at six every morning.\n",
    }.items():
        (docs / name).write_text(text)
    folder = tmp_path / "index"
    env = {**os.environ, "PAGEGRAPH_CACHE_DIR": str(cache_dir), "PAGEGRAPH_INGEST_SUMMARIES": "extractive"}

    def ingest(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(PAGEGRAPH), "ingest", *args, "--index", str(folder)], env=env, capture_output=True, text=True
        )

    english = subprocess.run(
        [str(PAGEGRAPH), "ingest", str(docs / "ferry-zh.md"), "--index", str(tmp_path / "english")],
        env=env,
        capture_output=True,
        text=True,
    )
    assert english.returncode == 0 and "ferry-zh.md" in english.stdout
    assert "--embedder multilingual-e5" in " ".join(english.stdout.split()), "the English index says what to do"

    built = ingest(str(docs / "ferry-zh.md"), str(docs / "ferry-en.md"), "--embedder", "multilingual-e5")
    assert built.returncode == 0, built.stderr
    assert ingest(str(docs / "ferry-th.md")).returncode == 0, "a later ingest keeps the index's embedder"
    refused = ingest(str(docs), "--embedder", "minilm")
    assert refused.returncode != 0
    assert "embedding_model" in refused.stderr and "--recreate" in refused.stderr, refused.stderr

    settings = Settings(index=folder, cache_dir=cache_dir)
    with open_index(folder, settings, embedder=embedder) as index:  # the MiniLM one offered is not this index's
        assert index.embedder.model == MULTILINGUAL_MODEL and index.params.embedding_model == MULTILINGUAL_MODEL
        for name, question in QUESTIONS.items():
            vector = index.embedder.embed_queries([question])[0]
            best = index.dense_search(vector, 1, RetrievalFilter(), exact_below=0)[0][0]
            assert index.catalog.location(best)[0] == name, f"{name} by its vector alone"
