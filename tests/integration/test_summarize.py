"""Ingest at embedder speed: a document is searchable before any model summary exists; `pagegraph summarize` then
replaces the extractive summaries one at a time, beside readers and another ingest, and a SIGKILLed run goes on
without redoing what it finished."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.ingest.refine import SummaryRefiner
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.index import Index, open_index
from tests.e2e.harness import PAGEGRAPH, QUIET, ScriptedOpenAI
from tests.fakes import ScriptedChatModel

pytestmark = pytest.mark.slow
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
DOCUMENT_SUMMARY = json.dumps(
    {
        "document_type": "guide",
        "summary": "A model-written summary of the whole document.",
        "key_topics": ["commissioning"],
        "use_for": "questions about commissioning",
    }
)


def model_reply(prompt: str) -> str:
    """Section prompts name their section; everything else here is a document summary (JSON)."""
    return "A model-written section summary." if "Section:" in prompt else DOCUMENT_SUMMARY


def found_by_both(index: Index, name: str, query: str) -> bool:
    only = RetrievalFilter(documents=[name])
    lexical = BM25ChunkRetriever(index=index).search(query, k=3, flt=only)
    dense = DenseRetriever(index=index).search(query, k=3, flt=only)
    return bool(lexical) and bool(dense)


def test_a_document_is_searchable_before_any_model_summary(backend_settings: Settings, embedder: Embedder) -> None:
    settings = backend_settings.with_changes(ingest={"section_min_chars": 400})
    folder = settings.index
    started, release = threading.Event(), threading.Event()

    def blocking(_messages) -> str:
        started.set()
        assert release.wait(60), "the test never released the model"
        return DOCUMENT_SUMMARY

    model = ScriptedChatModel.replying(blocking, *[lambda m: "A model-written section summary."] * 50)
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
    refiner = SummaryRefiner(folder, settings, model)
    worker = threading.Thread(target=refiner.run)
    worker.start()
    try:
        assert started.wait(60), "summarize never called the model"
        with open_index(folder, settings, embedder=embedder) as reader:
            (doc,) = reader.store.documents()
            assert reader.store.summaries()[doc.id].method == "extractive"
            assert all(s.writer in ("text", "extractive") for s in reader.store.sections(doc.id))
            assert found_by_both(reader, doc.name, "commissioning checklist")
    finally:
        release.set()
        worker.join(60)
        refiner.close()
    with open_index(folder, settings, embedder=embedder) as reader:
        (doc,) = reader.store.documents()
        assert reader.store.summaries()[doc.id].method == "model"
        written = [s for s in reader.store.sections(doc.id) if s.is_summary]
        assert written and all(s.summary == "A model-written section summary." for s in written)


def model_written(folder: Path) -> int:
    """Summaries in the store that the model wrote (documents and sections)."""
    try:
        with sqlite3.connect(f"file:{folder / 'store.sqlite'}?mode=ro", uri=True, timeout=1) as db:
            documents = [json.loads(r[0])["method"] for r in db.execute("SELECT summary FROM summaries")]
            sections = [json.loads(r[0]).get("writer", "") for r in db.execute("SELECT record FROM node_summaries")]
    except sqlite3.OperationalError:
        return 0
    return documents.count("model") + sum(w not in ("", "text", "extractive") for w in sections)


def test_summarize_resumes_after_a_kill_beside_an_ingest_and_a_reader(
    tmp_path: Path, cache_dir: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.llm.factory import get_chat_model

    folder = tmp_path / "index"
    model = ScriptedOpenAI(every_call_s=0.3, reply=model_reply)
    settings = Settings(
        cache_dir=cache_dir, ingest={"section_min_chars": 300}, models={"openai_base_url": model.base_url}
    )
    monkeypatch.setenv("OPENAI_API_KEY", "not-needed")
    same_model = get_chat_model("openai:scripted", settings=settings)  # what the subprocess runs, never called here
    with open_index(folder, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md", SAMPLES / "sb40-user-manual.pdf"])
    model.start()
    env = {
        **os.environ,
        **QUIET,
        "PAGEGRAPH_CACHE_DIR": str(cache_dir),
        "PAGEGRAPH_SECTION_MIN_CHARS": "300",
        "PAGEGRAPH_OPENAI_BASE_URL": model.base_url,
        "OPENAI_API_KEY": "not-needed",
    }
    command = [str(PAGEGRAPH), "summarize", "--index", str(folder), "--model", "openai:scripted"]
    try:
        with SummaryRefiner(folder, settings, same_model) as probe:
            needed = sum(item.count for item in probe.pending())
        assert needed >= 6, "enough summaries to kill the run in the middle"
        first = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while model_written(folder) < 3:
            assert first.poll() is None, first.stderr.read().decode()
            assert time.monotonic() < deadline, "summarize wrote nothing within 120 s"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        first.wait()
        done, calls_before = model_written(folder), model.calls
        assert 3 <= done < needed

        second = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while model_written(folder) == done:  # the second run is at work (its list of documents is drawn up)
            assert second.poll() is None, second.stderr.read()
            time.sleep(0.05)
        (tmp_path / "extra.md").write_text("# Extra\n\nThe harbour ferry leaves at nine o'clock every morning.\n")
        with open_index(folder, settings, write=True, embedder=embedder) as writer:
            assert not Ingestor(writer).run([tmp_path / "extra.md"]).failed, "an ingest beside summarize"
        searches = 0
        while second.poll() is None:
            with open_index(folder, settings, embedder=embedder) as reader:
                assert found_by_both(reader, "extra.md", "harbour ferry")
                searches += 1
        out, err = second.communicate()
        assert second.returncode == 0, err
        assert searches >= 1
    finally:
        model.stop()
    with SummaryRefiner(folder, settings, same_model) as probe:
        left = [item.document.name for item in probe.pending()]
    assert left == ["extra.md"], "the killed run's documents are finished; the one ingested meanwhile is next"
    # the killed run lost at most the call in flight; the second did not redo what the first wrote
    assert model.calls - calls_before <= needed - done + 1 and model.calls <= needed + 1, (model.calls, needed)
