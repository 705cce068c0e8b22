"""The real embedded model's process killed mid-answer: the question fails with an error that names the stage, this
process lives on, the model process is started again and the next question is answered (issue: a crash in the model
never takes the product down). Where the CPU has no crash of its own to show, SIGSEGV stands in for one."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.errors import ModelUnavailableError
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.services import Services
from pagegraph.store.index import open_index
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow

QUESTION = "What does error code E04 mean, and what should the owner do about it?"


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    folder = tmp_path_factory.mktemp("crash") / "index"
    with open_index(folder, Settings(cache_dir=cache_dir), write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([SAMPLES / "sb40-user-manual.pdf"]).failed
    index = open_index(folder, Settings(cache_dir=cache_dir), embedder=embedder)
    yield Services(Settings(), index=index)  # the weights live in the default cache, reused across runs
    index.close()


def wait_until_decoding(url: str, timeout_s: float = 300) -> None:
    """Until one of the model process's slots is working on a call (llama-server's /slots)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        slots = httpx.get(f"{url}/slots", timeout=5).json()
        if any(slot.get("is_processing") for slot in slots):
            return
        time.sleep(0.2)
    raise AssertionError("no call reached the model process")


def test_a_crash_mid_answer_fails_the_question_and_the_next_one_is_answered(services: Services) -> None:
    graph = build_graph("auto", services=services)  # what `pagegraph ask` runs: the extract graph for this model
    model = services.chat_model(Context())
    assert isinstance(model, LlamaCppChatModel)
    endpoint = model.endpoint()
    crashed = endpoint.pid()
    assert crashed is not None
    with ThreadPoolExecutor(1) as pool:
        question = pool.submit(graph.invoke, {"question": QUESTION}, context=Context())
        wait_until_decoding(endpoint.url(60))
        os.kill(crashed, signal.SIGSEGV)
        with pytest.raises(ModelUnavailableError) as raised:
            question.result(timeout=300)
    message = str(raised.value)
    assert message.startswith("read: "), "the error names the stage the crash cut off (the reader's call)"
    assert "died with SIGSEGV" in message and "ask again" in message
    output = graph.invoke({"question": QUESTION}, context=Context())
    assert endpoint.pid() not in (None, crashed), "a new model process answered"
    assert not output["abstained"] and "E04" in output["answer"] + str(output["evidence"])
    assert any(c.source == "sb40-user-manual.pdf" for c in output["citations"]), output["answer"]
