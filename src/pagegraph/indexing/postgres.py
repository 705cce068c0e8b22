"""The index in PostgreSQL with pgvector (PAGEGRAPH_DATABASE_URL): the same records as `store.sqlite`, one schema per
named index, the chunk vectors in the chunks table itself (HNSW, cosine). Keyword search lives in the database too:
each chunk's BM25 words with their counts (one row per word and chunk, scored in SQL with bm25s's formulas) and each
document's centroid. A document commits in one transaction with its vectors, words and centroid, so there is nothing
derived to rebuild, here or on a reader's machine; many processes may write and read at once."""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pagegraph.errors import PagegraphError
from pagegraph.indexing.bm25 import TOKENIZER, word_counts
from pagegraph.indexing.chunking import document_label, search_text
from pagegraph.indexing.manifest import Manifest
from pagegraph.indexing.profiles import chunk_centroids
from pagegraph.indexing.records import (
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
from pagegraph.state.answering import StoredSummary
from pagegraph.state.documents import (
    CONFIDENTIALITY_LEVELS,
    Chunk,
    DocumentRecord,
    DocumentTags,
    NodeSummary,
    Page,
    TreeNode,
    now_iso,
)
from pagegraph.state.evaluation import EvalRun
from pagegraph.state.filters import RetrievalFilter

SCHEMA_PREFIX = "pagegraph_"
_CONNECT_TIMEOUT_S = 10
# A connection taken from the pool is checked (a round trip) only when it has sat unused this long: a question's
# search takes one some twenty times in a row, and one given back a moment ago was working then.
_CHECK_AFTER_IDLE_S = 2.0
# HNSW candidates a filtered search looks at (pgvector's ceiling); a filter that still leaves fewer than k is answered
# by an exact scan of the rows it allows.
_FILTERED_EF_SEARCH = 1000
# Memory for summing a keyword query's postings per chunk (hundreds of thousands at 200k chunks), set on every pooled
# connection: PostgreSQL's 4 MB default sends the sum to disk (unfiltered BM25 at 200k chunks, p50/p95: 206/688 ms
# with 4 MB, 168/378 ms with 64 MB).
_KEYWORD_WORK_MEM = "64MB"

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
# Keyword search and routing: a posting per BM25 word and chunk, with the chunk's length beside its count so that
# scoring reads the primary key's index alone, keyed by word, then document: a search within named documents (a
# routed question's) reads only their postings, not each word's whole list; every chunk's length and words with
# their counts in one row (the scores of given chunks, e.g. the dense hits, read those rows alone); how many chunks
# hold each word, and how many chunks and words there are in all (kept by every commit and removal: counting costs
# in proportion to the library); each document's centroid.
_SEARCH_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunk_words (
    word TEXT NOT NULL, chunk_id TEXT NOT NULL REFERENCES chunks(id) ON DELETE CASCADE, count INTEGER NOT NULL,
    length INTEGER NOT NULL, document_id TEXT NOT NULL,
    PRIMARY KEY (word, document_id, chunk_id) INCLUDE (count, length));
CREATE INDEX IF NOT EXISTS chunk_words_chunk ON chunk_words (chunk_id);
CREATE TABLE IF NOT EXISTS word_chunks (word TEXT PRIMARY KEY, chunks INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS chunk_terms (
    chunk_id TEXT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, length INTEGER NOT NULL, words TEXT[] NOT NULL,
    counts INTEGER[] NOT NULL);
CREATE TABLE IF NOT EXISTS search_totals (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), chunks BIGINT NOT NULL, words BIGINT NOT NULL);
INSERT INTO search_totals VALUES (TRUE, 0, 0) ON CONFLICT DO NOTHING;
CREATE TABLE IF NOT EXISTS document_centroids (
    document_id TEXT PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE, centroid vector({dimension}) NOT NULL);
"""
# meta 'search': what the search tables hold; another value (or none: an index from before they existed) means a
# writer fills them again from the stored chunks before it commits anything.
SEARCH_RECIPE = f"bm25-words-4/{TOKENIZER}"
# The documents holding a word, as a loose index scan: from each document to the next one's first posting.
_DOCUMENTS_HOLDING = """WITH RECURSIVE holding(document_id) AS (
    (SELECT document_id FROM chunk_words WHERE word = %(word)s ORDER BY document_id LIMIT 1)
    UNION ALL
    SELECT (SELECT w.document_id FROM chunk_words w WHERE w.word = %(word)s AND w.document_id > h.document_id
            ORDER BY w.document_id LIMIT 1)
    FROM holding h WHERE h.document_id IS NOT NULL)
SELECT document_id FROM holding WHERE document_id IS NOT NULL"""
# Adds a row's chunks to a word's count (rows in word order: concurrent writers lock the counts in one order).
_ADD_WORD_CHUNKS = "ON CONFLICT (word) DO UPDATE SET chunks = word_chunks.chunks + EXCLUDED.chunks"
# The term-frequency part of each BM25 variant's score (bm25s's formulas), over a posting `p`; in float8, as bm25s
# computes it (PostgreSQL would otherwise work in numeric, which made unfiltered keyword search ~3x slower).
_TERM_SCORE = {
    "lucene": "p.count / (%(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s) + p.count)",
    "robertson": "p.count / (%(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s) + p.count)",
    "atire": "p.count * (%(k1)s + 1) / (p.count + %(k1)s * (1 - %(b)s + %(b)s * p.length / %(average)s))",
}


@dataclass(frozen=True)
class KeywordScoring:
    """How BM25 scores a posting: the variant, its parameters and the index's average chunk length in words."""

    method: str
    k1: float
    b: float
    average_length: float

    def term_score(self) -> str:
        """The SQL for a posting `p`'s term-frequency part."""
        return _TERM_SCORE[self.method] % {
            "k1": f"{float(self.k1)!r}::float8",
            "b": f"{float(self.b)!r}::float8",
            "average": f"{float(self.average_length)!r}::float8",
        }


_CHUNK_COLUMNS = (
    "c.id, c.document_id, c.position, c.text, c.start_offset, c.end_offset, c.start_page, c.end_page, c.section_id, "
    "c.section_path, c.start_time, c.end_time, c.speakers, c.index_version, c.ocr_confidence, c.table_header"
)
_DOCUMENT_COLUMNS = """d.id, d.path, d.name, d.sha256, d.source_type, d.title, d.n_pages, d.outline_source,
    d.tags::text AS tags, d.ingested_at,
    (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) AS n_chunks,
    (SELECT COUNT(*) FROM tree_nodes t WHERE t.document_id = d.id) AS n_nodes"""


def index_schema(folder: Path) -> str:
    """The schema that holds the index named by the --index folder's name (the folder keeps local caches only)."""
    name = re.sub(r"[^a-z0-9_]+", "_", folder.name.lower()).strip("_") or "index"
    if len(name) > 40:  # identifiers end at 63 bytes; long names keep a digest of the rest
        name = f"{name[:31]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return SCHEMA_PREFIX + name


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _reason(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


class PostgresStore(RecordStore):
    """The records of one index, in schema `schema` of the database at `url`; a small pool of connections."""

    def __init__(self, url: str, schema: str, pool_size: int, *, write: bool) -> None:
        self.url, self.schema = url, schema
        self._write = write
        self._vector_ready = self._prepare_database()
        self._returned: weakref.WeakKeyDictionary[psycopg.Connection, float] = weakref.WeakKeyDictionary()
        self._ef_search: weakref.WeakKeyDictionary[psycopg.Connection, int] = weakref.WeakKeyDictionary()
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"connect_timeout": _CONNECT_TIMEOUT_S, "options": f"-c search_path={schema},public"},
            configure=self._configure,
            check=self._check_when_idle,
            reset=self._note_returned,
            open=False,
            name="pagegraph",
        )
        try:
            self._pool.open(wait=True, timeout=_CONNECT_TIMEOUT_S * 2)
        except PoolTimeout as exc:
            raise PagegraphError(f"the database at {redacted(url)} is not reachable: {_reason(exc)}") from exc
        self._pinned = threading.local()
        self._claims: psycopg.Connection | None = None  # holds this process's claims (session advisory locks)
        self._claimed: set[str] = set()
        self._claims_lock = threading.Lock()

    def _prepare_database(self) -> bool:
        """Whether pgvector is installed; a writer installs it when it may. Fails clearly when the server is down."""
        try:
            with psycopg.connect(self.url, connect_timeout=_CONNECT_TIMEOUT_S, autocommit=True) as conn:
                if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
                    return True
                if not self._write:
                    return False
                try:
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                except psycopg.Error as exc:
                    raise PagegraphError(
                        f"the database at {redacted(self.url)} lacks the pgvector extension and this user may not "
                        f"install it ({_reason(exc)}): have an administrator run `CREATE EXTENSION vector;` in it "
                        "(pgvector 0.5 or later; managed services list it as `vector`)"
                    ) from exc
                return True
        except psycopg.OperationalError as exc:
            raise PagegraphError(f"cannot connect to the database at {redacted(self.url)}: {_reason(exc)}") from exc

    def _note_returned(self, conn: psycopg.Connection) -> None:
        conn.autocommit = False  # as `_connection` found it
        self._returned[conn] = time.monotonic()

    def _check_when_idle(self, conn: psycopg.Connection) -> None:
        if time.monotonic() - self._returned.get(conn, -math.inf) > _CHECK_AFTER_IDLE_S:
            ConnectionPool.check_connection(conn)

    def _configure(self, conn: psycopg.Connection) -> None:
        if self._vector_ready:
            register_vector(conn)
        conn.execute(f"SET work_mem = '{_KEYWORD_WORK_MEM}'")
        conn.commit()

    @contextmanager
    def _connection(self, *, reading: bool = False) -> Iterator[psycopg.Connection]:
        """A pooled connection (committed when the block ends), or the one `snapshot` pinned to this thread. For
        `reading`, each statement stands alone: run as it comes (autocommit), without a transaction's BEGIN and
        COMMIT, two more round trips to the server per read."""
        pinned = getattr(self._pinned, "conn", None)
        if pinned is not None:
            yield pinned
            return
        with self._pool.connection() as conn:
            conn.autocommit = reading
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside the block on this thread see one consistent state of the database."""
        with self._pool.connection() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            self._pinned.conn = conn
            try:
                yield
            finally:
                self._pinned.conn = None

    def _rows(self, query: str, args: tuple | list | dict = ()) -> list[dict]:
        with self._connection(reading=True) as conn, conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(query, args).fetchall()

    def close(self) -> None:
        if self._claims is not None:
            self._claims.close()  # the database lets go of every claim it held
        self._pool.close()

    # -- writers' turns: a claim is an advisory lock held by a connection of its own, so that a process that dies
    # (killed, or its machine lost) lets go of its claims with its connection, and another picks the file up.
    def claim(self, path: str) -> bool:
        with self._claims_lock:
            if path in self._claimed:
                return True
            if self._claims is None:
                self._claims = psycopg.connect(self.url, connect_timeout=_CONNECT_TIMEOUT_S, autocommit=True)
            claimed = self._claims.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 1))", (f"{self.schema}:{path}",)
            ).fetchone()[0]
            if claimed:
                self._claimed.add(path)
            return bool(claimed)

    def release(self, path: str) -> None:
        with self._claims_lock:
            if path in self._claimed:
                self._claimed.discard(path)
                self._claims.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 1))", (f"{self.schema}:{path}",))

    # -- the index itself ----------------------------------------------------------------------------------------
    def manifest(self) -> Manifest | None:
        with self._connection() as conn:
            if conn.execute("SELECT to_regclass(%s)", (f"{self.schema}.meta",)).fetchone()[0] is None:
                return None
            row = conn.execute("SELECT value FROM meta WHERE key = 'manifest'").fetchone()
        return Manifest.model_validate_json(row[0]) if row else None

    def create(self, manifest: Manifest) -> Manifest:
        """Create the schema and its tables for `manifest`; the manifest stored first wins when two processes race."""
        with self._connection() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            if manifest.params.bm25_method not in _TERM_SCORE:
                raise PagegraphError(
                    f"BM25 method {manifest.params.bm25_method!r} is not available in a database index "
                    f"(it offers {', '.join(_TERM_SCORE)})"
                )
            dimension = int(manifest.params.embedding_dimension)
            conn.execute(_SCHEMA.format(dimension=dimension) + _SEARCH_SCHEMA.format(dimension=dimension))
            conn.execute(
                "INSERT INTO meta VALUES ('manifest', %s) ON CONFLICT (key) DO NOTHING", (manifest.model_dump_json(),)
            )
            conn.execute("INSERT INTO meta VALUES ('search', %s) ON CONFLICT (key) DO NOTHING", (SEARCH_RECIPE,))
        return self.manifest()

    def drop(self) -> None:
        with self._connection() as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))

    def generation(self) -> int:
        row = self._rows("SELECT value FROM meta WHERE key = 'generation'")
        return int(row[0]["value"]) if row else 0

    # -- documents -----------------------------------------------------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self._documents("", ())

    def document_by_path(self, path: str) -> DocumentRecord | None:
        found = self._documents("WHERE d.path = %s", (path,))
        return found[0] if found else None

    def _documents(self, where: str, args: tuple) -> list[DocumentRecord]:
        rows = self._rows(f"SELECT {_DOCUMENT_COLUMNS} FROM documents d {where} ORDER BY d.name, d.path", args)
        return [document_from_row(row) for row in rows]

    def pages(self, document_id: str) -> list[Page]:
        rows = self._rows(
            "SELECT number, label, text, error, ocr_confidence FROM pages WHERE document_id = %s ORDER BY number",
            (document_id,),
        )
        return [page_from_row(row) for row in rows]

    def ocr_page_counts(self) -> dict[str, int]:
        rows = self._rows(
            "SELECT document_id, COUNT(*) AS n FROM pages WHERE ocr_confidence IS NOT NULL GROUP BY document_id"
        )
        return {row["document_id"]: row["n"] for row in rows}

    def tree(self, document_id: str) -> list[TreeNode]:
        rows = self._rows("SELECT * FROM tree_nodes WHERE document_id = %s ORDER BY position", (document_id,))
        return tree_from_rows(rows, self.pages(document_id))

    def section_titles(self, max_level: int, documents: Collection[str] | None = None) -> dict[str, list[str]]:
        titles: dict[str, list[str]] = {}
        where, args = ("AND document_id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
        rows = self._rows(
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
        with self._connection() as conn:
            with conn.cursor(name="pagegraph_chunks", row_factory=dict_row, binary=True) as cur:
                cur.itersize = 2000
                cur.execute(
                    f"SELECT {_CHUNK_COLUMNS}, c.embedding FROM chunks c {where} ORDER BY c.document_id, c.position",
                    args,
                )
                for row in cur:
                    yield chunk_from_row(row, documents[row["document_id"]]), row["embedding"].to_numpy()

    def chunks_by_id(self, chunk_ids: list[str]) -> dict[str, Chunk]:
        rows = self._rows(f"SELECT {_CHUNK_COLUMNS} FROM chunks c WHERE c.id = ANY(%s)", (list(chunk_ids),))
        documents = {
            doc.id: doc
            for doc in self._documents("WHERE d.id = ANY(%s)", (list({row["document_id"] for row in rows}),))
        }
        return {row["id"]: chunk_from_row(row, documents[row["document_id"]]) for row in rows}

    def chunk_count(self) -> int:
        return self._rows("SELECT COUNT(*) AS n FROM chunks")[0]["n"]

    def chunk_catalog(self, documents: Collection[str] | None = None) -> list[tuple[str, str, str, int, int, int, str]]:
        """Every chunk's catalog row (of the `documents` given, when given), by document id (compared as code points,
        as SQLite and Python do) and position."""
        where, args = ("WHERE d.id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
        rows = self._rows(
            f"""SELECT c.id, c.document_id, d.name, c.position, c.start_page, c.end_page, d.tags::text AS tags
               FROM chunks c JOIN documents d ON d.id = c.document_id {where}
               ORDER BY c.document_id COLLATE "C", c.position""",
            args,
        )
        return [tuple(row.values()) for row in rows]

    def document_generations(self) -> dict[str, int]:
        """Each document's id with the generation that committed it."""
        return {row["id"]: row["generation"] for row in self._rows("SELECT id, generation FROM documents")}

    def nearest(
        self, vector: np.ndarray, k: int, flt: RetrievalFilter | None, generation: int, *, exact: bool = False
    ) -> list[tuple[str, float]]:
        """Chunk ids and cosine distances of the k nearest chunks the filter lets through, nearest first, among
        the documents committed up to `generation` (what the caller's catalog holds): by the HNSW index, or by an
        exact scan of the rows the filter allows when `exact` or when the HNSW finds fewer than k."""
        where, args = _filter_sql(flt)
        allowed = (
            "FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE d.generation <= %s {'AND ' + where if where else ''}"
        )
        embedding = vector.astype(np.float32)
        found: list[tuple[str, float]] = []
        if not exact:
            # the HNSW returns at most ef_search rows, often one or two fewer than that: asked for k with ef_search k,
            # it fell back to the exact scan (1 s at 200k chunks) for a third of the questions
            ef_search = _FILTERED_EF_SEARCH if where else max(40, min(2 * k, _FILTERED_EF_SEARCH))
            with self._connection(reading=True) as conn:
                self._set_ef_search(conn, ef_search)
                found = conn.execute(
                    f"SELECT c.id, c.embedding <=> %s AS distance {allowed} ORDER BY c.embedding <=> %s LIMIT %s",
                    (embedding, generation, *args, embedding, k),
                ).fetchall()
        if len(found) < k:
            # every allowed row's distance first (a materialized CTE is computed whole), so no index orders them
            with self._connection(reading=True) as conn:
                found = conn.execute(
                    f"""WITH scored AS MATERIALIZED (SELECT c.id, c.embedding <=> %s AS distance {allowed})
                       SELECT id, distance FROM scored ORDER BY distance LIMIT %s""",
                    (embedding, generation, *args, k),
                ).fetchall()
        return [(chunk_id, float(distance)) for chunk_id, distance in found]

    def _set_ef_search(self, conn: psycopg.Connection, ef_search: int) -> None:
        """The HNSW's candidate list for this connection's searches: set for the session (each setting per search
        was a transaction's two round trips more), when it differs from what the connection has."""
        if self._ef_search.get(conn) != ef_search:
            conn.execute(f"SET hnsw.ef_search = {ef_search}")
            self._ef_search[conn] = ef_search

    # -- keyword search and routing, in SQL ------------------------------------------------------------------------
    def search_ready(self) -> bool:
        """Whether the search tables hold every committed chunk's words (an index from before they existed does not
        until a writer fills them: `fill_search`)."""
        return bool(self._rows("SELECT 1 FROM meta WHERE key = 'search' AND value = %s", (SEARCH_RECIPE,)))

    def fill_search(self, dimension: int, *, again: bool = False) -> int:
        """Fill the search tables from the stored chunks (an index from before they existed, or of another recipe;
        `again`: whatever they hold), a document per transaction; returns how many documents were filled. Writers
        take turns."""
        lock = f"{self.schema}.search"
        with self._pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (lock,))
            conn.commit()
            self._pinned.conn = conn  # this thread's reads below go through the connection that holds the lock
            try:
                if self.search_ready() and not again:
                    return 0
                # another recipe's tables may be shaped otherwise: made anew
                conn.execute(
                    "DROP TABLE IF EXISTS chunk_words, chunk_lengths, chunk_terms, document_centroids, word_chunks, "
                    "search_totals"
                )
                conn.execute(_SEARCH_SCHEMA.format(dimension=dimension))
                conn.commit()
                documents = self.documents()
                for document in documents:
                    with conn.transaction():
                        chunks, vectors = self.chunks_with_vectors(document.id, dimension)
                        self._write_search(conn.cursor(), document, chunks, vectors)
                conn.execute(
                    "INSERT INTO meta VALUES ('search', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (SEARCH_RECIPE,),
                )
                conn.commit()
                return len(documents)
            finally:
                self._pinned.conn = None
                conn.rollback()
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (lock,))
                conn.commit()

    @staticmethod
    def _forget_words(cur: psycopg.Cursor, where: str, args: tuple) -> None:
        """Take the chunks of the documents `where` (a condition on documents `d`) out of the words' chunk counts and
        the totals, before they are deleted. Called after the generation's bump, so commits take turns on the counts
        too."""
        cur.execute(
            f"""INSERT INTO word_chunks SELECT w.word, -COUNT(*) FROM documents d
                JOIN chunks c ON c.document_id = d.id JOIN chunk_words w ON w.chunk_id = c.id
                WHERE {where} GROUP BY w.word ORDER BY w.word {_ADD_WORD_CHUNKS}""",
            args,
        )
        cur.execute(
            f"""UPDATE search_totals SET chunks = chunks - gone.n, words = words - gone.total
                FROM (SELECT COUNT(*) AS n, COALESCE(SUM(t.length), 0) AS total FROM documents d
                      JOIN chunks c ON c.document_id = d.id JOIN chunk_terms t ON t.chunk_id = c.id
                      WHERE {where}) gone""",
            args,
        )

    @staticmethod
    def _write_search(cur: psycopg.Cursor, document: DocumentRecord, chunks: list[Chunk], vectors: np.ndarray) -> None:
        label = document_label(document.name, document.title)
        postings, terms = [], []
        for chunk in chunks:
            counts = word_counts(search_text(chunk, label))
            length = sum(counts.values())
            terms.append((chunk.id, length, list(counts), list(counts.values())))
            postings.extend((word, chunk.id, count, length, document.id) for word, count in counts.items())
        for table, rows in (("chunk_terms", terms), ("chunk_words", postings)):
            with cur.copy(f"COPY {table} FROM STDIN") as copy:  # a chunk has ~100 postings: far faster than INSERTs
                for row in rows:
                    copy.write_row(row)
        cur.execute(
            "UPDATE search_totals SET chunks = chunks + %s, words = words + %s",
            (len(terms), sum(length for _, length, *_ in terms)),
        )
        holding = Counter(word for word, *_ in postings)
        cur.execute(
            f"""INSERT INTO word_chunks SELECT * FROM unnest(%s::text[], %s::int[]) ORDER BY 1 {_ADD_WORD_CHUNKS}""",
            (list(holding), list(holding.values())),
        )
        if len(vectors):
            (centroid,) = chunk_centroids(np.zeros(len(vectors), dtype=np.int64), vectors, 1)
            cur.execute("INSERT INTO document_centroids VALUES (%s, %s)", (document.id, centroid.astype(np.float32)))

    def search_totals(self) -> tuple[int, int]:
        """How many chunks the keyword search holds, and their summed length in words."""
        row = self._rows("SELECT chunks AS n, words AS total FROM search_totals")[0]
        return int(row["n"]), int(row["total"])

    def document_frequencies(self, words: list[str]) -> dict[str, int]:
        """How many chunks hold each of `words` that some chunk holds."""
        rows = self._rows(
            "SELECT word, chunks AS n FROM word_chunks WHERE word = ANY(%s) AND chunks > 0", (list(set(words)),)
        )
        return {row["word"]: int(row["n"]) for row in rows}

    def keyword_search(
        self,
        weights: dict[str, float],
        scoring: KeywordScoring,
        limit: int,
        flt: RetrievalFilter | None,
        generation: int,
    ) -> list[tuple[str, float]]:
        """The `limit` best chunks by BM25 that the filter lets through (of the documents committed up to
        `generation` when it restricts anything), with positive scores, best first: the sum over the weighted words a
        chunk holds of the word's weight (its idf times how often the query says it) times the term-frequency part."""
        where, args = _filter_sql(flt)
        if where:
            # chunks only for a page range: a lookup per posting, half a search within a few documents' time
            joined = "JOIN documents d ON d.id = p.document_id"
            joined += " JOIN chunks c ON c.id = p.chunk_id" if flt.pages is not None else ""
            restrict, restrict_args = f"{joined} WHERE d.generation <= %s AND {where}", [generation, *args]
        else:
            restrict, restrict_args = "", []
        # named documents: only their postings of each word are read
        keys = (
            ("CROSS JOIN (SELECT id AS document_id FROM documents WHERE name = ANY(%s)) k", [list(flt.documents)])
            if flt is not None and flt.documents is not None
            else ("", [])
        )
        return self._score_rows(
            weights,
            scoring,
            keys=keys,
            match="AND w.document_id = k.document_id" if keys[0] else "",
            restrict=(restrict, restrict_args),
            order=("ORDER BY score DESC LIMIT %s", [limit]),
        )

    def keyword_scores_of(
        self, weights: dict[str, float], scoring: KeywordScoring, chunk_ids: list[str]
    ) -> dict[str, float]:
        """The BM25 scores of those of `chunk_ids` that hold a weighted word, from each chunk's one row of words (a
        probe of the postings per word and chunk cost 3-4 times as much at 200k chunks)."""
        term = scoring.term_score()
        query = f"""SELECT p.chunk_id, SUM(q.weight * {term}) AS score
            FROM (SELECT t.chunk_id, w.word, w.count, t.length FROM chunk_terms t
                  CROSS JOIN LATERAL unnest(t.words, t.counts) AS w(word, count) WHERE t.chunk_id = ANY(%s)) p
            JOIN unnest(%s::text[], %s::float8[]) AS q(word, weight) ON q.word = p.word
            GROUP BY p.chunk_id HAVING SUM(q.weight * {term}) > 0"""
        with self._connection(reading=True) as conn:
            found = conn.execute(query, (list(chunk_ids), list(weights), list(weights.values()))).fetchall()
        return {chunk_id: float(score) for chunk_id, score in found}

    def _score_rows(
        self,
        weights: dict[str, float],
        scoring: KeywordScoring,
        *,
        keys: tuple[str, list] = ("", []),
        match: str = "",
        restrict: tuple[str, list] = ("", []),
        order: tuple[str, list] = ("", []),
    ) -> list[tuple[str, float]]:
        """Chunk ids and BM25 scores: each weighted word's postings (one index scan per word, or per word and row of
        `keys` — a join of `k` — on the postings the `match` condition on `w` and `k` keeps), joined and filtered by
        `restrict`, summed per chunk, kept when positive and ordered by `order`; each a piece of SQL and its
        arguments."""
        term = scoring.term_score()
        query = f"""SELECT p.chunk_id, SUM(q.weight * {term}) AS score
            FROM unnest(%s::text[], %s::float8[]) AS q(word, weight) {keys[0]}
            CROSS JOIN LATERAL (
                SELECT chunk_id, count, length, document_id FROM chunk_words w WHERE w.word = q.word {match}
            ) p {restrict[0]}
            GROUP BY p.chunk_id HAVING SUM(q.weight * {term}) > 0 {order[0]}"""
        arguments = [list(weights), list(weights.values()), *keys[1], *restrict[1], *order[1]]
        with self._connection(reading=True) as conn:
            return [(chunk_id, float(score)) for chunk_id, score in conn.execute(query, arguments).fetchall()]

    def documents_holding(self, word: str) -> set[str]:
        """The ids of the documents some chunk of which holds `word`: one step along the word's postings per document
        (they are keyed by word, then document), not a read of them all."""
        return {row["document_id"] for row in self._rows(_DOCUMENTS_HOLDING, {"word": word})}

    def similarities(self, chunk_ids: list[str], vector: np.ndarray) -> dict[str, float]:
        """The inner product of each chunk's vector with `vector` (cosine: both are normalised)."""
        rows = self._rows(
            "SELECT id, -(embedding <#> %s) AS similarity FROM chunks WHERE id = ANY(%s)",
            (vector.astype(np.float32), list(chunk_ids)),
        )
        return {row["id"]: float(row["similarity"]) for row in rows}

    def centroids(self, documents: Collection[str] | None = None) -> dict[str, np.ndarray]:
        """Each document's centroid (of the `documents` given, when given): the normalised sum of its chunk vectors
        (documents without chunks have none); stored at commit, else (an index whose search tables are not filled
        yet, which the documents given may not ask for) averaged here."""
        if documents is not None or self.search_ready():
            where, args = ("WHERE document_id = ANY(%s)", (list(documents),)) if documents is not None else ("", ())
            rows = self._rows(f"SELECT document_id, centroid FROM document_centroids {where}", args)
            return {row["document_id"]: row["centroid"].to_numpy() for row in rows}
        rows = self._rows("SELECT document_id, AVG(embedding) AS centroid FROM chunks GROUP BY document_id")
        means = {row["document_id"]: row["centroid"].to_numpy() for row in rows}
        return {document_id: mean / max(float(np.linalg.norm(mean)), 1e-12) for document_id, mean in means.items()}

    # -- writes --------------------------------------------------------------------------------------------------
    def commit_document(self, document: DocumentWrite, replaces: str | None) -> bool:
        """Write a whole document, replacing whatever version of its path is stored, in one transaction; False when
        another process committed this very content meanwhile (nothing is written then). Writers of one path take
        turns; `replaces` is what this process found when it started."""
        record = document.record
        with self._connection() as conn, conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (record.path,))
            stored = cur.execute("SELECT id, sha256 FROM documents WHERE path = %s", (record.path,)).fetchone()
            if stored is not None and stored[1] == record.sha256 and stored[0] != replaces:
                return False
            generation = self._bump_generation(cur)
            gone = (record.path, replaces or record.id)
            self._forget_words(cur, "d.path = %s OR d.id = %s", gone)
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
            self._write_search(cur, record, document.chunks, np.asarray(document.embeddings, dtype=np.float32))
            if document.summary is not None:
                cur.execute("INSERT INTO summaries VALUES (%s, %s)", (record.id, document.summary.model_dump_json()))
            if document.sections is not None:
                self._write_sections(cur, record.id, document.sections)
            cur.execute("DELETE FROM failures WHERE path = %s", (record.path,))
        return True

    def set_sections(self, document_id: str, sections: SectionSummaries) -> None:
        with self._connection() as conn, conn.cursor() as cur:
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
        with self._connection() as conn:
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
        with self._connection() as conn:
            written = conn.execute(
                """INSERT INTO summaries SELECT id, %s FROM documents WHERE id = %s
                   ON CONFLICT (document_id) DO UPDATE SET summary = EXCLUDED.summary""",
                (summary.model_dump_json(), document_id),
            ).rowcount
        return bool(written)

    def sections(self, document_id: str) -> list[NodeSummary]:
        rows = self._rows("SELECT record FROM node_summaries WHERE document_id = %s ORDER BY position", (document_id,))
        return [NodeSummary.model_validate_json(row["record"]) for row in rows]

    def section_vectors(self, document_id: str) -> tuple[list[str], np.ndarray]:
        rows = self._rows(
            "SELECT node_id, vector FROM node_summaries WHERE document_id = %s ORDER BY position", (document_id,)
        )
        if not rows:
            return [], np.zeros((0, 0), dtype=np.float32)
        return [r["node_id"] for r in rows], np.stack([r["vector"].to_numpy() for r in rows])

    def documents_with_sections(self) -> set[str]:
        return {row["document_id"] for row in self._rows("SELECT DISTINCT document_id FROM node_summaries")}

    def cached_section_summary(self, key: str) -> str | None:
        rows = self._rows("SELECT summary FROM summary_cache WHERE key = %s", (key,))
        return rows[0]["summary"] if rows else None

    def summary_cache(self) -> dict[str, str]:
        return {row["key"]: row["summary"] for row in self._rows("SELECT key, summary FROM summary_cache")}

    def add_to_summary_cache(self, entries: dict[str, str]) -> None:
        with self._connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO summary_cache VALUES (%s, %s) ON CONFLICT (key) DO NOTHING", list(entries.items())
            )

    def summaries(self) -> dict[str, StoredSummary]:
        rows = self._rows("SELECT document_id, summary FROM summaries")
        return {row["document_id"]: StoredSummary.model_validate_json(row["summary"]) for row in rows}

    def remove_document(self, document_id: str) -> None:
        with self._connection() as conn, conn.cursor() as cur:
            self._bump_generation(cur)
            self._forget_words(cur, "d.id = %s", (document_id,))
            cur.execute("DELETE FROM documents WHERE id = %s", (document_id,))

    def update_tags(self, document_id: str, tags: DocumentTags) -> None:
        with self._connection() as conn, conn.cursor() as cur:
            # committed at the next generation, so that readers' next snapshots read its chunks' tags again
            generation = self._bump_generation(cur)
            cur.execute(
                "UPDATE documents SET tags = %s, generation = %s WHERE id = %s",
                (tags.model_dump_json(), generation, document_id),
            )

    def section_vector_recipe(self) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = 'section_vectors'")
        return rows[0]["value"] if rows else None

    def set_section_vectors(self, document_id: str, vectors: dict[str, np.ndarray]) -> None:
        with self._connection() as conn, conn.cursor() as cur:
            cur.executemany(
                "UPDATE node_summaries SET vector = %s WHERE document_id = %s AND node_id = %s",
                [(vector.astype(np.float32), document_id, node_id) for node_id, vector in vectors.items()],
            )

    def set_section_vector_recipe(self, recipe: str) -> None:
        with self._connection() as conn:
            conn.execute(
                "INSERT INTO meta VALUES ('section_vectors', %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (recipe,),
            )

    def last_recovery(self) -> tuple[str, str] | None:
        """Never: a database index has no derived vectors to recover (each document commits with its vectors)."""
        return None

    def record_failure(self, path: str, name: str, reason: str) -> None:
        with self._connection() as conn:
            conn.execute(
                """INSERT INTO failures VALUES (%s, %s, %s, %s) ON CONFLICT (path) DO UPDATE
                   SET name = EXCLUDED.name, reason = EXCLUDED.reason, failed_at = EXCLUDED.failed_at""",
                (path, name, reason, now_iso()),
            )

    def failures(self) -> list[tuple[str, str, str]]:
        return [(r["path"], r["name"], r["reason"]) for r in self._rows("SELECT * FROM failures ORDER BY name")]

    def forget_failure(self, path: str) -> None:
        with self._connection() as conn:
            conn.execute("DELETE FROM failures WHERE path = %s", (path,))

    def save_eval_run(self, run: EvalRun) -> None:
        with self._connection() as conn:
            conn.execute(
                """INSERT INTO eval_runs VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE
                   SET config = EXCLUDED.config, summary = EXCLUDED.summary, per_question = EXCLUDED.per_question""",
                eval_run_row(run),
            )

    def eval_runs(self) -> list[EvalRun]:
        rows = self._rows("SELECT * FROM eval_runs ORDER BY created_at")
        return [eval_run_from_row(row) for row in rows]

    @staticmethod
    def _bump_generation(cur: psycopg.Cursor) -> int:
        """The next generation; its row stays locked until the transaction ends, so commits take turns and a
        snapshot at generation G holds exactly the documents committed at G or before."""
        return int(
            cur.execute(
                """INSERT INTO meta VALUES ('generation', '1')
                   ON CONFLICT (key) DO UPDATE SET value = (meta.value::bigint + 1)::text RETURNING value"""
            ).fetchone()[0]
        )


def _filter_sql(flt: RetrievalFilter | None) -> tuple[str, list]:
    """Conditions over chunks `c` joined to documents `d` that let through what the filter allows, and their
    arguments (the same rules as the chunk catalog's masks)."""
    if flt is None:
        return "", []
    clauses, args = [], []
    for column, wanted in (
        ("d.name", flt.documents),
        ("d.tags->>'project'", flt.projects),
        ("d.tags->>'source_type'", flt.source_types),
    ):
        if wanted is not None:
            clauses.append(f"{column} = ANY(%s)")
            args.append(list(wanted))
    if flt.max_confidentiality is not None:
        allowed = CONFIDENTIALITY_LEVELS[: CONFIDENTIALITY_LEVELS.index(flt.max_confidentiality) + 1]
        clauses.append("d.tags->>'confidentiality' = ANY(%s)")
        args.append(list(allowed))
    if flt.pages is not None:
        clauses.append("c.end_page >= %s AND c.start_page <= %s")
        args.extend(flt.pages)
    if flt.date_from is not None:
        clauses.append("(d.tags->>'date')::date >= %s")
        args.append(flt.date_from)
    if flt.date_to is not None:
        clauses.append("(d.tags->>'date')::date <= %s")
        args.append(flt.date_to)
    return " AND ".join(clauses), args
