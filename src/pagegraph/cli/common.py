"""What every command shares: the Typer app (each command's module imported only when that command runs), consoles,
the common options, the error exit, progress bars."""

from __future__ import annotations

import importlib
import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from pagegraph.config import Settings, SettingsError, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.filters import RetrievalFilter
from pagegraph.version import __version__

# Each command (or group of commands) and the module that registers it, in the order `pagegraph --help` lists them.
COMMANDS = {
    "ingest": "pagegraph.cli.ingest",
    "remove": "pagegraph.cli.ingest",
    "summarize": "pagegraph.cli.summarize",
    "ask": "pagegraph.cli.ask",
    "chat": "pagegraph.cli.ask",
    "search": "pagegraph.cli.search",
    "inspect": "pagegraph.cli.inspect",
    "eval": "pagegraph.cli.evaluate",
    "serve": "pagegraph.cli.serve",
    "mcp": "pagegraph.cli.mcp",
    "users": "pagegraph.cli.users",
    "db": "pagegraph.cli.db",
    "model": "pagegraph.cli.model",
}


class LazyCommands(TyperGroup):
    """The `pagegraph` group: a command's module (and what it imports: the ingest pipeline, the graphs, the eval
    code) is imported when that command runs or shows its help, not when any command starts."""

    # `ctx` is a click Context and a command a click Command, of the click typer vendors (typer._click)
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(COMMANDS[name])
            self.commands.update(typer.main.get_group(app).commands)
        return super().get_command(ctx, name)


app = typer.Typer(
    cls=LazyCommands,
    add_completion=False,
    no_args_is_help=True,
    help="Answer questions over your documents, with page citations.",
)


console = Console()


err = Console(stderr=True)


IndexOption = Annotated[
    Optional[Path],
    typer.Option("--index", help="index folder (default: $PAGEGRAPH_INDEX, else ~/.local/share/pagegraph/index)"),
]


def _use_database(url: str | None) -> str | None:
    """--database-url sets PAGEGRAPH_DATABASE_URL for this process and what it starts (a server, a summarizer)."""
    if url:
        os.environ["PAGEGRAPH_DATABASE_URL"] = url
    return url


DatabaseOption = Annotated[
    Optional[str],
    typer.Option(
        "--database-url",
        callback=_use_database,
        show_default=False,
        help="postgresql://USER@HOST:PORT/DB with pgvector: use the index --index names in that database (default: "
        "$PAGEGRAPH_DATABASE_URL, which keeps the password out of your shell history; unset: the index folder)",
    ),
]
DocumentOption = Annotated[
    Optional[list[str]],
    typer.Option("--document", help="only search this document (file name or part of it); repeatable"),
]
DAY_FORMATS = ["%Y-%m-%d"]
SinceOption = Annotated[
    Optional[datetime],
    typer.Option(formats=DAY_FORMATS, help="only documents dated on or after this day (undated ones are left out)"),
]
UntilOption = Annotated[
    Optional[datetime],
    typer.Option(formats=DAY_FORMATS, help="only documents dated on or before this day (undated ones are left out)"),
]
ModelOption = Annotated[
    Optional[str],
    typer.Option(help="model spec: local, local-fast, ollama:NAME, openai:NAME, ... (default: $PAGEGRAPH_MODEL)"),
]
DebugOption = Annotated[bool, typer.Option("--debug", help="print each stage's trace record as it completes")]


def _print_version(asked: bool) -> None:
    if asked:
        console.print(f"pagegraph {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _setup(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log details")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    level = logging.INFO if verbose else logging.WARNING
    # the handler's level too: a library that sets its own logger to DEBUG when imported (bm25s does, after this
    # runs, as commands import what they need) has its lines dropped here
    handler = RichHandler(console=err, show_time=False, show_path=False, level=level)
    logging.basicConfig(level=level, format="%(message)s", handlers=[handler])
    for noisy in ("pypdf", "bm25s", "chromadb"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        get_settings()  # a variable every command reads: named in one line before any command starts
    except SettingsError as exc:
        raise fail(str(exc)) from None


def index_folder(index: Path | None, settings: Settings) -> Path:
    return (index or settings.index).expanduser().resolve()


def fail(message: str) -> typer.Exit:
    err.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(2)


def progress_bars(*columns: ProgressColumn) -> Progress:
    """Bars of long work: description, bar, done of total, a `detail` field, time elapsed, then `columns`."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        *columns,
        console=console,
        transient=True,
    )


def date_range(since: datetime | None, until: datetime | None) -> dict[str, RetrievalFilter]:
    """The run's `filters` input for --since/--until (none without them)."""
    if since is None and until is None:
        return {}
    if since is not None and until is not None and since > until:
        raise PagegraphError(f"--since {since:%Y-%m-%d} is after --until {until:%Y-%m-%d}")
    return {
        "filters": RetrievalFilter(date_from=since.date() if since else None, date_to=until.date() if until else None)
    }


def output_json(output: dict[str, Any]) -> str:
    """A run's output (or any dict of records) as JSON: pydantic records dumped as JSON data."""

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return json.dumps({key: plain(value) for key, value in output.items()})
