"""Ingestion against real files, the real embedder, real Chroma and real BM25."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import pytest
from pypdf import PdfReader
from typer.testing import CliRunner

from pagegraph.cli import app
from pagegraph.config import Settings
from pagegraph.errors import IndexLockedError, IndexMismatchError, IngestCancelled
from pagegraph.ingest.loaders import load_document
from pagegraph.ingest.pipeline import Ingestor, IngestProgress
from pagegraph.ingest.prepare import prepare_document
from pagegraph.llm.embedder import Embedder
from pagegraph.llm.minilm import count_tokens
from pagegraph.state.documents import DocumentTags
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.chunk_text import CHUNK_HEADER, document_label, search_text
from pagegraph.store.index import Index, open_index
from pagegraph.store.manifest import MANIFEST_FILE, IndexParams
from tests.conftest import PAGEGRAPH, SAMPLES, zip_bomb_docx

pytestmark = pytest.mark.slow

PAPER = "2303.05039v2.pdf"  # 9 pages with bookmarks
ENCRYPTED = "DSA-278777.pdf"  # AES-encrypted with an empty password


def writable_index(settings: Settings, embedder: Embedder, params: IndexParams | None = None) -> Index:
    return open_index(settings.index, settings, params, write=True, embedder=embedder)


def test_pdf_pages_match_the_pdf(settings: Settings, embedder: Embedder, shared_docs: Path) -> None:
    path = shared_docs / PAPER
    flat = settings.with_changes(ingest={"pdf_tables": False})  # the text layer alone, to compare with
    with writable_index(flat, embedder) as index:
        summary = Ingestor(index).run([path])
        assert [o.status for o in summary.outcomes] == ["added"]
        doc = index.store.documents()[0]
        pages = index.store.pages(doc.id)
        reader = PdfReader(path)
        assert doc.n_pages == len(reader.pages) == len(pages)
        assert [p.number for p in pages] == list(range(1, len(reader.pages) + 1))
        pdf = pdfium.PdfDocument(path)
        for page, pdf_page in zip(pages, pdf):
            read = pdf_page.get_textpage().get_text_bounded().replace("\x02", "-")  # a hyphen at a line break
            assert " ".join(page.text.split()) == " ".join(read.split())
        page_text = {p.number: p.text for p in pages}
        for chunk in index.store.chunks(doc.id):
            covered = "\n\n".join(page_text[n] for n in range(chunk.start_page, chunk.end_page + 1))
            assert chunk.text in covered
            assert chunk.start_page == chunk.end_page  # default strategy: page
        assert index.vectors.count() == doc.n_chunks
        tree = index.store.tree(doc.id)
        assert doc.outline_source == "bookmarks" and len(tree) > 5
        assert all(1 <= node.start_page <= node.end_page <= doc.n_pages for node in tree)


def test_encrypted_pdf_with_empty_password_ingests(settings: Settings, embedder: Embedder, shared_docs: Path) -> None:
    path = shared_docs / ENCRYPTED
    assert PdfReader(path).is_encrypted
    with writable_index(settings, embedder) as index:
        summary = Ingestor(index).run([path])
        assert [o.status for o in summary.outcomes] == ["added"], summary.outcomes
        doc = index.store.documents()[0]
        assert doc.n_pages == 21 and doc.n_chunks > 0


def test_reingest_unchanged_embeds_nothing_and_changed_file_is_replaced(
    backend_settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs, ignore=shutil.ignore_patterns("*.py"))
    query = embedder.embed(["self-test"])[0]
    with writable_index(backend_settings, embedder) as index:
        first = Ingestor(index).run([docs])
        assert first.count("added") == 3 and first.chunks_embedded > 0
        vectors = index.vector_count()

        again = Ingestor(index).run([docs])
        assert again.count("unchanged") == 3 and again.chunks_embedded == 0
        assert index.vector_count() == vectors

        retagged = Ingestor(index).run([docs], tags=DocumentTags(project="apollo", confidentiality="confidential"))
        assert retagged.count("retagged") == 3 and retagged.chunks_embedded == 0
        assert len(index.nearest(query, 500, RetrievalFilter(projects=["apollo"]))) == vectors
        assert len(index.nearest(query, 500, RetrievalFilter(max_confidentiality="confidential"))) == vectors
        assert not index.nearest(query, 500, RetrievalFilter(max_confidentiality="internal"))

        guide = docs / "commissioning-guide.md"
        old = index.store.document_by_path(str(guide.resolve()))
        guide.write_text(guide.read_text().replace("90 seconds", "two minutes"))
        changed = Ingestor(index).run([docs])
        assert changed.count("updated") == 1 and changed.count("unchanged") == 2
        new = index.store.document_by_path(str(guide.resolve()))
        assert new.id != old.id
        assert changed.chunks_embedded == new.n_chunks
        assert any("two minutes" in c.text for c in index.store.chunks(new.id))
        assert index.vector_count() == sum(d.n_chunks for d in index.store.documents())
        current = {chunk.id for chunk in index.store.chunks()}
        assert {chunk_id for chunk_id, _ in index.nearest(query, 500, RetrievalFilter())} == current

        (docs / "support-call-2024-03-14.vtt").unlink()
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        assert not Ingestor(index).run([elsewhere], prune=True).outcomes, "prunes only under the folders it is given"
        pruned = Ingestor(index).run([], prune=True)
        assert [o.status for o in pruned.outcomes] == ["removed"]
        assert len(index.store.documents()) == 2
        assert index.vector_count() == sum(d.n_chunks for d in index.store.documents())
        assert sorted(index.catalog.ids) == sorted(c.id for c in index.store.chunks())


def test_parameter_mismatch_is_refused_naming_the_parameter(backend_settings: Settings, embedder: Embedder) -> None:
    settings = backend_settings
    with writable_index(settings, embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
    with pytest.raises(IndexMismatchError) as error:
        writable_index(settings, embedder, IndexParams(chunk_size=600, chunk_strategy="document"))
    message = str(error.value)
    assert "chunk_size: index has 1000, this run asks for 600" in message
    assert "chunk_strategy: index has 'page', this run asks for 'document'" in message
    assert "--recreate" in message
    with writable_index(settings, embedder, IndexParams()) as index:  # the same parameters open fine
        assert len(index.store.documents()) == 1


def test_rebuild_indexes_reproduces_search_results(backend_settings: Settings, embedder: Embedder) -> None:
    queries = [
        "What does error E04 mean?",
        "warranty registration deadline",
        "how to pair the app",
        "Dana ticket number",
    ]
    with writable_index(backend_settings, embedder) as index:
        Ingestor(index).run([SAMPLES])

        def results() -> list:
            dense = [index.nearest(embedder.embed([q])[0], 8, RetrievalFilter()) for q in queries]
            lexical = [index.keyword_search(q, 8) for q in queries]
            return [[(i, round(s, 5)) for i, s in hits] for hits in dense + lexical]

        before = results()
        assert all(before)
        total = index.rebuild_derived()
        assert total == index.vector_count() == sum(d.n_chunks for d in index.store.documents())
        assert results() == before


def test_killed_write_leaves_no_orphan_vectors(settings: Settings, embedder: Embedder) -> None:
    """Vectors written for a document whose commit never happened are removed when the index is next opened."""
    with writable_index(settings, embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
        committed = index.vectors.count()
        path = (SAMPLES / "support-call-2024-03-14.vtt").resolve()
        prepared = prepare_document(path, "0" * 64, DocumentTags(), index.params)
        index.store.add_to_journal(prepared.record.id)
        index.vectors.add(prepared.chunks, embedder.embed([c.text for c in prepared.chunks]))
        assert index.vectors.count() > committed
    # the process "died" here: no commit
    with writable_index(settings, embedder) as index:
        assert index.vectors.count() == committed
        assert index.store.journal() == []
        assert [d.name for d in index.store.documents()] == ["commissioning-guide.md"]


def test_chunk_header_is_embedded_and_searched_but_not_stored(backend_settings: Settings, embedder: Embedder) -> None:
    """Vectors (normalised, kept in the store) and keyword search see each chunk under its document and section
    header, in a folder and in a database: a chunk is found by its document's title and by its section's, where its
    text names neither. The stored text is the chunk's own, and header plus text fit the embedder's window."""
    with writable_index(backend_settings, embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
        doc = index.store.documents()[0]
        label = document_label(doc.name, doc.title)
        pairs = list(index.store.iter_chunks())
        stored = np.stack([vector for _, vector in pairs])
        assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-4 for v in stored)
        searched = [search_text(chunk, label) for chunk, _ in pairs]
        assert all(text.startswith("commissioning guide") for text in searched)
        assert np.allclose(stored, embedder.embed(searched), atol=1e-5)
        assert max(count_tokens(t) for t in searched) <= index.params.chunk_max_tokens
        page_text = "\n\n".join(p.text for p in index.store.pages(doc.id))
        assert all(page_text[c.start_offset : c.end_offset] == c.text for c, _ in pairs)
        only_in_header = [c for c, _ in pairs if "commissioning" not in c.text.lower()]
        assert only_in_header, "the sample should have chunks that never name it"
        found = {chunk_id for chunk_id, _ in index.keyword_search("commissioning guide", 1000)}
        assert {c.id for c in only_in_header} <= found


def test_a_chunk_is_found_by_its_section_s_title_where_its_text_does_not_name_it(
    backend_settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    """A long section's later chunks (which do not hold its heading) are found by the section's title: the section
    path is in what keyword search reads of them, in a folder and in a database."""
    body = " ".join(f"Step {n}: tighten bolt {n} of the housing to the torque the table gives." for n in range(1, 80))
    path = tmp_path / "zephyr-handbook.md"
    path.write_text(f"# Zephyr Handbook\n\n## Quarterly maintenance\n\n{body}\n\n## Warranty\n\nTwo years.\n")
    with writable_index(backend_settings, embedder) as index:
        Ingestor(index).run([path])
        later = [c for c in index.store.chunks() if "quarterly" not in c.text.lower() and "Step" in c.text]
        assert later and all(c.section_path[-1] == "Quarterly maintenance" for c in later)
        found = {chunk_id for chunk_id, _ in index.keyword_search("quarterly", 1000)}
        assert {c.id for c in later} <= found


def test_index_of_headerless_chunks_is_refused_until_recreated(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with writable_index(settings, embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
    manifest = json.loads((settings.index / MANIFEST_FILE).read_text())
    del manifest["params"]["chunk_header"]  # as written before chunk headers existed
    (settings.index / MANIFEST_FILE).write_text(json.dumps(manifest))
    for write in (False, True):
        with pytest.raises(IndexMismatchError, match="--recreate") as error:
            open_index(settings.index, settings, write=write, embedder=embedder)
        assert "chunk_header 'none'" in str(error.value)
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(settings.cache_dir))
    result = CliRunner().invoke(
        app, ["ingest", str(SAMPLES / "commissioning-guide.md"), "--index", str(settings.index), "--recreate"]
    )
    assert result.exit_code == 0, result.output
    with open_index(settings.index, settings, embedder=embedder) as index:
        assert index.params.chunk_header == CHUNK_HEADER and len(index.store.documents()) == 1


def test_one_writer_at_a_time(settings: Settings, embedder: Embedder) -> None:
    with writable_index(settings, embedder):
        with pytest.raises(IndexLockedError, match="being written by another pagegraph process"):
            writable_index(settings, embedder)
        with open_index(settings.index, settings, embedder=embedder) as reader:  # readers are not blocked
            assert reader.store.documents() == []


def test_pdf_page_labels_are_kept_beside_page_numbers(
    settings: Settings, embedder: Embedder, shared_docs: Path
) -> None:
    path = shared_docs / "watch_d.pdf"  # front matter numbered i, ii, then 1, 2, ...
    with writable_index(settings, embedder) as index:
        Ingestor(index).run([path])
        pages = index.store.pages(index.store.documents()[0].id)
    assert [p.number for p in pages[:4]] == [1, 2, 3, 4]
    assert [p.label for p in pages[:4]] == ["i", "ii", "1", "2"]
    assert [p.label for p in pages] == list(PdfReader(path).page_labels)


def test_large_filing_past_pypdf_default_limits_loads(shared_docs: Path) -> None:
    path = shared_docs.parents[1] / "sec10q" / "documents" / "2023 Q1 MSFT.pdf"
    if not path.exists():
        pytest.skip(f"{path} not found")
    doc = load_document(path)
    assert len(doc.pages) == 72  # pypdf alone stops at its array limit on this file
    assert sum(bool(page.text) for page in doc.pages) > 60


def test_a_dying_parser_fails_its_documents_and_the_run_goes_on(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.ingest.prepare import ParseWorker

    # a worker that reads its first job and dies, as a native crash or the OOM killer would leave it
    monkeypatch.setattr(ParseWorker, "command", [sys.executable, "-c", "import sys; sys.stdin.buffer.read(1)"])
    with writable_index(settings, embedder) as index:
        summary = Ingestor(index).run([SAMPLES / "commissioning-guide.md", SAMPLES / "support-call-2024-03-14.vtt"])
        assert [o.status for o in summary.outcomes] == ["failed", "failed"]
        (reason,) = {o.reason for o in summary.outcomes}
        assert reason.startswith("the parser process died while reading this file") and "PARSE_MEMORY" in reason
        assert index.store.documents() == []


def test_a_parser_past_its_time_is_stopped_and_the_run_goes_on(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.ingest.prepare import ParseWorker

    # a worker that takes its jobs and never answers, as one stuck on a hostile file would
    monkeypatch.setattr(ParseWorker, "command", [sys.executable, "-c", "import time; time.sleep(600)"])
    settings = settings.with_changes(ingest={"parse_seconds": 2.0})
    with writable_index(settings, embedder) as index:
        started = time.monotonic()
        summary = Ingestor(index).run([SAMPLES / "commissioning-guide.md", SAMPLES / "support-call-2024-03-14.vtt"])
        assert time.monotonic() - started < 60
        assert [o.status for o in summary.outcomes] == ["failed", "failed"]
        assert all("PAGEGRAPH_PARSE_SECONDS" in o.reason for o in summary.outcomes)
        assert index.store.documents() == []


def test_a_single_file_is_parsed_within_the_budget_too(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.ingest.prepare import ParseWorker

    monkeypatch.setattr(ParseWorker, "command", [sys.executable, "-c", "import sys; sys.stdin.buffer.read(1)"])
    with writable_index(settings, embedder) as index:
        (outcome,) = Ingestor(index).run([SAMPLES / "commissioning-guide.md"]).outcomes
        assert outcome.status == "failed" and outcome.reason.startswith("the parser process died")


class StopAfterFirstFile(IngestProgress):
    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop

    def file_finished(self, outcome) -> None:
        self.stop.set()


def test_a_cancelled_ingest_keeps_what_it_committed_and_releases_the_index(
    settings: Settings, embedder: Embedder
) -> None:
    stop = threading.Event()
    files = [
        SAMPLES / "commissioning-guide.md",
        SAMPLES / "support-call-2024-03-14.vtt",
        SAMPLES / "sb40-user-manual.pdf",
    ]
    with pytest.raises(IngestCancelled), writable_index(settings, embedder) as index:
        Ingestor(index, StopAfterFirstFile(stop), stop=stop).run(files)
    with writable_index(settings, embedder) as index:  # the lock went with the cancelled run
        assert [d.name for d in index.store.documents()] == ["commissioning-guide.md"]
        assert Ingestor(index).run(files).count("added") == 2


def test_a_cancel_stops_a_parser_that_is_still_reading(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pagegraph.ingest.prepare import ParseWorker

    monkeypatch.setattr(ParseWorker, "command", [sys.executable, "-c", "import time; time.sleep(600)"])
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    started = time.monotonic()
    with pytest.raises(IngestCancelled), writable_index(settings, embedder) as index:
        Ingestor(index, stop=stop).run([SAMPLES / "commissioning-guide.md"])
    assert time.monotonic() - started < 10  # not the parse budget's 900 s


def test_python_script_without_main_guard_can_ingest(tmp_path: Path, cache_dir: Path) -> None:
    script = tmp_path / "ingest_docs.py"
    script.write_text(
        "from pathlib import Path\n"
        "from pagegraph.config import Settings\n"
        "from pagegraph.store.index import open_index\n"
        "from pagegraph.ingest.pipeline import Ingestor\n"
        f"settings = Settings(index=Path({str(tmp_path / 'index')!r}), cache_dir=Path({str(cache_dir)!r}))\n"
        "with open_index(settings.index, settings, write=True) as index:\n"
        f"    summary = Ingestor(index).run([Path({str(SAMPLES)!r})])\n"
        "    print(summary.count('added'), [o.reason for o in summary.failed])\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("3 []")


def test_a_zip_bomb_word_file_is_refused_at_once_and_the_index_stays_usable(tmp_path: Path, settings: Settings) -> None:
    """A 1.2 MB-class Word file whose document.xml expands to 400 MB, beside a good file: the CLI names the file
    and the limit within seconds, its processes stay far under 1.5 GB, the good file goes in, and the next ingest
    works."""
    folder = tmp_path / "docs"
    folder.mkdir()
    bomb = zip_bomb_docx(folder / "bomb.docx", 400_000_000)
    assert bomb.stat().st_size < 2_000_000
    (folder / "fine.md").write_text("# Fine\n\nThe fine document says the pump needs oil every spring.\n")
    index = tmp_path / "index"
    env = {**os.environ, "PAGEGRAPH_CACHE_DIR": str(settings.cache_dir)}
    measure = (
        "import resource, subprocess, sys, time; began = time.monotonic(); "
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(done.returncode, round(time.monotonic() - began, 1), "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); print(done.stdout + done.stderr)"
    )
    command = [str(PAGEGRAPH), "ingest", str(folder), "--index", str(index)]
    done = subprocess.run(
        [sys.executable, "-c", measure, *command], capture_output=True, text=True, env=env, timeout=300
    )
    code, seconds, peak_kb = done.stdout.splitlines()[0].split()
    output = done.stdout
    assert int(code) != 0 and "bomb.docx: unpacks to" in output and "PAGEGRAPH_MAX_UNPACKED_BYTES" in output, output
    assert float(seconds) < 60 and int(peak_kb) < 1_500_000, done.stdout.splitlines()[0]
    (folder / "bomb.docx").unlink()
    (folder / "more.md").write_text("# More\n\nA second document on the pump's filters.\n")
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    with open_index(index, Settings(cache_dir=settings.cache_dir)) as opened:
        assert sorted(d.name for d in opened.store.documents()) == ["fine.md", "more.md"]


def test_two_ingests_of_the_same_new_files_into_a_folder_do_the_work_once(tmp_path: Path, cache_dir: Path) -> None:
    """The second writer waits for the first (saying so) and finds every file unchanged: each is parsed and embedded
    once, and both exit 0."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for number in range(5):
        body = "\n\n".join(
            f"## Part {part}\n\nThe ferry number {number} leaves berth {part} at dawn. " * 6 for part in range(3)
        )
        (docs / f"ferry-{number}.md").write_text(f"# Ferry {number}\n\n{body}\n")
    env = {
        **os.environ,
        "PAGEGRAPH_CACHE_DIR": str(cache_dir),
        "PAGEGRAPH_INGEST_SUMMARIES": "extractive",
        "PAGEGRAPH_INDEX": str(tmp_path / "index"),
    }
    env.pop("PAGEGRAPH_DATABASE_URL", None)
    command = [str(PAGEGRAPH), "ingest", str(docs)]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    outputs = [" ".join(process.communicate(timeout=300)[0].split()) for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    first, second = sorted(outputs, key=lambda out: "waiting for it to finish" in out)
    assert "5 added" in first and "waiting for it to finish" in second and "5 unchanged" in second, outputs
    parsed = [int(m) for out in outputs for m in re.findall(r"parsing: (\d+) pages", out)]
    embedded = [int(m) for out in outputs for m in re.findall(r"embedding: (\d+) chunks", out)]
    with open_index(tmp_path / "index", Settings(cache_dir=cache_dir)) as index:
        chunks = sum(doc.n_chunks for doc in index.documents())
    assert (sum(parsed), sum(embedded)) == (5, chunks), outputs


def test_remove_takes_one_document_out_with_its_vectors_and_keywords(
    backend_settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    """`pagegraph remove NAME` in both backends: the document, its chunks, vectors and keyword postings go, its file
    stays, the others are untouched; a name the index does not hold is said."""
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES, docs, ignore=shutil.ignore_patterns("*.py"))
    query = embedder.embed(["grid voltage out of range"])[0]
    with writable_index(backend_settings, embedder) as index:
        Ingestor(index).run([docs])
        manual = index.store.document_by_path(str((docs / "sb40-user-manual.pdf").resolve()))
        assert any(hit.startswith(manual.id) for hit, _ in index.keyword_search("E04 grid voltage", 5))
        outcomes = Ingestor(index).remove(["sb40-user-manual.pdf", "nope.pdf"])
        assert [(o.name, o.status) for o in outcomes] == [("sb40-user-manual.pdf", "removed"), ("nope.pdf", "failed")]
        assert sorted(d.name for d in index.store.documents()) == [
            "commissioning-guide.md",
            "support-call-2024-03-14.vtt",
        ]
        assert not any(hit.startswith(manual.id) for hit, _ in index.keyword_search("E04 grid voltage", 20))
        remaining = {chunk.id for chunk in index.store.chunks()}
        assert {chunk_id for chunk_id, _ in index.nearest(query, 500, RetrievalFilter())} == remaining
        assert (docs / "sb40-user-manual.pdf").exists(), "the file stays"
