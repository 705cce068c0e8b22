from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Sized
from pathlib import Path

import docx
import pytest

from pagegraph.config import Settings
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.store.index import Index, open_index

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
SHARED_DOCS = REPO.parent / "shared" / "eval" / "mmlongbench" / "documents"
PAGEGRAPH = Path(sys.executable).with_name("pagegraph")


@contextlib.contextmanager
def markdown_library(folder: Path, texts: dict[str, str], cache_dir: Path, embedder: Embedder) -> Iterator[Index]:
    """An index of Markdown files written from `texts` (file name -> text) into `folder`, open while in use."""
    for name, text in texts.items():
        (folder / name).write_text(text)
    settings = Settings(index=folder / "index", cache_dir=cache_dir)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        assert not Ingestor(index).run(sorted(folder.glob("*.md"))).failed
        yield index


def zip_bomb_docx(path: Path, unpacked: int) -> Path:
    """A Word file whose document.xml is `unpacked` bytes of one repeated paragraph (a few hundred KB packed), made
    from a small real one kept beside it as a hidden file (which folder ingest skips)."""
    source = path.with_name(f".seed-{path.name}")
    document = docx.Document()
    document.add_paragraph("Seed paragraph.")
    document.save(source)
    paragraph = b"<w:p><w:r><w:t>" + b"bomb " * 40 + b"</w:t></w:r></w:p>"
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bomb:
        for item in original.infolist():
            if item.filename != "word/document.xml":
                bomb.writestr(item, original.read(item))
                continue
            head, tail = original.read(item).split(b"<w:body>")
            with bomb.open("word/document.xml", "w", force_zip64=True) as member:
                member.write(head + b"<w:body>")
                for _ in range(unpacked // len(paragraph)):
                    member.write(paragraph)
                member.write(tail)
    return path


def committed_names(index: Path) -> list[str]:
    """The documents an index folder has committed, read without waiting on its writer."""
    store = index / "store.sqlite"
    if not store.exists():
        return []
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=0.1) as db:
            return [row[0] for row in db.execute("SELECT name FROM documents")]
    except sqlite3.OperationalError:  # not created yet
        return []


def kill_ingest_after_a_commit(
    args: list[str], env: dict[str, str], committed: Callable[[], Sized], settle: float = 0.0, timeout: float = 180
) -> None:
    """Run `pagegraph ingest ARGS` and SIGKILL it, parser workers included, `settle` seconds after `committed()`
    first holds something."""
    process = subprocess.Popen(
        [str(PAGEGRAPH), "ingest", *args],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    try:
        while not committed():
            assert process.poll() is None, "ingest ended before committing anything"
            assert time.monotonic() < deadline, f"no document committed within {timeout:.0f} s"
            time.sleep(0.01)
        time.sleep(settle)
        assert process.poll() is None, "ingest finished before it could be killed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="session")
def shared_docs() -> Path:
    if not SHARED_DOCS.is_dir():
        pytest.skip(f"evaluation documents not found at {SHARED_DOCS} (../shared is absent)")
    return SHARED_DOCS


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pagegraph-cache")


@pytest.fixture
def settings(tmp_path: Path, cache_dir: Path) -> Settings:
    return Settings(index=tmp_path / "index", cache_dir=cache_dir, models={"embedding_threads": 0})


@pytest.fixture(scope="session")
def embedder(cache_dir: Path) -> Embedder:
    return Embedder(Settings(cache_dir=cache_dir))


BACKENDS = ["folder", "postgres"]


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory):
    """A private PostgreSQL 16 with pgvector (pgserver, a dev dependency), for the whole session."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver is not installed: pip install -e '.[dev]'")
    server = pgserver.get_server(tmp_path_factory.mktemp("postgres"), cleanup_mode="stop")
    yield server.get_uri()
    server.cleanup()


def on_backend(settings: Settings, backend: str, request: pytest.FixtureRequest) -> Settings:
    """`settings` for an index in its folder, or in the session's database."""
    if backend == "folder":
        return settings
    index = settings.index.with_name(f"index-{uuid.uuid4().hex[:12]}")  # its own schema in the shared database
    return settings.with_changes(storage={"database_url": request.getfixturevalue("database_url")}, index=index)


@pytest.fixture(params=BACKENDS)
def backend_settings(request: pytest.FixtureRequest, settings: Settings) -> Settings:
    """The test runs on a folder index and on a database index (its schema named after the test's own folder)."""
    return on_backend(settings, request.param, request)
