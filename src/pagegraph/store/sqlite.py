"""`store.sqlite`: the source of truth of an index folder (`SqliteStore`, a `RecordStore`). Documents, pages, tree
nodes and chunks (with their vectors) are written in one transaction per document; the Chroma and BM25 indexes are
derived from it and can be rebuilt from it alone."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path

import numpy as np

from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import (
    Chunk,
    DocumentRecord,
    DocumentTags,
    NodeSummary,
    Page,
    TreeNode,
    now_iso,
)
from pagegraph.state.evaluation import EvalRun
from pagegraph.store.records import (
    SCHEMA,
    DocumentWrite,
    RecordStore,
    SectionSummaries,
    chunk_from_row,
    chunk_rows,
    document_from_row,
    document_row,
    eval_run_from_row,
    eval_run_row,
    node_rows,
    page_from_row,
    page_rows,
    section_rows,
    tree_from_rows,
)

STORE_FILE = "store.sqlite"
_SQL_BATCH = 900  # SQLite's bound-parameter limit is 999 on older builds

_SCHEMA = (
    SCHEMA.format(vector="BLOB", json="TEXT", document_generation="")
    + """
-- Documents whose vectors may exist in Chroma without a committed row here (mid-write or replaced); removed on open.
CREATE TABLE IF NOT EXISTS vector_journal (document_id TEXT PRIMARY KEY);
"""
)


# Columns added since the first release, at the end of their tables: a writer adds them to an older store; a reader
# of one that was not written since reads them as NULL.
_ADDED_COLUMNS = {"pages": ["ocr_confidence REAL"], "chunks": ["ocr_confidence REAL", "table_header TEXT"]}

# How long a write waits for another process's transaction (an ingest beside `pagegraph summarize`).
BUSY_TIMEOUT_S = 60.0


def _read_only_mode(folder: Path) -> str:
    """A WAL store is read through its -wal and -shm files, which a reader must be able to create. In a folder this
    process may not write, with no writer at work (no -wal file), the store is opened as immutable instead: SQLite
    then reads it without those files and without locks."""
    if os.access(folder, os.W_OK) or (folder / f"{STORE_FILE}-wal").exists():
        return "mode=ro"
    return "mode=ro&immutable=1"


class SqliteStore(RecordStore):
    """The records of an index folder in its store.sqlite; `read_only` opens it without writing anything."""

    def __init__(self, folder: Path, read_only: bool = False) -> None:
        path = folder / STORE_FILE
        if read_only:
            self._db = sqlite3.connect(f"file:{path}?{_read_only_mode(folder)}", uri=True, check_same_thread=False)
        else:
            self._db = sqlite3.connect(path, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.row_factory = sqlite3.Row
        self._columns = {table: self._table_columns(table) for table in _ADDED_COLUMNS}
        if not read_only:
            with self._db:
                for table, columns in _ADDED_COLUMNS.items():
                    for column in columns:
                        if column.split()[0] not in self._columns[table]:
                            self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
            self._columns = {table: self._table_columns(table) for table in _ADDED_COLUMNS}

    def _table_columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def _added(self, table: str, column: str) -> str:
        """`column` of `table` in a SELECT, NULL where this store predates it."""
        return column if column in self._columns[table] else f"NULL AS {column}"

    def close(self) -> None:
        self._db.close()

    # -- documents ---------------------------------------------------------------------------------------------
    def generation(self) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row["value"]) if row else 0

    def documents(self) -> list[DocumentRecord]:
        return self._documents("", ())

    def document_by_path(self, path: str) -> DocumentRecord | None:
        found = self._documents("WHERE d.path = ?", (path,))
        return found[0] if found else None

    def _documents(self, where: str, args: tuple[str, ...]) -> list[DocumentRecord]:
        rows = self._db.execute(
            f"""SELECT d.*, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS n_chunks,
                       (SELECT COUNT(*) FROM tree_nodes t WHERE t.document_id = d.id) AS n_nodes
                FROM documents d {where} ORDER BY d.name, d.path""",
            args,
        ).fetchall()
        return [document_from_row(row) for row in rows]

    def pages(self, document_id: str) -> list[Page]:
        rows = self._db.execute(
            f"SELECT number, label, text, error, {self._added('pages', 'ocr_confidence')} FROM pages "
            "WHERE document_id = ? ORDER BY number",
            (document_id,),
        ).fetchall()
        return [page_from_row(row) for row in rows]

    def ocr_page_counts(self) -> dict[str, int]:
        if "ocr_confidence" not in self._columns["pages"]:
            return {}
        rows = self._db.execute(
            "SELECT document_id, COUNT(*) FROM pages WHERE ocr_confidence IS NOT NULL GROUP BY document_id"
        )
        return {row[0]: row[1] for row in rows}

    def tree(self, document_id: str) -> list[TreeNode]:
        rows = self._db.execute(
            "SELECT * FROM tree_nodes WHERE document_id = ? ORDER BY position", (document_id,)
        ).fetchall()
        return tree_from_rows(rows, self.pages(document_id))

    def section_titles(self, max_level: int, documents: Collection[str] | None = None) -> dict[str, list[str]]:
        titles: dict[str, list[str]] = {}
        rows = self._db.execute(
            "SELECT document_id, title FROM tree_nodes WHERE level BETWEEN 1 AND ? ORDER BY document_id, position",
            (max_level,),
        )
        for document_id, title in rows:
            if documents is None or document_id in documents:
                titles.setdefault(document_id, []).append(title)
        return titles

    def iter_chunks(self, document_id: str | None = None) -> Iterator[tuple[Chunk, np.ndarray]]:
        where, args = ("WHERE document_id = ?", (document_id,)) if document_id else ("", ())
        documents = {doc.id: doc for doc in self.documents()}
        added = ", ".join(self._added("chunks", c) for c in ("ocr_confidence", "table_header"))
        columns = f"id, document_id, position, text, start_offset, end_offset, start_page, end_page, section_id, section_path, start_time, end_time, speakers, index_version, embedding, {added}"
        for row in self._db.execute(f"SELECT {columns} FROM chunks {where} ORDER BY document_id, position", args):
            yield chunk_from_row(row, documents[row["document_id"]]), np.frombuffer(row["embedding"], dtype=np.float32)

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        columns = (
            "id, document_id, position, text, start_offset, end_offset, start_page, end_page, section_id, "
            f"section_path, start_time, end_time, speakers, index_version, {self._added('chunks', 'ocr_confidence')}, "
            f"{self._added('chunks', 'table_header')}"
        )
        documents: dict[str, DocumentRecord] = {}
        found: dict[str, Chunk] = {}
        for start in range(0, len(chunk_ids), _SQL_BATCH):
            part = chunk_ids[start : start + _SQL_BATCH]
            marks = ",".join("?" * len(part))
            for row in self._db.execute(f"SELECT {columns} FROM chunks WHERE id IN ({marks})", part):
                if row["document_id"] not in documents:
                    documents[row["document_id"]] = self._documents("WHERE d.id = ?", (row["document_id"],))[0]
                found[row["id"]] = chunk_from_row(row, documents[row["document_id"]])
        return found

    def chunk_count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def chunk_ids(self) -> list[str]:
        return [row["id"] for row in self._db.execute("SELECT id FROM chunks")]

    def chunk_catalog(self) -> list[tuple[str, str, str, int, int, int, str]]:
        return self._db.execute(
            """SELECT c.id, c.document_id, d.name, c.position, c.start_page, c.end_page, d.tags
               FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.document_id, c.position"""
        ).fetchall()

    # -- writes --------------------------------------------------------------------------------------------------
    def journal(self) -> list[str]:
        return [row["document_id"] for row in self._db.execute("SELECT document_id FROM vector_journal")]

    def add_to_journal(self, document_id: str) -> None:
        with self._db:
            self._db.execute("INSERT OR IGNORE INTO vector_journal VALUES (?)", (document_id,))

    def clear_journal(self, document_ids: list[str]) -> None:
        with self._db:
            self._db.executemany("DELETE FROM vector_journal WHERE document_id = ?", [(i,) for i in document_ids])

    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Write a whole document (replacing an older version of it) in one transaction, or nothing; the folder has
        one writer, so never False."""
        record = document.record
        with self._db:
            if replaces:
                self._db.execute("DELETE FROM documents WHERE id = ?", (replaces,))
                self._db.execute("INSERT OR IGNORE INTO vector_journal VALUES (?)", (replaces,))
            self._db.execute("INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", document_row(record))
            self._db.executemany("INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?)", page_rows(record.id, document.pages))
            self._db.executemany(
                "INSERT INTO tree_nodes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", node_rows(record.id, document.nodes)
            )
            self._db.executemany(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                chunk_rows(record.id, document.chunks, [_blob(vector) for vector in document.embeddings]),
            )
            if document.summary is not None:
                self._db.execute("INSERT INTO summaries VALUES (?, ?)", (record.id, document.summary.model_dump_json()))
            if document.sections is not None:
                self._write_sections(record.id, document.sections)
            self._db.execute("DELETE FROM vector_journal WHERE document_id = ?", (record.id,))
            self._db.execute("DELETE FROM failures WHERE path = ?", (record.path,))
            self._bump_generation()
        return True

    def set_sections(self, document_id: str, sections: SectionSummaries) -> None:
        with self._db:
            self._db.execute("DELETE FROM node_summaries WHERE document_id = ?", (document_id,))
            self._write_sections(document_id, sections)

    def _write_sections(self, document_id: str, sections: SectionSummaries) -> None:
        self._db.executemany(
            "INSERT INTO node_summaries VALUES (?, ?, ?, ?, ?)",
            [
                (document_id, node_id, position, record, _blob(vector))
                for document_id, node_id, position, record, vector in section_rows(document_id, sections)
            ],
        )
        self._db.executemany("INSERT OR REPLACE INTO summary_cache VALUES (?, ?)", sections.new_cache_entries.items())

    def refine_section(self, document_id: str, node: NodeSummary, cache_entry: tuple[str, str] | None) -> bool:
        with self._db:
            updated = self._db.execute(
                "UPDATE node_summaries SET record = ? WHERE document_id = ? AND node_id = ?",
                (node.model_dump_json(), document_id, node.node_id),
            ).rowcount
            if updated and cache_entry is not None:
                self._db.execute("INSERT OR REPLACE INTO summary_cache VALUES (?, ?)", cache_entry)
        return bool(updated)

    def set_summary(self, document_id: str, summary: StoredSummary) -> bool:
        with self._db:
            written = self._db.execute(
                "INSERT OR REPLACE INTO summaries SELECT id, ? FROM documents WHERE id = ?",
                (summary.model_dump_json(), document_id),
            ).rowcount
        return bool(written)

    def sections(self, document_id: str) -> list[NodeSummary]:
        rows = self._db.execute(
            "SELECT record FROM node_summaries WHERE document_id = ? ORDER BY position", (document_id,)
        ).fetchall()
        return [NodeSummary.model_validate_json(row["record"]) for row in rows]

    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]:
        rows = self._db.execute(
            "SELECT node_id, vector FROM node_summaries WHERE document_id = ? ORDER BY position", (document_id,)
        ).fetchall()
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r["node_id"] for r in rows], np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows])

    def documents_with_sections(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT DISTINCT document_id FROM node_summaries")}

    def cached_section_summary(self, key: str) -> str | None:
        row = self._db.execute("SELECT summary FROM summary_cache WHERE key = ?", (key,)).fetchone()
        return row["summary"] if row else None

    def summary_cache(self) -> dict[str, str]:
        return {row["key"]: row["summary"] for row in self._db.execute("SELECT key, summary FROM summary_cache")}

    def add_to_summary_cache(self, entries: dict[str, str]) -> None:
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO summary_cache VALUES (?, ?)", entries.items())

    def summaries(self) -> dict[str, StoredSummary]:
        """Summaries by document id; empty for an index written before summaries existed and opened read-only."""
        try:
            rows = self._db.execute("SELECT document_id, summary FROM summaries").fetchall()
        except sqlite3.OperationalError:
            return {}
        return {row["document_id"]: StoredSummary.model_validate_json(row["summary"]) for row in rows}

    def remove_document(self, document_id: str) -> None:
        with self._db:
            self._db.execute("DELETE FROM documents WHERE id = ?", (document_id,))
            self._db.execute("INSERT OR IGNORE INTO vector_journal VALUES (?)", (document_id,))
            self._bump_generation()

    def update_tags(self, document_id: str, tags: DocumentTags) -> None:
        with self._db:
            self._db.execute("UPDATE documents SET tags = ? WHERE id = ?", (tags.model_dump_json(), document_id))
            self._bump_generation()

    def record_recovery(self, at: str, what: str) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO meta VALUES ('last_recovery', ?)", (json.dumps({"at": at, "what": what}),)
            )

    def section_vector_recipe(self) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'section_vectors'").fetchone()
        return row["value"] if row else None

    def set_section_vectors(self, document_id: str, vectors: dict[str, np.ndarray]) -> None:
        with self._db:
            self._db.executemany(
                "UPDATE node_summaries SET vector = ? WHERE document_id = ? AND node_id = ?",
                [(_blob(vector), document_id, node_id) for node_id, vector in vectors.items()],
            )

    def set_section_vector_recipe(self, recipe: str) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('section_vectors', ?)", (recipe,))

    def last_recovery(self) -> tuple[str, str] | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'last_recovery'").fetchone()
        if row is None:
            return None
        recovery = json.loads(row["value"])
        return recovery["at"], recovery["what"]

    def record_failure(self, path: str, name: str, reason: str) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?)", (path, name, reason, now_iso()))

    def failures(self) -> list[tuple[str, str, str]]:
        rows = self._db.execute("SELECT path, name, reason FROM failures ORDER BY name").fetchall()
        return [(r["path"], r["name"], r["reason"]) for r in rows]

    def forget_failure(self, path: str) -> None:
        with self._db:
            self._db.execute("DELETE FROM failures WHERE path = ?", (path,))

    def save_eval_run(self, run: EvalRun) -> None:
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO eval_runs VALUES (?, ?, ?, ?, ?, ?)", eval_run_row(run))

    def eval_runs(self) -> list[EvalRun]:
        rows = self._db.execute("SELECT * FROM eval_runs ORDER BY created_at").fetchall()
        return [eval_run_from_row(row) for row in rows]

    def _bump_generation(self) -> None:
        self._db.execute(
            "INSERT INTO meta VALUES ('generation', '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1"
        )


def _blob(vector: np.ndarray) -> bytes:
    return vector.astype(np.float32).tobytes()
