from __future__ import annotations

import math
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from pagegraph.config import Settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.chunking import chunk_document
from pagegraph.ingest.loaders import load_document
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.ingest.tree import build_tree, section_outline
from pagegraph.llm.embedder import ChromaEmbeddingFunction, Embedder
from pagegraph.state.documents import DocumentTags
from pagegraph.store.bm25 import BM25Index
from pagegraph.store.index import open_index
from pagegraph.store.manifest import IndexParams
from pagegraph.store.vectors import VectorStore
from pagegraph.text.words import tokenize
from tests.conftest import SAMPLES

QUERIES = [
    "personality traits recommendation",
    "neural collaborative filtering results",
    "dataset statistics users",
    "amazon reviews 2018",
]


def corpus_texts(path: Path, params: IndexParams) -> list[str]:
    doc = load_document(path)
    entries, _ = section_outline(doc)
    nodes = build_tree(doc, "d", entries)
    return [c.text for c in chunk_document(doc, nodes, params.chunking(), DocumentTags(), 1)]


class LuceneIdfBM25(BM25Okapi):
    """rank-bm25's Okapi scorer with Lucene's idf, log(1 + (N - n + 0.5) / (n + 0.5)), which never goes negative."""

    def _calc_idf(self, nd: dict) -> None:
        self.idf = {word: math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5)) for word, freq in nd.items()}


@pytest.mark.parametrize("method", ["lucene", "robertson"])
def test_bm25_scores_agree_with_rank_bm25(tmp_path: Path, shared_docs: Path, method: str) -> None:
    params = IndexParams(bm25_method=method)
    texts = corpus_texts(shared_docs / "2303.05039v2.pdf", params)
    tokenized = [tokenize(t) for t in texts]
    index = BM25Index(tmp_path, params)
    index.build([f"c{i}" for i in range(len(texts))], texts, np.zeros((len(texts), 384), np.float32), generation=1)
    reference_class = LuceneIdfBM25 if method == "lucene" else BM25Okapi
    reference = reference_class(tokenized, k1=params.bm25_k1, b=params.bm25_b)
    queries = QUERIES
    if method == "robertson":
        # Robertson's idf is negative for words in more than half the chunks; rank-bm25 and bm25s floor those
        # differently, so compare on the query words rarer than that.
        def rare(word: str) -> bool:
            return sum(word in doc for doc in tokenized) < len(texts) / 2

        queries = [" ".join(w for w in tokenize(q) if rare(w)) for q in QUERIES]
    for query in queries:
        assert tokenize(query)
        ours = index.scores(query)
        theirs = reference.get_scores(tokenize(query))
        # bm25s leaves out the constant factor (k1 + 1) of the Okapi term-frequency part: same ranking, scaled scores.
        np.testing.assert_allclose(ours * (params.bm25_k1 + 1), theirs, rtol=1e-5, atol=1e-6)
        assert np.argmax(ours) == np.argmax(theirs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path: Path):
    port = free_port()
    chroma = Path(sys.executable).with_name("chroma")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path / "chroma-server"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("chroma run did not start within 60 s")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


@pytest.mark.slow
def test_chroma_server_mode(tmp_path: Path, cache_dir: Path, embedder: Embedder, chroma_server: str) -> None:
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir, storage={"chroma_url": chroma_server})
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        summary = Ingestor(index).run([SAMPLES])
        assert summary.count("added") == 3
        assert not (settings.index / "chroma").exists()
        total = sum(d.n_chunks for d in index.store.documents())
        assert index.vectors.count() == total
        hits = index.vectors.search(embedder.embed(["What does error code E04 mean?"])[0], 3)
        texts = {c.id: c.text for c in index.store.chunks()}
        assert any("E04" in texts[chunk_id] for chunk_id, _ in hits)
    with open_index(settings.index, settings, embedder=embedder) as reopened:
        assert reopened.vectors.count() == total


def test_unreachable_chroma_server_is_a_clear_error(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir, storage={"chroma_url": url})
    with pytest.raises(PagegraphError, match=f"Chroma server at {url} is not reachable"):
        open_index(settings.index, settings, write=True, embedder=embedder)


def test_one_folder_opened_and_closed_from_many_threads(tmp_path: Path, embedder: Embedder) -> None:
    """A server opens and closes an index's vectors on several threads at once; Chroma shares one system per folder
    and, unguarded, a client opening while the last one closes finds it gone."""
    function = ChromaEmbeddingFunction(embedder)

    def open_and_close(_: int) -> int:
        held = 0
        for _ in range(15):
            store = VectorStore(tmp_path, "0123456789ab", function, None)
            held += store.count()
            store.close()
        return held

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(open_and_close, range(4))) == [0] * 4
