"""`pagegraph db start|stop`: a PostgreSQL with pgvector in a folder, for trying the database index on one machine
(pgserver's build of PostgreSQL 16; a team brings its own server, see docs/postgresql.md)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from pagegraph.cli.common import app, console, fail
from pagegraph.config import data_home
from pagegraph.errors import PagegraphError
from pagegraph.server.embedded import import_pgserver

db_app = typer.Typer(
    no_args_is_help=True,
    help="A local PostgreSQL with pgvector for trying the database index (pgserver); a team uses its own server.",
)
app.add_typer(db_app, name="db")

FolderOption = Annotated[
    Optional[Path],
    typer.Option("--folder", help="where the database keeps its files (default: ~/.local/share/pagegraph/postgres)"),
]


def _folder(folder: Path | None) -> Path:
    return (folder or data_home() / "pagegraph" / "postgres").expanduser().resolve()


def _pgserver() -> Any:
    try:
        return import_pgserver()
    except PagegraphError as exc:
        raise fail(f"pagegraph db: {exc}") from None


@db_app.command("start")
def start(folder: FolderOption = None) -> None:
    """Start the local database (created on first start) and print the URL to give pagegraph. It keeps running
    after this command ends, until `pagegraph db stop`."""
    pgserver = _pgserver()
    where = _folder(folder)
    where.mkdir(parents=True, exist_ok=True)
    try:
        server = pgserver.get_server(where, cleanup_mode=None)  # None: leave it running when this process exits
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        url = server.get_uri()
    except Exception as exc:  # initdb and pg_ctl failures come as several exception types, each with its log
        raise fail(f"the database in {where} did not start: {exc} (its log: {where / 'log'})") from None
    console.print(f"PostgreSQL with pgvector is running, its files in {where}.", highlight=False)
    console.print("Use it in this shell (or pass --database-url):", highlight=False)
    console.print(f"  export PAGEGRAPH_DATABASE_URL={shlex.quote(url)}", highlight=False, soft_wrap=True)
    console.print("Stop it with: pagegraph db stop" + (f" --folder {shlex.quote(str(where))}" if folder else ""))


@db_app.command("stop")
def stop(folder: FolderOption = None) -> None:
    """Stop the local database (its files stay: `pagegraph db start` brings it back with its indexes)."""
    where = _folder(folder)
    if not (where / "postmaster.pid").exists():
        console.print(f"No database is running in {where}.", highlight=False)
        return
    pgserver = _pgserver()
    owner = where.stat().st_uid  # pgserver runs PostgreSQL as a user of its own when started by root
    try:
        pgserver.pg_ctl(["-w", "stop"], pgdata=where, user=owner if owner != os.geteuid() else None)
    except subprocess.CalledProcessError as exc:
        raise fail(f"the database in {where} did not stop: {exc.stderr or exc}") from None
    console.print(f"Stopped the database in {where}.", highlight=False)
