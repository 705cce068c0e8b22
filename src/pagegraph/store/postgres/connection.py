"""Connections to an index's schema in PostgreSQL: a small pool (each connection checked only after it sat idle,
with pgvector registered and keyword search's work memory set), a snapshot pinned to a thread, the schema an index
folder names, and URLs without their passwords."""

from __future__ import annotations

import hashlib
import math
import re
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout

from pagegraph.errors import PagegraphError

SCHEMA_PREFIX = "pagegraph_"
CONNECT_TIMEOUT_S = 10
# A connection taken from the pool is checked (a round trip) only when it has sat unused this long: a question's
# search takes one some twenty times in a row, and one given back a moment ago was working then.
_CHECK_AFTER_IDLE_S = 2.0
# Memory for summing a keyword query's postings per chunk (hundreds of thousands at 200k chunks), set on every pooled
# connection: PostgreSQL's 4 MB default sends the sum to disk (unfiltered BM25 at 200k chunks, p50/p95: 206/688 ms
# with 4 MB, 168/378 ms with 64 MB).
_KEYWORD_WORK_MEM = "64MB"


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


class Connections:
    """A pool of connections to schema `schema` of the database at `url`, which the records and the search of one
    index share."""

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
            kwargs={"connect_timeout": CONNECT_TIMEOUT_S, "options": f"-c search_path={schema},public"},
            configure=self._configure,
            check=self._check_when_idle,
            reset=self._note_returned,
            open=False,
            name="pagegraph",
        )
        try:
            self._pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 2)
        except PoolTimeout as exc:
            raise PagegraphError(f"the database at {redacted(url)} is not reachable: {_reason(exc)}") from exc
        self._pinned = threading.local()

    def _prepare_database(self) -> bool:
        """Whether pgvector is installed; a writer installs it when it may. Fails clearly when the server is down."""
        try:
            with psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True) as conn:
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
    def connection(self, *, reading: bool = False) -> Iterator[psycopg.Connection]:
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

    @contextmanager
    def locked(self, name: str) -> Iterator[psycopg.Connection]:
        """A connection holding the advisory lock `name` (writers take turns on it), pinned to this thread so that
        its reads inside the block go through it; what the block leaves uncommitted is rolled back."""
        with self._pool.connection() as conn:
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (name,))
            conn.commit()
            self._pinned.conn = conn
            try:
                yield conn
            finally:
                self._pinned.conn = None
                conn.rollback()
                conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", (name,))
                conn.commit()

    def rows(self, query: str, args: Sequence[Any] | Mapping[str, Any] = ()) -> list[dict[str, Any]]:
        """The rows a read returns, as dicts."""
        with self.connection(reading=True) as conn, conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(query, args).fetchall()

    def set_ef_search(self, conn: psycopg.Connection, ef_search: int) -> None:
        """The HNSW's candidate list for this connection's searches: set for the session (each setting per search
        was a transaction's two round trips more), when it differs from what the connection has."""
        if self._ef_search.get(conn) != ef_search:
            conn.execute(f"SET hnsw.ef_search = {ef_search}")
            self._ef_search[conn] = ef_search

    def close(self) -> None:
        self._pool.close()
