"""The LangGraph server's checkpointer: threads kept in the server's database (`Settings.runtime_database_url`: the one
`pagegraph serve` started, or the configured one; schema `pagegraph_NAME_threads`), or, for a bare `langgraph dev`
without one, in a SQLite file (default INDEX/checkpoints.sqlite), so that a restarted server finds them again;
pagegraph's records are allow-listed for deserialisation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection, sql
from psycopg.rows import dict_row

from pagegraph.config import Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.graph import checkpoint_serializer
from pagegraph.store.folder_index import THREADS_FILE
from pagegraph.store.postgres import index_schema, redacted


def checkpoint_path(settings: Settings) -> Path:
    return (settings.server.checkpoint_db or settings.index / THREADS_FILE).expanduser().resolve()


class DeferredDeletes(BaseCheckpointSaver[str]):
    """A checkpointer whose thread deletion returns without yielding to the event loop and deletes in a task.

    langgraph-runtime-inmem (0.31.4; 0.36.7 alike) finds a thread's position in its list, awaits the checkpointer's
    `adelete_thread`, then pops that position: when stateless runs (whose threads are deleted as they end) finish
    together, another deletion shifts the list in between and the wrong thread goes, or the run fails with
    "pop index out of range". Its own in-memory checkpointer never yields there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deletions: set[asyncio.Task] = set()

    async def adelete_thread(self, thread_id: str) -> None:
        task = asyncio.get_running_loop().create_task(super().adelete_thread(thread_id))
        self._deletions.add(task)
        task.add_done_callback(self._deletions.discard)

    async def drain(self) -> None:
        if self._deletions:
            await asyncio.gather(*self._deletions, return_exceptions=True)


class ThreadSaver(DeferredDeletes, AsyncSqliteSaver):
    pass


class DatabaseThreadSaver(DeferredDeletes, AsyncPostgresSaver):
    pass


def threads_schema(settings: Settings) -> str:
    return f"{index_schema(settings.index.expanduser())}_threads"


def create_threads_schema(schema: str) -> sql.Composed:
    """The statement that makes the threads schema; the saver's `setup` then creates its tables there."""
    return sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema))


@asynccontextmanager
async def checkpointer() -> AsyncIterator[BaseCheckpointSaver]:
    settings = get_settings()
    if settings.runtime_database_url():
        async with _database_threads(settings) as database_saver:
            yield database_saver
        return
    path = checkpoint_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(path) as connection:
        saver = ThreadSaver(connection, serde=checkpoint_serializer())
        await saver.setup()
        try:
            yield saver
        finally:
            await saver.drain()


@asynccontextmanager
async def _database_threads(settings: Settings) -> AsyncIterator[DatabaseThreadSaver]:
    schema = threads_schema(settings)
    url = settings.runtime_database_url()
    assert url is not None
    try:
        connection = await AsyncConnection.connect(
            url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options=f"-c search_path={schema}",
        )
    except Exception as exc:
        raise PagegraphError(
            f"server threads: cannot connect to the database at {redacted(url)} ({type(exc).__name__})"
        ) from exc
    async with connection:
        await connection.execute(create_threads_schema(schema))
        saver = DatabaseThreadSaver(connection, serde=checkpoint_serializer())
        await saver.setup()
        try:
            yield saver
        finally:
            await saver.drain()
