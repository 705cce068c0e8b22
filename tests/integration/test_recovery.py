"""A `pagegraph ingest` killed (SIGKILL) right after a document committed: before any new ingest, a search restricted
to that document finds it with BM25 and dense, whether a writer still holds the folder (the reader builds a private
BM25) or not (the reader recovers the folder, and `inspect` says so)."""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.indexing.bm25 import BM25Index
from pagegraph.indexing.embedder import Embedder
from pagegraph.indexing.index import Index
from pagegraph.indexing.manifest import read_manifest
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.access import RetrievalFilter
from tests.conftest import PAGEGRAPH, committed_names, kill_ingest_after_a_commit

pytestmark = pytest.mark.slow
FILES = 40


def kill_after_first_commit(docs: Path, index: Path, cache_dir: Path) -> list[str]:
    env = {**os.environ, "PAGEGRAPH_CACHE_DIR": str(cache_dir), "PAGEGRAPH_INGEST_SUMMARIES": "extractive"}
    kill_ingest_after_a_commit([str(docs), "--index", str(index)], env, lambda: committed_names(index))
    return committed_names(index)


def found_by_both(index: Index, name: str, word: str) -> bool:
    only = RetrievalFilter(documents=[name])
    lexical = BM25ChunkRetriever(index=index).search(f"{word} harbour", k=3, flt=only)
    dense = DenseRetriever(index=index).search(f"{word} harbour", k=3, flt=only)
    chunks = index.store.chunks_by_id([hit.chunk_id for hit in lexical + dense])
    return bool(lexical) and bool(dense) and all(chunk.source == name for chunk in chunks.values())


def test_a_document_committed_before_a_kill_is_searchable_before_any_new_ingest(
    tmp_path: Path, cache_dir: Path, embedder: Embedder
) -> None:
    docs, folder = tmp_path / "docs", tmp_path / "index"
    docs.mkdir()
    for number in range(FILES):
        (docs / f"note-{number:02d}.md").write_text(
            f"# Note {number}\n\nThe ferry codeword{number} leaves the harbour at {number % 12 + 1} o'clock.\n"
        )
    committed = kill_after_first_commit(docs, folder, cache_dir)
    assert 0 < len(committed) < FILES, "killed mid-run, after a commit"
    settings = Settings(cache_dir=cache_dir)
    params = read_manifest(folder).params
    stale_at = BM25Index(folder, params).built_generation()
    with sqlite3.connect(f"file:{folder / 'store.sqlite'}?mode=ro", uri=True) as db:
        generation = int(db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
    assert stale_at != generation, "the kill left BM25 behind the store"
    name = committed[-1]
    word = f"codeword{int(name[5:7])}"

    # a writer (here: this test) holds the folder: the reader builds its own BM25 and matrix
    lock = open(folder / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        with Index(folder, settings, embedder=embedder) as reader:
            assert found_by_both(reader, name, word)
            assert reader.store.last_recovery() is None
        assert BM25Index(folder, params).built_generation() == stale_at, "the folder was left to its writer"
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()

    # nobody holds it: the first reader recovers the folder for everyone
    with Index(folder, settings, embedder=embedder) as reader:
        assert found_by_both(reader, name, word)
        assert not reader.bm25_is_stale() and reader._private_bm25 is None
        assert reader.vectors.count() == reader.store.chunk_count()
    shown = subprocess.run(
        [str(PAGEGRAPH), "inspect", "--index", str(folder), "--json"],
        env={**os.environ, "PAGEGRAPH_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    recovery = json.loads(shown.stdout)["last_recovery"]
    assert "rebuilt BM25 and the vector matrix" in recovery["what"]


def test_committed_chunks_missing_from_chroma_are_put_back_on_open(tmp_path: Path, cache_dir: Path, embedder) -> None:
    from pagegraph.indexing.pipeline import Ingestor

    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    (tmp_path / "a.md").write_text("# A\n\nThe lighthouse keeper logs the fog horn at dawn.\n")
    with Index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "a.md"])
        (document,) = index.store.documents()
        index.vectors.delete_document(document.id)  # as a Chroma folder restored from an older backup would be
        assert index.vectors.count() == 0
    with Index(settings.index, settings, embedder=embedder) as reader:
        assert reader.vectors.count() == 0, "readers leave a current BM25's folder alone"
    with Index(settings.index, settings, write=True, embedder=embedder) as index:
        assert index.vectors.count() == index.store.chunk_count() > 0
        assert "missing from Chroma" in index.store.last_recovery()[1]
        hits = DenseRetriever(index=index).search("fog horn lighthouse", k=1)
        assert hits and index.store.chunks_by_id([hits[0].chunk_id])
