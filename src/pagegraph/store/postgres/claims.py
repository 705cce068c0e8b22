"""Writers' turns in a database index: a claim on a file is an advisory lock held by a connection of its own."""

from __future__ import annotations

import threading

import psycopg

from pagegraph.store.postgres.connection import CONNECT_TIMEOUT_S


class WorkClaims:
    """Claims this process holds on files it is ingesting into schema `schema` of the database at `url`
    (`RecordStore.claim`)."""

    def __init__(self, url: str, schema: str) -> None:
        self.url, self.schema = url, schema
        self._claims: psycopg.Connection | None = None  # holds this process's claims (session advisory locks)
        self._claimed: set[str] = set()
        self._claims_lock = threading.Lock()

    # -- writers' turns: a claim is an advisory lock held by a connection of its own, so that a process that dies
    # (killed, or its machine lost) lets go of its claims with its connection, and another picks the file up.
    def claim(self, path: str) -> bool:
        with self._claims_lock:
            if path in self._claimed:
                return True
            if self._claims is None:
                self._claims = psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
            row = self._claims.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 1))", (f"{self.schema}:{path}",)
            ).fetchone()
            claimed = row is not None and row[0]
            if claimed:
                self._claimed.add(path)
            return bool(claimed)

    def release(self, path: str) -> None:
        with self._claims_lock:
            if path in self._claimed and self._claims is not None:
                self._claimed.discard(path)
                self._claims.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 1))", (f"{self.schema}:{path}",))

    def close(self) -> None:
        if self._claims is not None:
            self._claims.close()  # the database lets go of every claim it held
