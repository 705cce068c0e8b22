"""The runtime of `pagegraph serve`, on one machine and for a team alike: the stock LangGraph server (langgraph-api) on
langgraph-runtime-pg, which keeps threads, runs, the run queue, crons and the store in PostgreSQL and passes a run's
stream between processes through Redis. Several replicas on one database and one Redis serve the same users: a run
started on one can be joined, streamed and cancelled from any other, and a run whose replica died is taken up again
by another (at most `BG_JOB_MAX_RETRIES` times, then marked failed).

`pagegraph serve` runs `python -m pagegraph.server.runtime CONFIG HOST PORT JOBS WORKERS` with the database
(`Settings.runtime_database_url`) and Redis it was given or started itself (`server.embedded`); the URLs travel in
the environment, not in the command line, so that no password shows in a process list."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psycopg
import uvicorn
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.postgres import PostgresStore
from langgraph_cli.config import validate_config_file
from langgraph_runtime_pg.migrate import upgrade_head
from psycopg import sql
from psycopg.rows import dict_row

from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError
from pagegraph.server.checkpointer import create_threads_schema, threads_schema
from pagegraph.store.postgres import redacted

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
        while not (conn.execute(lock, (SETUP_LOCK,)).fetchone() or {}).get("held"):
            time.sleep(SETUP_LOCK_POLL_S)
        upgrade_head(database_url)
        PostgresSaver(conn).setup()
        PostgresStore(conn).setup()
        conn.execute(create_threads_schema(threads_schema_name))
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(threads_schema_name)))
        PostgresSaver(conn).setup()


def runtime_environment(config: Mapping[str, Any], database_url: str, redis_url: str, jobs: int) -> dict[str, str]:
    """The environment langgraph-api's production entry (`langgraph_api.server:app`) reads its configuration from
    at import: the graphs, auth, HTTP app and checkpointer of langgraph.json, the PostgreSQL runtime's database and
    Redis, the jobs per worker. No development-only setting: no in-memory runtime (and so none of its `/internal`
    and `/deploy` routes), no reload, no Studio shortcut."""
    sections = {
        "LANGSERVE_GRAPHS": config.get("graphs"),
        "LANGGRAPH_AUTH": config.get("auth"),
        "LANGGRAPH_HTTP": config.get("http"),
        "LANGGRAPH_STORE": config.get("store"),
        "LANGGRAPH_CHECKPOINTER": config.get("checkpointer"),
    }
    return {
        **{name: json.dumps(value) for name, value in sections.items() if value},
        "LANGGRAPH_RUNTIME_EDITION": EDITION,
        "DATABASE_URI": database_url,
        "REDIS_URI": redis_url,
        "N_JOBS_PER_WORKER": str(jobs),
        "LANGGRAPH_ALLOW_BLOCKING": "false",
        # the v2 event-streaming protocol (`/threads/ID/commands`, `/threads/ID/stream/events`) starts runs outside
        # the run routes the limits guard; the web page, the SDK and chat clients use those routes
        "FF_V2_EVENT_STREAMING": "false",
        # migrated by prepare_database, under a lock: each worker's pool start need not run the migration again
        "LG_RUNTIME_PG_AUTO_MIGRATE": "false",
    }


# Loggers whose warnings at every start are about langgraph-api itself, not the server's health: its own OpenAPI
# docstrings that YAML cannot parse (with a traceback each) and a structlog formatting hint. Shown with --verbose.
START_NOISE = ("langgraph_api.utils", "py.warnings")


def log_config(level: str) -> dict[str, Any]:
    """langgraph-api's own log format, on standard output, at `level`."""
    quiet = "ERROR" if level in ("WARNING", "ERROR") else level
    return {
        "version": 1,
        "incremental": False,
        "disable_existing_loggers": False,
        "formatters": {"simple": {"class": "langgraph_api.logging.Formatter"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "simple", "stream": "ext://sys.stdout"}
        },
        "loggers": {
            **{name: {"level": level} for name in ("uvicorn", "uvicorn.error", "langgraph_api.server")},
            **{name: {"level": quiet} for name in START_NOISE},
        },
        "root": {"handlers": ["console"], "level": level},
    }


def serve(config_path: Path, host: str, port: int, jobs: int, workers: int) -> None:
    settings = get_settings()
    database_url = settings.runtime_database_url()
    if not (database_url and settings.server.redis_url):
        raise PagegraphError("the server runtime needs a database and Redis (`pagegraph serve` starts both)")
    config = validate_config_file(config_path)
    prepare_database(database_url, threads_schema(settings))
    os.environ.update(runtime_environment(config, database_url, settings.server.redis_url, jobs))
    os.environ["LANGGRAPH_API_URL"] = f"http://{host}:{port}"  # the API calls itself here (e.g. the MCP route)
    env_file = config_path.parent / env if isinstance(env := config.get("env"), str) else None
    uvicorn.run(
        "langgraph_api.server:app",
        host=host,
        port=port,
        workers=workers,
        access_log=False,
        # X-Forwarded-For names the client only from the proxies the operator trusts (uvicorn trusts loopback's)
        proxy_headers=bool(settings.server.trusted_proxies),
        forwarded_allow_ips=",".join(settings.server.trusted_proxies) or None,
        env_file=env_file if env_file and env_file.is_file() else None,
        log_config=log_config(settings.server.server_log_level),
    )


if __name__ == "__main__":
    config_arg, host_arg, port_arg, jobs_arg, workers_arg = sys.argv[1:]
    try:
        serve(Path(config_arg), host_arg, int(port_arg), int(jobs_arg), int(workers_arg))
    except PagegraphError as exc:
        sys.exit(f"pagegraph serve: {exc}")
