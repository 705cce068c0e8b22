"""The LangGraph server's checkpointer: threads kept in a SQLite file (default INDEX/checkpoints.sqlite), so that a
restarted server finds them again; pagegraph's records are allow-listed for deserialisation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from pagegraph.config import Settings, get_settings
from pagegraph.indexing.index import THREADS_FILE
from pagegraph.state.graph import checkpoint_serializer


def checkpoint_path(settings: Settings) -> Path:
    return (settings.checkpoint_db or settings.index / THREADS_FILE).expanduser().resolve()


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncSqliteSaver]:
    path = checkpoint_path(get_settings())
    path.parent.mkdir(parents=True, exist_ok=True)
    async with aiosqlite.connect(path) as connection:
        saver = AsyncSqliteSaver(connection, serde=checkpoint_serializer())
        await saver.setup()
        yield saver
