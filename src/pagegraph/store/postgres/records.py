"""The records of an index in PostgreSQL: the same schema and row mapping as `store.sqlite`, the chunk vectors
in the chunks table itself (HNSW, cosine); a document commits in one transaction with its vectors, words and
centroid."""

from __future__ import annotations

from collections.abc import Collection, Iterator

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from pagegraph.errors import PagegraphError
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
from pagegraph.store.manifest import Manifest
from pagegraph.store.postgres.claims import WorkClaims
from pagegraph.store.postgres.connection import Connections
from pagegraph.store.postgres.search import (
    SEARCH_RECIPE,
    SEARCH_SCHEMA,
    TERM_SCORE,
    PostgresSearch,
    forget_words,
    write_search,
)
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

# The vector column's dimension is filled in when the index is created. Vectors are kept in their rows (pgvector's
# type would move them out to TOAST, as a chunk's row with its text passes 2 kB): an exact search within a few
# documents read them at 8 buffers each. An index from before keeps its rows as they are until rewritten
# (docs/postgresql.md).
_SCHEMA = (
    SCHEMA.format(vector="vector({dimension})", json="JSONB", document_generation=", generation BIGINT NOT NULL")
    + """
CREATE INDEX IF NOT EXISTS chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops);
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
"""
)
_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.position, c.text, c.start_offset, c.end_offset, c.start_page, c.end_page, c.section_id, "
    "c.section_path, c.start_time, c.end_time, c.speakers, c.index_version, c.ocr_confidence, c.table_header"
)
_DOCUMENT_COLUMNS = """d.id, d.path, d.name, d.sha256, d.source_type, d.title, d.n_pages, d.outline_source,
    d.tags::text AS tags, d.ingested_at,
    (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS n_chunks,
    (SELECT COUNT(*) FROM tree_nodes t WHERE t.document_id = d.id) AS n_nodes"""


class PostgresStore(RecordStore):
    """The records of one index, in schema `schema` of the database at `url`, over a small pool of connections
    (`db`) that its search (`search`: dense and keyword search in SQL) shares; writers' claims on files (`claims`)
    hold a connection of their own."""

    def __init__(self, url: str, schema: str, pool_size: int, *, write: bool) -> None:
        self.db = Connections(url, schema, pool_size, write=write)
        self.search = PostgresSearch(self.db)
        self.claims = WorkClaims(url, schema)

    @property
    def url(self) -> str:
        return self.db.url

    @property
    def schema(self) -> str:
        return self.db.schema

    def close(self) -> None:
        self.claims.close()
        self.db.close()

    def claim(self, path: str) -> bool:
        return self.claims.claim(path)

    def release(self, path: str) -> None:
        self.claims.release(path)

    def fill_search(self, dimension: int, *, again: bool = False) -> int:
        """Fill the search tables from the stored chunks (an index from before they existed, or of another recipe;
        `again`: whatever they hold), a document per transaction; returns how many documents were filled. Writers
        take turns."""
        with self.db.locked(f"{self.schema}.search") as conn:
            if self.search.search_ready() and not again:
                return 0
            # another recipe's tables may be shaped otherwise: made anew
            conn.execute(
                "DROP TABLE IF EXISTS chunk_words, chunk_lengths, chunk_terms, document_centroids, word_chunks, "
                "search_totals"
            )
            conn.execute(SEARCH_SCHEMA.format(dimension=dimension))
            conn.commit()
            documents = self.documents()
            for document in documents:
                with conn.transaction():
                    chunks, vectors = self.chunks_with_vectors(document.id, dimension)
                    write_search(conn.cursor(), document, chunks, vectors)
            conn.execute(
                "INSERT INTO meta VALUES ('search', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (SEARCH_RECIPE,),
            )
            conn.commit()
            return len(documents)

    # -- the index itself ----------------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        with self.db.connection() as conn:
            (meta,) = conn.execute("SELECT to_regclass(%s)", (f"{self.schema}.meta",)).fetchone() or (None,)
            if meta is None:
                return None
            row = conn.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
        return Manifest.model_validate_json(row[0]) if row else None

    def create(self, manifest: Manifest) -> Manifest:
        """Create the schema and its tables for `manifest`; the manifest stored first wins when two processes race."""
        with self.db.connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            if manifest.params.bm25_method not in TERM_SCORE:
                raise PagegraphError(
                    f"BM25 method {manifest.params.bm25_method!r} is not available in a database index "
                    f"(it offers {', '.join(TERM_SCORE)})"
                )
            dimension = int(manifest.params.embedding_dimension)
            conn.execute(_SCHEMA.format(dimension=dimension) + SEARCH_SCHEMA.format(dimension=dimension))
            conn.execute(
                "INSERT INTO meta VALUES ('manifest', %s) ON CONFLICT (key) DO NOTHING", (manifest.model_dump_json(),)
            )
            conn.execute("INSERT INTO meta VALUES ('search', %s) ON CONFLICT (key) DO NOTHING", (SEARCH_RECIPE,))
        if (created := self.manifest()) is None:
            raise PagegraphError(f"schema {self.schema} was dropped while this process was creating the index in it")
        return created

    def drop(self) -> None:
        with self.db.connection() as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))

    def generation(self) -> int:
        row = self.db.rows("SELECT value FROM meta WHERE key = 'generation'")
        return int(row[0]["value"]) if row else 0

    # -- documents -----------------------------------------------------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self._documents("", ())

    def document_by_path(self, path: str) -> DocumentRecord | None:
        found = self._documents("WHERE d.path = %s", (path,))
        return found[0] if found else None

    def _documents(self, where: str, args: tuple[object, ...]) -> list[DocumentRecord]:
        rows = self.db.rows(f"SELECT {_DOCUMENT_COLUMNS} FROM documents d {where} ORDER BY d.name, d.path", args)
        return [document_from_row(row) for row in rows]

    def pages(self, document_id: str) -> list[Page]:
        rows = self.db.rows(
            "SELECT number, label, text, error, ocr_confidence FROM pages WHERE document_id = %s ORDER BY number",
            (document_id,),
        )
        return [page_from_row(row) for row in rows]

    def ocr_page_counts(self) -> dict[str, int]:
        rows = self.db.rows(
            "SELECT document_id, COUNT(*) AS n FROM pages WHERE ocr_confidence IS NOT NULL GROUP BY document_id"
        )
        return {row["document_id"]: row["n"] for row in rows}

    def tree(self, document_id: str) -> list[TreeNode]:
        rows = self.db.rows("SELECT * FROM tree_nodes WHERE document_id = %s ORDER BY position", (document_id,))
        return tree_from_rows(rows, self.pages(document_id))

    def section_titles(self, max_level: int, documents: Collection[str] | None = None) -> dict[str, list[str]]:
        titles: dict[str, list[str]] = {}
        where, args = ("AND document_id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
        rows = self.db.rows(
            f"""SELECT document_id, title FROM tree_nodes WHERE level BETWEEN 1 AND %s {where}
                ORDER BY document_id, position""",
            (max_level, *args),
        )
        for row in rows:
            titles.setdefault(row["document_id"], []).append(row["title"])
        return titles

    def iter_chunks(self, document_id: str | None = None) -> Iterator[tuple[Chunk, np.ndarray]]:
        """Chunks in document and position order, each with its stored vector (streamed with a server cursor)."""
        where, args = ("WHERE c.document_id = %s", (document_id,)) if document_id else ("", ())
        documents = {doc.id: doc for doc in self.documents()}
        with self.db.connection() as conn:
            with conn.cursor(name="pagegraph_chunks", row_factory=dict_row, binary=True) as cur:
                cur.itersize = 2000
                cur.execute(
                    f"SELECT {_CHUNK_COLUMNS}, c.embedding FROM chunks c {where} ORDER BY c.document_id, c.position",
                    args,
                )
                for row in cur:
                    yield chunk_from_row(row, documents[row["document_id"]]), row["embedding"].to_numpy()

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        rows = self.db.rows(f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.id = ANY(%s)", (list(chunk_ids),))
        documents = {
            doc.id: doc
            for doc in self._documents("WHERE d.id = ANY(%s)", (list({row["document_id"] for row in rows}),))
        }
        return {row["id"]: chunk_from_row(row, documents[row["document_id"]]) for row in rows}

    def chunk_count(self) -> int:
        return int(self.db.rows("SELECT COUNT(*) AS n FROM chunks")[0]["n"])

    def chunk_catalog(self, documents: Collection[str] | None = None) -> list[tuple[str, str, str, int, int, int, str]]:
        """Every chunk's catalog row (of the `documents` given, when given), by document id (compared as code points,
        as SQLite and Python do) and position."""
        where, args = ("WHERE d.id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
        rows = self.db.rows(
            f"""SELECT c.id, c.document_id, d.name, c.position, c.start_page, c.end_page, d.tags::text AS tags
               FROM chunks c JOIN documents d ON d.id = c.document_id {where}
               ORDER BY c.document_id COLLATE "C", c.position""",
            args,
        )
        return [tuple(row.values()) for row in rows]

    def document_generations(self) -> dict[str, int]:
        """Each document's id with the generation that committed it."""
        return {row["id"]: row["generation"] for row in self.db.rows("SELECT id, generation FROM documents")}

    # -- writes --------------------------------------------------------------------------------------------------
    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Write a whole document, replacing whatever version of its path is stored, in one transaction; False when
        another process committed this very content meanwhile (nothing is written then). Writers of one path take
        turns; `replaces` is what this process found when it started."""
        record = document.record
        with self.db.connection() as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (record.path,))
            stored = cur.execute("SELECT id, sha256 FROM documents WHERE path = %s", (record.path,)).fetchone()
            if stored is not None and stored[1] == record.sha256 and stored[0] != replaces:
                return False
            generation = self._bump_generation(cur)
            gone = (record.path, replaces or record.id)
            forget_words(cur, "d.path = %s OR d.id = %s", gone)
            cur.execute("DELETE FROM documents WHERE path = %s OR id = %s", gone)
            cur.execute(
                "INSERT INTO documents VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (*document_row(record), generation),
            )
            cur.executemany("INSERT INTO pages VALUES (%s, %s, %s, %s, %s, %s)", page_rows(record.id, document.pages))
            cur.executemany(
                "INSERT INTO tree_nodes VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                node_rows(record.id, document.nodes),
            )
            cur.executemany(
                "INSERT INTO chunks VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                chunk_rows(record.id, document.chunks, [v.astype(np.float32) for v in document.embeddings]),
            )
            write_search(cur, record, document.chunks, np.asarray(document.embeddings, dtype=np.float32))
            if document.summary is not None:
                cur.execute("INSERT INTO summaries VALUES (%s, %s)", (record.id, document.summary.model_dump_json()))
            if document.sections is not None:
                self._write_sections(cur, record.id, document.sections)
            cur.execute("DELETE FROM failures WHERE path = %s", (record.path,))
        return True

    def set_sections(self, document_id: str, sections: SectionSummaries) -> None:
        with self.db.connection() as conn, conn.cursor() as cur:
            cur.execute("DELETE FROM node_summaries WHERE document_id = %s", (document_id,))
            self._write_sections(cur, document_id, sections)

    @staticmethod
    def _write_sections(cur: psycopg.Cursor, document_id: str, sections: SectionSummaries) -> None:
        rows = [
            (document_id, node_id, position, record, vector.astype(np.float32))
            for document_id, node_id, position, record, vector in section_rows(document_id, sections)
        ]
        cur.executemany("INSERT INTO node_summaries VALUES (%s, %s, %s, %s, %s)", rows)
        cur.executemany(
            "INSERT INTO summary_cache VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET summary = EXCLUDED.summary",
            list(sections.new_cache_entries.items()),
        )

    def refine_section(self, document_id: str, node: NodeSummary, cache_entry: tuple[str, str] | None) -> bool:
        with self.db.connection() as conn:
            updated = conn.execute(
                "UPDATE node_summaries SET record = %s WHERE document_id = %s AND node_id = %s",
                (node.model_dump_json(), document_id, node.node_id),
            ).rowcount
            if updated and cache_entry is not None:
                conn.execute(
                    "INSERT INTO summary_cache VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET summary = EXCLUDED.summary",
                    cache_entry,
                )
        return bool(updated)

    def set_summary(self, document_id: str, summary: StoredSummary) -> bool:
        with self.db.connection() as conn:
            written = conn.execute(
                """INSERT INTO summaries SELECT id, %s FROM documents WHERE id = %s
                   ON CONFLICT (document_id) DO UPDATE SET summary = EXCLUDED.summary""",
                (summary.model_dump_json(), document_id),
            ).rowcount
        return bool(written)

    def sections(self, document_id: str) -> list[NodeSummary]:
        rows = self.db.rows(
            "SELECT record FROM node_summaries WHERE document_id = %s ORDER BY position", (document_id,)
        )
        return [NodeSummary.model_validate_json(row["record"]) for row in rows]

    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]:
        rows = self.db.rows(
            "SELECT node_id, vector FROM node_summaries WHERE document_id = %s ORDER BY position", (document_id,)
        )
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r["node_id"] for r in rows], np.stack([r["vector"].to_numpy() for r in rows])

    def documents_with_sections(self) -> set[str]:
        return {row["document_id"] for row in self.db.rows("SELECT DISTINCT document_id FROM node_summaries")}

    def cached_section_summary(self, key: str) -> str | None:
        rows = self.db.rows("SELECT summary FROM summary_cache WHERE key = %s", (key,))
        return rows[0]["summary"] if rows else None

    def summary_cache(self) -> dict[str, str]:
        return {row["key"]: row["summary"] for row in self.db.rows("SELECT key, summary FROM summary_cache")}

    def add_to_summary_cache(self, entries: dict[str, str]) -> None:
        with self.db.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO summary_cache VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", list(entries.items())
            )

    def summaries(self) -> dict[str, StoredSummary]:
        rows = self.db.rows("SELECT document_id, summary FROM summaries")
        return {row["document_id"]: StoredSummary.model_validate_json(row["summary"]) for row in rows}

    def remove_document(self, document_id: str) -> None:
        with self.db.connection() as conn, conn.cursor() as cur:
            self._bump_generation(cur)
            forget_words(cur, "d.id = %s", (document_id,))
            cur.execute("DELETE FROM documents WHERE id = %s", (document_id,))

    def update_tags(self, document_id: str, tags: DocumentTags) -> None:
        with self.db.connection() as conn, conn.cursor() as cur:
            # committed at the next generation, so that readers' next snapshots read its chunks' tags again
            generation = self._bump_generation(cur)
            cur.execute(
                "UPDATE documents SET tags = %s, generation = %s WHERE id = %s",
                (tags.model_dump_json(), generation, document_id),
            )

    def section_vector_recipe(self) -> str | None:
        rows = self.db.rows("SELECT value FROM meta WHERE key = 'section_vectors'")
        return rows[0]["value"] if rows else None

    def set_section_vectors(self, document_id: str, vectors: dict[str, np.ndarray]) -> None:
        with self.db.connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE node_summaries SET vector = %s WHERE document_id = %s AND node_id = %s",
                [(vector.astype(np.float32), document_id, node_id) for node_id, vector in vectors.items()],
            )

    def set_section_vector_recipe(self, recipe: str) -> None:
        with self.db.connection() as conn:
            conn.execute(
                "INSERT INTO meta VALUES ('section_vectors', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (recipe,),
            )

    def last_recovery(self) -> tuple[str, str] | None:
        """Never: a database index has no derived vectors to recover (each document commits with its vectors)."""
        return None

    def record_failure(self, path: str, name: str, reason: str) -> None:
        with self.db.connection() as conn:
            conn.execute(
                """INSERT INTO failures VALUES (%s, %s, %s, %s) ON CONFLICT (path) DO UPDATE
                   SET name = EXCLUDED.name, reason = EXCLUDED.reason, failed_at = EXCLUDED.failed_at""",
                (path, name, reason, now_iso()),
            )

    def failures(self) -> list[tuple[str, str, str]]:
        return [(r["path"], r["name"], r["reason"]) for r in self.db.rows("SELECT * FROM failures ORDER BY name")]

    def forget_failure(self, path: str) -> None:
        with self.db.connection() as conn:
            conn.execute("DELETE FROM failures WHERE path = %s", (path,))

    def save_eval_run(self, run: EvalRun) -> None:
        with self.db.connection() as conn:
            conn.execute(
                """INSERT INTO eval_runs VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE
                   SET config = EXCLUDED.config, summary = EXCLUDED.summary, per_question = EXCLUDED.per_question""",
                eval_run_row(run),
            )

    def eval_runs(self) -> list[EvalRun]:
        rows = self.db.rows("SELECT * FROM eval_runs ORDER BY created_at")
        return [eval_run_from_row(row) for row in rows]

    @staticmethod
    def _bump_generation(cur: psycopg.Cursor) -> int:
        """The next generation; its row stays locked until the transaction ends, so commits take turns and a
        snapshot at generation G holds exactly the documents committed at G or before."""
        (generation,) = cur.execute(
            """INSERT INTO meta VALUES ('generation', '1')
               ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value"""
        ).fetchone() or ("",)  # RETURNING gives the row it wrote
        return int(generation)
