"""The runtime of `pagegraph serve`, on one machine and for a team alike: the stock LangGraph server (langgraph-api) on
langgraph-runtime-pg, which keeps threads, runs, the run queue, crons and the store in PostgreSQL and passes a run's
stream between processes through Redis. Several replicas on one database and one Redis serve the same users: a run
started on one can be joined, streamed and cancelled from any other, and a run whose replica died is taken up again
by another (at most `BG_JOB_MAX_RETRIES` times, then marked failed).

`pagegraph serve` runs `python -m pagegraph.server.runtime CONFIG HOST PORT JOBS WORKERS` with the database
(`Settings.runtime_database_url`) and Redis it was given or started itself (`server.embedded`); the URLs travel in
the environment, not in the command line, so that no password shows in a process list."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psycopg
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from langgraph_api.cli import run_server
from langgraph_cli.config import validate_config_file
from langgraph_runtime_pg.migrate import upgrade_head
from psycopg import sql
from psycopg.rows import dict_row

from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.indexing.postgres import redacted
from pagegraph.server.checkpointer import create_threads_schema, threads_schema

EDITION = "pg"  # langgraph_runtime_pg, the edition langgraph-api imports for LANGGRAPH_RUNTIME_EDITION=pg
SETUP_LOCK = "pagegraph: the team runtime's tables"
SETUP_LOCK_POLL_S = 0.2


def prepare_database(database_url: str, threads_schema_name: str) -> None:
    """Create or migrate the server's tables — the runtime's own (Alembic), its checkpointer's and store's, and the
    threads' (`server.checkpointer`, in the index's threads schema) — one process at a time, under an advisory
    lock. Each server process sets these up as it starts, without a lock: replicas (or `--workers`) started
    together on a new database, or after an upgrade that brings a migration, race to create the same tables, and
    all but one exit (a unique violation or a deadlock). After this, their own pass finds every table in place."""
    try:
        connection = psycopg.connect(database_url, autocommit=True, row_factory=dict_row)
    except psycopg.OperationalError as exc:
        raise PagegraphError(
            f"the team runtime's tables: cannot connect to the database at {redacted(database_url)} "
            f"({type(exc).__name__})"
        ) from exc
    with connection as conn:
        # polled, not waited for in one statement: the checkpointer's CREATE INDEX CONCURRENTLY waits for every
        # open statement, a waiting pg_advisory_lock among them (a deadlock). Released when the connection closes.
        lock = "SELECT pg_try_advisory_lock(hashtext(%s)) AS held"
        while not conn.execute(lock, (SETUP_LOCK,)).fetchone()["held"]:
            time.sleep(SETUP_LOCK_POLL_S)
        upgrade_head(database_url)
        PostgresSaver(conn).setup()
        PostgresStore(conn).setup()
        conn.execute(create_threads_schema(threads_schema_name))
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(threads_schema_name)))
        PostgresSaver(conn).setup()


def serve(config_path: Path, host: str, port: int, jobs: int, workers: int) -> None:
    settings = get_settings()
    database_url = settings.runtime_database_url()
    if not (database_url and settings.redis_url):
        raise PagegraphError("the server runtime needs a database and Redis (`pagegraph serve` starts both)")
    config = validate_config_file(config_path)
    prepare_database(database_url, threads_schema(settings))
    # migrated above, under the lock: each worker's pool start need not run the migration again
    os.environ["LG_RUNTIME_PG_AUTO_MIGRATE"] = "false"
    run_server(
        host,
        port,
        False,
        config.get("graphs", {}),
        n_jobs_per_worker=jobs,
        env=config.get("env"),
        store=config.get("store"),
        auth=config.get("auth"),
        http=config.get("http"),
        checkpointer=config.get("checkpointer"),
        runtime_edition=EDITION,
        server_level=settings.server_log_level,
        __database_uri__=database_url,
        __redis_uri__=settings.redis_url,
        __migrations_path__=None,
        **({"workers": workers} if workers > 1 else {}),
    )


if __name__ == "__main__":
    config_arg, host_arg, port_arg, jobs_arg, workers_arg = sys.argv[1:]
    try:
        serve(Path(config_arg), host_arg, int(port_arg), int(jobs_arg), int(workers_arg))
    except PagegraphError as exc:
        sys.exit(f"pagegraph serve: {exc}")
