"""A `pagegraph ingest` killed (SIGKILL) right after a document committed: a reader never repairs the folder (reads
never write): it searches what BM25 was built with and names the documents committed since; the next writer to open
the index (the next ingest) recovers it, and `inspect` says so. And answering over an index whose BM25 is behind
changes none of pagegraph's files."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.bm25 import BM25ChunkRetriever
from pagegraph.retrievers.vector import DenseRetriever
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.bm25 import BM25Index
from pagegraph.store.index import Index, open_index
from pagegraph.store.manifest import read_manifest
from tests.conftest import PAGEGRAPH, REPO, committed_names, kill_ingest_after_a_commit

pytestmark = pytest.mark.slow
FILES = 40
NOBODY = 65534


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

    # a reader, whether or not a writer holds the folder, leaves it as it is and names what it cannot search yet
    lock = open(folder / ".lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        before = pagegraph_files(folder)
        with open_index(folder, settings, embedder=embedder) as reader:
            assert name in reader.unsearchable and not found_by_both(reader, name, word)
        assert pagegraph_files(folder) == before
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()
    with open_index(folder, settings, embedder=embedder) as reader:
        assert set(reader.unsearchable) == set(committed) and reader.store.last_recovery() is None
    assert BM25Index(folder, params).built_generation() == stale_at and pagegraph_files(folder) == before
    shown = inspect_json(folder, cache_dir)
    assert set(shown["not_searchable_yet"]) == set(committed) and shown["last_recovery"] is None

    # the next writer recovers the folder for everyone
    with open_index(folder, settings, write=True, embedder=embedder):
        pass
    with open_index(folder, settings, embedder=embedder) as reader:
        assert found_by_both(reader, name, word) and reader.unsearchable == []
        assert reader.vectors.count() == reader.store.chunk_count()
    assert "rebuilt BM25 and the vector matrix" in inspect_json(folder, cache_dir)["last_recovery"]["what"]


def pagegraph_files(folder: Path) -> dict[str, str]:
    """Digests of the files pagegraph itself writes in an index folder: store, manifest, BM25 and the matrices
    (Chroma's own files are its library's)."""
    paths = [folder / "store.sqlite", folder / "manifest.json", *sorted((folder / "bm25").glob("*"))]
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def inspect_json(folder: Path, cache_dir: Path) -> dict:
    shown = subprocess.run(
        [str(PAGEGRAPH), "inspect", "--index", str(folder), "--json"],
        env={**os.environ, "PAGEGRAPH_CACHE_DIR": str(cache_dir)},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(shown.stdout)


def test_answering_over_an_index_whose_bm25_is_behind_writes_nothing_and_warns(
    tmp_path: Path, cache_dir: Path, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    from pagegraph import build_graph
    from pagegraph.config import Context
    from pagegraph.services import Services
    from tests.fakes import ScriptedChatModel

    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    (tmp_path / "ferry.md").write_text("# Ferry\n\nThe ferry to the island leaves the harbour at seven o'clock.\n")
    (tmp_path / "bus.md").write_text("# Bus\n\nThe night bus to the airport leaves the square at midnight.\n")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "ferry.md"])
    kept = tmp_path / "bm25-before"
    shutil.copytree(settings.index / "bm25", kept)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "bus.md"])
    shutil.rmtree(settings.index / "bm25")
    shutil.copytree(kept, settings.index / "bm25")  # BM25 as it was before the bus note was committed
    before = pagegraph_files(settings.index)

    model = ScriptedChatModel.replying(
        "The ferry leaves at seven o'clock [1].", "The ferry leaves at seven o'clock [1]."
    )
    with open_index(settings.index, settings, embedder=embedder) as reader, caplog.at_level(logging.WARNING):
        graph = build_graph("extract", services=Services(settings, chat_model=model, index=reader))
        output = graph.invoke({"question": "When does the ferry leave the harbour?"}, context=Context())
        assert reader.unsearchable == ["bus.md"]
    assert "seven" in output["answer"] and output["citations"][0].source == "ferry.md"
    assert "bus.md" in caplog.text and "not searchable yet" in caplog.text
    assert pagegraph_files(settings.index) == before


def test_committed_chunks_missing_from_chroma_are_put_back_on_open(tmp_path: Path, cache_dir: Path, embedder) -> None:
    from pagegraph.ingest.pipeline import Ingestor

    settings = Settings(index=tmp_path / "index", cache_dir=cache_dir)
    (tmp_path / "a.md").write_text("# A\n\nThe lighthouse keeper logs the fog horn at dawn.\n")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "a.md"])
        (document,) = index.store.documents()
        index.vectors.delete_document(document.id)  # as a Chroma folder restored from an older backup would be
        assert index.vectors.count() == 0
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.vectors.count() == 0, "readers leave a current BM25's folder alone"
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert index.vectors.count() == index.store.chunk_count() > 0
        assert "missing from Chroma" in index.store.last_recovery()[1]
        hits = DenseRetriever(index=index).search("fog horn lighthouse", k=1)
        assert hits and index.store.chunks_by_id([hits[0].chunk_id])


READ_ONLY_ASK = """
import sys
from pathlib import Path

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.store.index import open_index
from pagegraph.services import Services
from tests.fakes import ScriptedChatModel

folder = Path(sys.argv[1])
assert not os.access(folder, os.W_OK), "the index folder must be read-only to this process"
settings = Settings(index=folder)
model = ScriptedChatModel.replying("The ferry leaves at seven o'clock [1].", "The ferry leaves at seven o'clock [1].")
with open_index(folder, settings) as reader:
    graph = build_graph("extract", services=Services(settings, chat_model=model, index=reader))
    output = graph.invoke({"question": "When does the ferry leave the harbour?"}, context=Context())
print(output["answer"], "|", output["citations"][0].source)
"""


def test_an_index_folder_that_is_read_only_answers(tmp_path: Path, cache_dir: Path, embedder: Embedder) -> None:
    """As a user who may not write the index (run as `nobody` where the tests run as root, whom permissions do not
    bind): the question is answered, and no file changes."""
    place = Path(tempfile.mkdtemp(prefix="pagegraph-read-only-"))  # outside pytest's private temp folders
    folder = place / "index"
    try:
        place.chmod(0o755)
        settings = Settings(index=folder, cache_dir=cache_dir)
        (tmp_path / "ferry.md").write_text("# Ferry\n\nThe ferry to the island leaves the harbour at seven o'clock.\n")
        with open_index(folder, settings, write=True, embedder=embedder) as index:
            Ingestor(index).run([tmp_path / "ferry.md"])
        reader_cache = place / "cache"
        shutil.copytree(cache_dir / "onnx", reader_cache / "onnx")
        as_other_user = {}
        if os.geteuid() == 0:
            as_other_user = {"user": NOBODY, "group": NOBODY, "extra_groups": []}
            probe = [sys.executable, "-c", "import tests.fakes, pagegraph.services"]
            try:  # exec itself fails (PermissionError) when the interpreter lies in a private home folder
                runs = subprocess.run(probe, cwd=REPO, capture_output=True, **as_other_user).returncode == 0
            except PermissionError:
                runs = False
            if not runs:
                pytest.skip(f"user {NOBODY} may not run {sys.executable} or read {REPO} (a private home folder)")
            for path in [reader_cache, *reader_cache.rglob("*")]:
                os.chown(path, NOBODY, NOBODY)
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        before = pagegraph_files(folder)
        env = {**os.environ, "PAGEGRAPH_CACHE_DIR": str(reader_cache), "HOME": str(reader_cache)}
        asked = subprocess.run(
            [sys.executable, "-c", "import os\n" + READ_ONLY_ASK, str(folder)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            **as_other_user,
        )
        assert asked.returncode == 0, asked.stderr[-3000:]
        assert "seven" in asked.stdout and asked.stdout.strip().endswith("| ferry.md")
        assert pagegraph_files(folder) == before
    finally:
        for path in [folder, *folder.rglob("*")] if folder.exists() else []:
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(place)
