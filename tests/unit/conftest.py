"""Fixtures of the graph tests: a real index of the sample documents, questions answered by scripted models."""

from __future__ import annotations

from pathlib import Path

import pytest

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.services import Services
from pagegraph.store.index import open_index
from tests.conftest import SAMPLES
from tests.fakes import Reply, ScriptedChatModel


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder) -> Path:
    folder = tmp_path_factory.mktemp("rag") / "index"
    with open_index(folder, Settings(cache_dir=cache_dir), write=True, embedder=embedder) as index:
        assert not Ingestor(index).run([SAMPLES]).failed
    return folder


@pytest.fixture
def ask(sample_index: Path, cache_dir: Path, embedder: Embedder):
    """ask(question, *replies, graph="rag", **context) -> (output, scripted model)."""
    index = open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)

    def run(question: str, *replies: Reply, graph: str = "rag", inputs: dict | None = None, **context):
        context.setdefault(
            "tree", {"use": False}
        )  # tree navigation has its own tests; elsewhere it would add judge calls
        model = ScriptedChatModel.replying(*replies)
        compiled = build_graph(graph, services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
        output = compiled.invoke({"question": question, **(inputs or {})}, context=Context(**context))
        assert not model.script, f"scripted replies left unused: {model.script}"
        return output, model

    yield run
    index.close()
