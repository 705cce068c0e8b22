"""The index in PostgreSQL + pgvector (a private server from pgserver): what only a database index does. Behaviour both
backends share is tested on both in test_ingest.py and test_retrieval.py (`backend_settings`, `on_backend`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest
from typer.testing import CliRunner

from pagegraph.cli import app
from pagegraph.config import Context, Settings
from pagegraph.errors import PagegraphError
from pagegraph.ingest.pipeline import Ingestor
from pagegraph.llm.embedder import Embedder
from pagegraph.retrievers.hybrid import HybridRetriever
from pagegraph.services import Services
from pagegraph.state.answering import StoredSummary
from pagegraph.state.filters import RetrievalFilter
from pagegraph.store.database_index import DatabaseIndex
from pagegraph.store.index import delete_index, open_index
from pagegraph.store.postgres import index_schema, redacted
from tests.conftest import PAGEGRAPH, SAMPLES, kill_ingest_after_a_commit

pytestmark = pytest.mark.slow


def database_settings(tmp_path: Path, cache_dir: Path, url: str, name: str) -> Settings:
    return Settings(index=tmp_path / name, cache_dir=cache_dir, storage={"database_url": url})


def write_notes(folder: Path, prefix: str, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number in range(count):
        sections = "\n\n".join(
            f"## Part {part}\n\n" + f"The {prefix} ferry codeword{number} leaves berth {part} at dawn. " * 12
            for part in range(4)
        )
        path = folder / f"{prefix}-{number:02d}.md"
        path.write_text(f"# {prefix} note {number}\n\n{sections}\n")
        paths.append(path)
    return paths


def committed(url: str, folder: Path) -> dict[str, int]:
    """Chunks per committed document name, read straight from the database."""
    schema = index_schema(folder)
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass(%s)", (f"{schema}.documents",)).fetchone()[0] is None:
            return {}
        rows = conn.execute(
            f"SELECT d.name, COUNT(c.id) FROM {schema}.documents d LEFT JOIN {schema}.chunks c "
            "ON c.document_id = d.id GROUP BY d.name"
        ).fetchall()
    return dict(rows)


def wait_for_killed_clients(url: str, timeout: float = 30) -> None:
    """Wait until no other client of the database is mid-statement: a COMMIT a killed process sent before it died
    still completes on the server, after the kill returns."""
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while conn.execute(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_type = 'client backend' AND state <> 'idle'"
        ).fetchone()[0]:
            assert time.monotonic() < deadline, f"a killed client still runs a statement after {timeout:.0f} s"
            time.sleep(0.05)


def cli_env(url: str, cache_dir: Path) -> dict[str, str]:
    return {**os.environ, "PAGEGRAPH_DATABASE_URL": url, "PAGEGRAPH_CACHE_DIR": str(cache_dir)}


def test_an_unreachable_database_is_named_without_its_password(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://alice:s3cret-pw@127.0.0.1:9/teamdocs"
    monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", "")  # --database-url sets it for the process; undone after the test
    settings = database_settings(tmp_path, cache_dir, url, "index")
    with pytest.raises(PagegraphError) as error:
        open_index(settings.index, settings)
    message = str(error.value)
    assert "127.0.0.1" in message and "alice:***@" in message and "s3cret" not in message
    assert redacted("postgresql://bob@db/x") == "postgresql://bob@db/x"
    result = CliRunner().invoke(app, ["inspect", "--index", str(tmp_path / "index"), "--database-url", url])
    assert result.exit_code != 0 and "s3cret" not in result.output and "not" in result.output


def test_a_database_without_pgvector_is_refused_with_what_to_do(
    tmp_path: Path, cache_dir: Path, database_url: str
) -> None:
    """A user who may not install pgvector is told to have an administrator do it; nothing is created."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS plain_docs")
        conn.execute("DROP ROLE IF EXISTS plain_user")
        conn.execute("CREATE ROLE plain_user LOGIN")
        conn.execute("CREATE DATABASE plain_docs OWNER plain_user")
    url = database_url.replace("postgres:@", "plain_user:@").replace("/postgres?", "/plain_docs?")
    settings = database_settings(tmp_path, cache_dir, url, "index")
    with pytest.raises(PagegraphError, match="lacks the pgvector extension.*CREATE EXTENSION vector"):
        open_index(settings.index, settings, write=True)
    with pytest.raises(PagegraphError, match="no index 'index' in the database"):
        open_index(settings.index, settings)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM pg_namespace WHERE nspname LIKE 'pagegraph_%'").fetchone()[0] == 0


def test_named_indexes_share_a_database_and_stay_apart(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder
) -> None:
    team_a = database_settings(tmp_path, cache_dir, database_url, "team-a")
    team_b = database_settings(tmp_path, cache_dir, database_url, "team-b")
    assert index_schema(team_a.index) != index_schema(team_b.index)
    with open_index(team_a.index, team_a, write=True, embedder=embedder) as index:
        assert isinstance(index, DatabaseIndex)
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
    with open_index(team_b.index, team_b, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "support-call-2024-03-14.vtt"])
    with open_index(team_a.index, team_a, embedder=embedder) as index:
        assert [d.name for d in index.store.documents()] == ["commissioning-guide.md"]
        hits = HybridRetriever(index=index).search("support call ticket")
        assert {index.catalog.location(h.chunk_id)[0] for h in hits} == {"commissioning-guide.md"}
    with pytest.raises(PagegraphError, match="no index 'team-c' in the database"):
        open_index(tmp_path / "team-c", team_a, embedder=embedder)


def test_a_reader_sees_a_document_once_another_process_commits_it(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder
) -> None:
    settings = database_settings(tmp_path, cache_dir, database_url, "shared")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
    services = Services(settings)
    try:
        context = Context(index=str(settings.index))
        assert len(services.index(context).store.documents()) == 1
        notes = write_notes(tmp_path / "docs", "harbour", 1)
        subprocess.run(
            [str(PAGEGRAPH), "ingest", str(notes[0]), "--index", str(settings.index)],
            env=cli_env(database_url, cache_dir),
            check=True,
            capture_output=True,
        )
        reopened = services.index(context)
        hits = HybridRetriever(index=reopened).search("harbour ferry codeword0 berth")
        assert reopened.catalog.location(hits[0].chunk_id)[0] == "harbour-00.md"
        assert reopened.keyword_search("codeword0", 3), "searchable by keyword at once: nothing rebuilt here"
        assert not settings.index.exists(), "a database index keeps nothing on the machine that opens it"
        assert services.has_index(context)
        delete_index(settings.index, settings)  # as `ingest --recreate` elsewhere would, before it ingests again
        assert not services.has_index(context), "the open index answers that it is gone"
    finally:
        services.close()


def flat(catalog, flt: RetrievalFilter | None) -> list[str]:
    """The chunk ids a filter lets through, in id order."""
    mask = catalog.mask(flt)
    rows = np.flatnonzero(catalog.live if mask is None else mask)
    return sorted(catalog.ids[r] for r in rows)


def test_a_readers_next_snapshot_reads_only_what_was_committed_since_and_equals_a_fresh_one(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder
) -> None:
    settings = database_settings(tmp_path, cache_dir, database_url, "successor")
    notes = write_notes(tmp_path / "docs", "harbour", 9)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run(notes[:8])
    reader = open_index(settings.index, settings, embedder=embedder)
    notes[1].write_text(notes[1].read_text() + "\n\nAmended: the berth moved to pier nine.\n")
    notes[2].unlink()
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([tmp_path / "docs"], prune=True)  # one added, one updated, one removed
    successor = reader.successor()
    fresh = open_index(settings.index, settings, embedder=embedder)
    try:
        assert successor.generation == fresh.generation > reader.generation

        def live(catalog) -> list[tuple]:
            rows = np.flatnonzero(catalog.live)
            return sorted((catalog.ids[r], catalog.sources[r], int(catalog.positions[r])) for r in rows)

        assert not successor.catalog.live.all() and fresh.catalog.live.all(), "carried over, the gone chunks dead"
        assert live(successor.catalog) == live(fresh.catalog)
        assert {source for _, source, _ in live(successor.catalog)} == {p.name for p in notes} - {"harbour-02.md"}
        for flt in (None, RetrievalFilter(documents=["harbour-01.md"]), RetrievalFilter(documents=["harbour-02.md"])):
            assert flat(successor.catalog, flt) == flat(fresh.catalog, flt)
        chunk = next(c for c, source, _ in live(fresh.catalog) if source == "harbour-01.md")
        assert successor.catalog.neighbours(chunk, 1) == fresh.catalog.neighbours(chunk, 1)
        assert successor.profiles.ids == fresh.profiles.ids
        assert np.array_equal(successor.profiles.lexical("harbour note 3"), fresh.profiles.lexical("harbour note 3"))
        assert np.allclose(successor.profiles.centroids, fresh.profiles.centroids)
        assert successor.keyword_search("pier nine", 3) == fresh.keyword_search("pier nine", 3) != []
        assert "harbour-02.md" in set(reader.catalog.sources), "the earlier snapshot stays as it was"
        schema = index_schema(settings.index)
        with psycopg.connect(database_url) as conn:
            counted = dict(conn.execute(f"SELECT word, COUNT(*) FROM {schema}.chunk_words GROUP BY word").fetchall())
            kept = dict(conn.execute(f"SELECT word, chunks FROM {schema}.word_chunks WHERE chunks > 0").fetchall())
            totals = conn.execute(f"SELECT COUNT(*), SUM(length) FROM {schema}.chunk_terms").fetchone()
        assert kept == counted, "the words' chunk counts follow every commit, replacement and removal"
        assert fresh.store.search.search_totals() == tuple(totals) and totals[0] == len(fresh.catalog), "and the totals"
        assert fresh.document_frequencies(["pier", "harbour", "zorbak"]) == {w: counted[w] for w in ("pier", "harbour")}
    finally:
        for index in (reader, successor, fresh):
            index.close()


def test_a_document_retagged_or_summarised_in_place_reaches_a_readers_next_snapshot(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder
) -> None:
    settings = database_settings(tmp_path, cache_dir, database_url, "touched")
    notes = write_notes(tmp_path / "docs", "harbour", 2)
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run(notes)
    reader = open_index(settings.index, settings, embedder=embedder)
    doc = next(d for d in reader.profiles.documents if d.name == "harbour-01.md")
    internal = RetrievalFilter(max_confidentiality="internal")
    assert "harbour-01.md" in {reader.catalog.location(c)[0] for c in flat(reader.catalog, internal)}
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        index.retag(doc.id, doc.tags.model_copy(update={"confidentiality": "confidential"}))
        index.store.set_summary(
            doc.id, StoredSummary(document_type="timetable", summary="Lighthouse tides.", method="extractive")
        )
    successor, fresh = reader.successor(), open_index(settings.index, settings, embedder=embedder)
    try:
        for index in (successor, fresh):
            assert "harbour-01.md" not in {index.catalog.location(c)[0] for c in flat(index.catalog, internal)}
            row = index.profiles.row_of[doc.id]
            assert index.profiles.lexical("lighthouse tides")[row] > 0, "the summary is routed on"
    finally:
        for index in (reader, successor, fresh):
            index.close()


def test_an_index_from_before_keyword_search_in_the_database_is_filled_by_the_next_writer(
    tmp_path: Path,
    cache_dir: Path,
    database_url: str,
    embedder: Embedder,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", "")  # --database-url sets it for the process; undone after the test
    settings = database_settings(tmp_path, cache_dir, database_url, "older")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md", SAMPLES / "support-call-2024-03-14.vtt"])
        before = {q: index.keyword_search(q, 5) for q in ("AC breaker rated", "error code E04")}
    schema = index_schema(settings.index)
    with psycopg.connect(database_url) as conn:  # as an older pagegraph left it
        conn.execute(
            f"DROP TABLE {schema}.chunk_words, {schema}.chunk_terms, {schema}.document_centroids, {schema}.word_chunks, "
            f"{schema}.search_totals"
        )
        conn.execute(f"DELETE FROM {schema}.meta WHERE key = 'search'")
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert "no keyword search this one can read yet" in caplog.text
        assert sorted(reader.unsearchable) == ["commissioning-guide.md", "support-call-2024-03-14.vtt"]
        assert not reader.keyword_search("AC breaker rated", 5) and not reader.document_frequencies(["breaker"])
        assert HybridRetriever(index=reader).search("AC breaker rated"), "vector search still answers"
    inspected = CliRunner().invoke(
        app, ["inspect", "--index", str(settings.index), "--database-url", database_url, "--json"]
    )
    assert inspected.exit_code == 0, inspected.output
    report = json.loads(inspected.output)
    assert report["bm25"].startswith("made by an older pagegraph") and len(report["not_searchable_yet"]) == 2
    with open_index(settings.index, settings, write=True, embedder=embedder):
        pass
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.unsearchable == [] and reader.keyword_search_state() == "current"
        for query, hits in before.items():
            again = reader.keyword_search(query, 5)
            assert [c for c, _ in again] == [c for c, _ in hits] and [s for _, s in again] == pytest.approx(
                [s for _, s in hits]
            )


def test_search_tables_of_an_older_tokenizer_are_refilled_by_the_next_writer(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    settings = database_settings(tmp_path, cache_dir, database_url, "tokenizer")
    note = tmp_path / "zh.md"
    note.write_text("# 港口\n\n渡轮每天清晨六点从港口出发，船票在码头的售票处购买。\n")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([note])
    with psycopg.connect(database_url) as conn:  # as the pagegraph before the tokenizer was recorded left it
        conn.execute(f"UPDATE {index_schema(settings.index)}.meta SET value = 'bm25-words-3' WHERE key = 'search'")
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.unsearchable == ["zh.md"] and "no keyword search this one can read yet" in caplog.text
    with open_index(settings.index, settings, write=True, embedder=embedder):
        pass
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.unsearchable == [] and reader.keyword_search("渡轮几点出发", 3)


def test_search_tables_from_before_stems_are_searched_as_they_are_until_the_next_writer(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    settings = database_settings(tmp_path, cache_dir, database_url, "stems")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES / "commissioning-guide.md"])
        before = index.keyword_search("AC breaker rated", 5)
    recipe = "bm25-words-4/nfkc-casefold-words-unspaced-bigrams-v2"  # as the pagegraph before stems left it
    with psycopg.connect(database_url) as conn:
        conn.execute(f"UPDATE {index_schema(settings.index)}.meta SET value = %s WHERE key = 'search'", (recipe,))
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.unsearchable == [] and reader.keyword_search_state() == "older"
        assert "holds no stems" in caplog.text
        assert reader.keyword_search("AC breaker rated", 5) == before, "searched as it is"
    with open_index(settings.index, settings, write=True, embedder=embedder):
        pass
    with open_index(settings.index, settings, embedder=embedder) as reader:
        assert reader.keyword_search_state() == "current" and reader.keyword_search("AC breaker rated", 5) == before


def test_from_index_copies_a_folder_index_without_re_embedding(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder_settings = Settings(index=tmp_path / "local", cache_dir=cache_dir)
    with open_index(folder_settings.index, folder_settings, write=True, embedder=embedder) as local:
        Ingestor(local).run([SAMPLES])
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", "")  # --database-url sets it for the process; undone below

    def no_embedding(*args: object, **kwargs: object) -> None:
        raise AssertionError("the copy embedded something")

    monkeypatch.setattr(Embedder, "embed", no_embedding)
    target = tmp_path / "team"
    command = ["ingest", "--from-index", str(folder_settings.index), "--index", str(target)]
    first = CliRunner().invoke(app, [*command, "--database-url", database_url])
    assert first.exit_code == 0, first.output
    assert "Copied 3 documents" in " ".join(first.output.split())
    again = CliRunner().invoke(app, [*command, "--database-url", database_url])
    said = " ".join(again.output.split())
    assert again.exit_code == 0 and "Copied 0 documents" in said and "3 were already there" in said
    monkeypatch.undo()

    settings = database_settings(tmp_path, cache_dir, database_url, "team")
    with (
        open_index(folder_settings.index, folder_settings, embedder=embedder) as local,
        open_index(settings.index, settings, embedder=embedder) as shared,
    ):
        assert shared.params == local.params
        assert [d.model_dump() for d in shared.store.documents()] == [d.model_dump() for d in local.store.documents()]
        theirs, ours = list(local.store.iter_chunks()), list(shared.store.iter_chunks())
        assert [c for c, _ in theirs] == [c for c, _ in ours]
        assert np.allclose(np.stack([v for _, v in theirs]), np.stack([v for _, v in ours]))
        assert shared.store.summaries() == local.store.summaries()
        for doc in local.store.documents():
            assert shared.store.sections(doc.id) == local.store.sections(doc.id)
            assert shared.store.tree(doc.id) == local.store.tree(doc.id)
            assert np.allclose(shared.store.section_vectors(doc.id)[1], local.store.section_vectors(doc.id)[1])
        for question in ("What does error E04 mean?", "warranty registration", "Dana ticket number"):
            assert [h.chunk_id for h in HybridRetriever(index=shared).search(question)] == [
                h.chunk_id for h in HybridRetriever(index=local).search(question)
            ]

    # Section vectors embedded by an older pagegraph are taken from the chunks at the next ingest.
    with (
        open_index(folder_settings.index, folder_settings, embedder=embedder) as local,
        open_index(settings.index, settings, write=True, embedder=embedder) as shared,
    ):
        doc = next(d for d in shared.store.documents() if shared.store.sections(d.id))
        ids, vectors = shared.store.section_vectors(doc.id)
        shared.store.set_section_vectors(doc.id, dict(zip(ids, np.flip(vectors, axis=1), strict=True)))
        shared.store.set_section_vector_recipe("embedded summaries")
        Ingestor(shared).run([])
        assert np.allclose(shared.store.section_vectors(doc.id)[1], local.store.section_vectors(doc.id)[1])


READER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from pagegraph.config import Settings
    from pagegraph.store.index import open_index
    from pagegraph.retrievers.hybrid import HybridRetriever

    settings = Settings(index=Path(sys.argv[1]))
    stop, out = Path(sys.argv[2]), open(sys.argv[3], "w")
    while not stop.exists():
        try:
            index = open_index(settings.index, settings)
        except Exception as exc:  # not created yet
            print(json.dumps({"error": str(exc)}), file=out, flush=True)
            time.sleep(0.05)
            continue
        with index:
            seen = {d.name: [d.n_pages, len(index.store.pages(d.id)), len(index.store.chunks(d.id))]
                    for d in index.store.documents()}
            searched = {}
            for chunk_id in index.catalog.ids:
                name = index.catalog.location(chunk_id)[0]
                searched[name] = searched.get(name, 0) + 1
            hits = HybridRetriever(index=index).search("ferry codeword berth dawn")
            found = sorted({index.catalog.location(h.chunk_id)[0] for h in hits})
            print(json.dumps({"seen": seen, "searched": searched, "found": found}), file=out, flush=True)
    """
)


def test_two_ingests_and_a_reader_share_one_database(tmp_path: Path, cache_dir: Path, database_url: str) -> None:
    folder = tmp_path / "together"
    north = write_notes(tmp_path / "north", "north", 8)
    south = write_notes(tmp_path / "south", "south", 8)
    env = cli_env(database_url, cache_dir)
    subprocess.run(  # create the index first, so the reader starts on an empty one
        [str(PAGEGRAPH), "ingest", str(SAMPLES / "commissioning-guide.md"), "--index", str(folder)],
        env=env,
        check=True,
        capture_output=True,
    )
    stop, log = tmp_path / "stop", tmp_path / "reader.jsonl"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(folder), str(stop), str(log)], env=env)
    ingests = [
        subprocess.Popen(
            [str(PAGEGRAPH), "ingest", str(docs), "--index", str(folder)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for docs in (tmp_path / "north", tmp_path / "south")
    ]
    try:
        outputs = [process.communicate(timeout=300)[0] for process in ingests]
        assert [process.returncode for process in ingests] == [0, 0], outputs
        time.sleep(1.0)  # the reader's last rounds see everything
    finally:
        stop.touch()
        reader.wait(timeout=120)
    final = committed(database_url, folder)
    assert sorted(final) == sorted(["commissioning-guide.md", *(p.name for p in north + south)])
    rounds = [json.loads(line) for line in log.read_text().splitlines()]
    observed = [r for r in rounds if "seen" in r]
    assert len(observed) >= 3, rounds[-3:]
    for round_ in observed:
        for name, (n_pages, pages, chunks) in round_["seen"].items():
            assert pages == n_pages and chunks == final[name], (name, round_)  # never half-written
        assert all(chunks == final[name] for name, chunks in round_["searched"].items()), round_
        assert set(round_["found"]) <= set(round_["searched"]), round_
    assert set(observed[-1]["searched"]) == set(final), "the reader ends up searching every document"
    assert len({len(r["searched"]) for r in observed}) > 1, "the reader ran while documents were being committed"


def ingest_process(docs: Path, folder: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(PAGEGRAPH), "ingest", str(docs), "--index", str(folder)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_ingests_of_the_same_files_at_once_share_the_work(tmp_path: Path, cache_dir: Path, database_url: str) -> None:
    """Each file is parsed and embedded by one process: the other finds it claimed, goes on, and comes back to it."""
    folder, docs = tmp_path / "at-once", tmp_path / "docs"
    notes = write_notes(docs, "harbour", 8)
    env = cli_env(database_url, cache_dir)
    processes = [ingest_process(docs, folder, env) for _ in range(2)]
    outputs = [process.communicate(timeout=300)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0], outputs
    final = committed(database_url, folder)
    assert sorted(final) == sorted(p.name for p in notes)
    added = [line for out in outputs for line in out.splitlines() if ": added," in line]
    assert sorted(line.split()[1].rstrip(":") for line in added) == sorted(final), outputs
    embedded = [int(m) for out in outputs for m in re.findall(r"embedding: (\d+) chunks", out)]
    assert sum(embedded) == sum(final.values()), ("no chunk embedded twice", outputs)


def test_a_killed_ingests_files_are_taken_up_by_one_running_beside_it(
    tmp_path: Path, cache_dir: Path, database_url: str
) -> None:
    folder, docs = tmp_path / "beside", tmp_path / "docs"
    notes = write_notes(docs, "harbour", 12)
    env = cli_env(database_url, cache_dir)
    survivor = ingest_process(docs, folder, env)
    kill_ingest_after_a_commit([str(docs), "--index", str(folder)], env, lambda: committed(database_url, folder))
    output = survivor.communicate(timeout=300)[0]
    assert survivor.returncode == 0, output
    final = committed(database_url, folder)
    assert sorted(final) == sorted(p.name for p in notes), "the survivor ingested what the killed one held"


def test_a_killed_ingest_loses_nothing_committed_and_the_next_run_finishes(
    tmp_path: Path, cache_dir: Path, database_url: str
) -> None:
    folder, docs = tmp_path / "killed", tmp_path / "docs"
    notes = write_notes(docs, "harbour", 24)
    env = cli_env(database_url, cache_dir)
    kill_ingest_after_a_commit([str(docs), "--index", str(folder)], env, lambda: committed(database_url, folder))
    wait_for_killed_clients(database_url)
    before = committed(database_url, folder)
    assert 0 < len(before) < len(notes), "killed mid-run, after a commit"
    finished = subprocess.run(
        [str(PAGEGRAPH), "ingest", str(docs), "--index", str(folder)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    after = committed(database_url, folder)
    assert sorted(after) == sorted(p.name for p in notes)
    assert {name: after[name] for name in before} == before, "committed documents were kept as they were"
    assert f"{len(before)} unchanged" in finished.stdout


def test_server_threads_live_in_the_database(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from pagegraph.server.checkpointer import checkpointer, threads_schema

    class Count(TypedDict):
        n: int

    builder = StateGraph(Count)
    builder.add_node("step", lambda state: {"n": state["n"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", database_url)
    monkeypatch.setenv("PAGEGRAPH_INDEX", str(tmp_path / "served"))
    config = {"configurable": {"thread_id": "t-1"}}

    async def run(first: bool) -> int:
        async with checkpointer() as saver:
            graph = builder.compile(checkpointer=saver)
            if first:
                await graph.ainvoke({"n": 1}, config)
            return (await graph.aget_state(config)).values["n"]

    assert asyncio.run(run(True)) == 2
    assert asyncio.run(run(False)) == 2, "a restarted server finds the thread"
    schema = threads_schema(Settings())
    with psycopg.connect(database_url) as conn:
        assert conn.execute(f"SELECT COUNT(*) FROM {schema}.checkpoints").fetchone()[0] > 0


def test_filters_apply_in_sql_when_the_hnsw_search_runs(
    tmp_path: Path, cache_dir: Path, database_url: str, embedder: Embedder
) -> None:
    """A selective filter over a big index: pgvector's HNSW would return fewer than k; the exact scan answers."""
    settings = database_settings(tmp_path, cache_dir, database_url, "filtered")
    with open_index(settings.index, settings, write=True, embedder=embedder) as index:
        Ingestor(index).run([SAMPLES])
        query = embedder.embed(["error code E04"])[0]
        only = RetrievalFilter(documents=["support-call-2024-03-14.vtt"])
        hits = index.nearest(query, 5, only)
        chunks = index.store.chunks_by_id([chunk_id for chunk_id, _ in hits])
        assert hits and {c.source for c in chunks.values()} == {"support-call-2024-03-14.vtt"}
        assert len(hits) == min(5, sum(1 for c in index.store.chunks() if c.source == only.documents[0]))
        assert not index.nearest(query, 5, RetrievalFilter(projects=["nobody"]))
        # the vectors the exact scan reads are kept in their rows, not moved out to TOAST
        storage = index.store.db.rows(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'"
        )
        assert storage == [{"attstorage": "m"}]


def test_db_start_gives_a_database_to_ingest_into_and_ask(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pagegraph db start` → the URL it prints → ingest and ask against it → `pagegraph db stop`."""
    pytest.importorskip("pgserver", reason="pgserver is not installed: pip install -e '.[dev]'")
    from tests.fakes import ScriptedChatModel

    folder = tmp_path / "postgres"
    monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", "")
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("PAGEGRAPH_INGEST_SUMMARIES", "extractive")
    started = CliRunner().invoke(app, ["db", "start", "--folder", str(folder)])
    try:
        assert started.exit_code == 0, started.output
        url = re.search(r"export PAGEGRAPH_DATABASE_URL='?([^'\s]+)'?", started.output).group(1)
        monkeypatch.setenv("PAGEGRAPH_DATABASE_URL", url)
        index = str(tmp_path / "tryout")
        ingested = CliRunner().invoke(app, ["ingest", str(SAMPLES), "--index", index])
        assert ingested.exit_code == 0 and "3 added" in ingested.output, ingested.output
        flat = " ".join(ingested.output.split())
        assert f"Ingested into schema {index_schema(Path(index))} in postgresql://" in flat, flat
        model = ScriptedChatModel.replying("The SB-40 stores up to 10.2 kWh of energy [1].")
        monkeypatch.setattr("pagegraph.llm.factory.get_chat_model", lambda *args, **kwargs: model)
        asked = CliRunner().invoke(
            app, ["ask", "How much energy does the SB-40 store?", "--index", index, "--graph", "basic", "--json"]
        )
        output = json.loads(asked.output)
        assert asked.exit_code == 0 and not output["abstained"], asked.output
        assert "10.2 kWh" in output["answer"] and output["citations"][0]["source"] == "sb40-user-manual.pdf"
    finally:
        stopped = CliRunner().invoke(app, ["db", "stop", "--folder", str(folder)])
    assert stopped.exit_code == 0 and "Stopped the database" in stopped.output, stopped.output
    assert not (folder / "postmaster.pid").exists()
    again = CliRunner().invoke(app, ["db", "stop", "--folder", str(folder)])
    assert again.exit_code == 0 and "No database is running" in again.output
