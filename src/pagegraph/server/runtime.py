"""The team runtime of `pagegraph serve`: the stock LangGraph server (langgraph-api) on langgraph-runtime-pg, which
keeps threads, runs, the run queue, crons and the store in PostgreSQL and passes a run's stream between processes
through Redis. Several replicas on one database and one Redis serve the same users: a run started on one can be
joined, streamed and cancelled from any other, and a run whose replica died is taken up again by another (at most
`BG_JOB_MAX_RETRIES` times, then marked failed).

`pagegraph serve` runs `python -m pagegraph.server.runtime CONFIG HOST PORT JOBS WORKERS` when both
PAGEGRAPH_DATABASE_URL and PAGEGRAPH_REDIS_URL are set; the URLs travel in the environment, not in the command
line, so that no password shows in a process list."""

from __future__ import annotations

import sys
from pathlib import Path

from langgraph_api.cli import run_server
from langgraph_cli.config import validate_config_file

from pagegraph.config import get_settings
from pagegraph.errors import PagegraphError

EDITION = "pg"  # langgraph_runtime_pg, the edition langgraph-api imports for LANGGRAPH_RUNTIME_EDITION=pg


def serve(config_path: Path, host: str, port: int, jobs: int, workers: int) -> None:
    settings = get_settings()
    if not (settings.database_url and settings.redis_url):
        raise PagegraphError("the team runtime needs PAGEGRAPH_DATABASE_URL and PAGEGRAPH_REDIS_URL")
    config = validate_config_file(config_path)
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
        server_level="WARNING",
        __database_uri__=settings.database_url,
        __redis_uri__=settings.redis_url,
        __migrations_path__=None,
        **({"workers": workers} if workers > 1 else {}),
    )


if __name__ == "__main__":
    config_arg, host_arg, port_arg, jobs_arg, workers_arg = sys.argv[1:]
    serve(Path(config_arg), host_arg, int(port_arg), int(jobs_arg), int(workers_arg))
