"""What every command shares: the Typer app, consoles, the index option, error exit, ingestion with progress."""

from __future__ import annotations

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
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from pagegraph.access.records import RetrievalFilter
from pagegraph.config import Settings, SettingsError, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.indexing.index import Index
from pagegraph.indexing.pipeline import FileOutcome, Ingestor, IngestProgress, IngestSummary
from pagegraph.state.documents import DocumentTags
from pagegraph.version import __version__

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Answer questions over your documents, with page citations."
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
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_time=False, show_path=False)],
    )
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


class _RichProgress(IngestProgress):
    """Files, pages and chunks as they go, with the embedding rate; one line per finished file."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._files: TaskID = progress.add_task("files", total=0, detail="")
        self._chunks: TaskID = progress.add_task("chunks embedded", total=0, detail="")
        self._pages = 0
        self._embedded = 0
        self._embed_seconds = 0.0

    def start(self, total_files: int) -> None:
        self._progress.update(self._files, total=total_files)

    def file_started(self, path: Path) -> None:
        self._progress.update(self._files, description=f"files ({path.name})")

    def pages_parsed(self, pages: int) -> None:
        self._pages += pages
        self._progress.update(self._files, detail=f"{self._pages} pages")

    def chunks_planned(self, chunks: int) -> None:
        total = self._progress.tasks[self._chunks].total or 0
        self._progress.update(self._chunks, total=total + chunks)

    def chunks_embedded(self, chunks: int, seconds: float) -> None:
        self._embedded += chunks
        self._embed_seconds += seconds
        rate = f"{self._embedded / self._embed_seconds:.1f} chunks/s" if self._embed_seconds else ""
        self._progress.update(self._chunks, advance=chunks, detail=rate)

    def file_finished(self, outcome: FileOutcome) -> None:
        self._progress.advance(self._files)
        self._progress.console.print(outcome_line(outcome), highlight=False)


def ingest_with_progress(
    index: Index,
    paths: list[Path],
    tags: DocumentTags | None = None,
    prune: bool = False,
    declassify: bool = False,
) -> IngestSummary:
    with progress_bars() as progress:
        return Ingestor(index, _RichProgress(progress), declassify=declassify).run(paths, tags=tags, prune=prune)


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


def outcome_line(outcome: FileOutcome) -> str:
    if outcome.status == "failed":
        return f"[red]✗ {outcome.name}: {outcome.reason}[/red]"
    if outcome.status == "skipped":
        return f"[yellow]- skipped {outcome.name}: {outcome.reason}[/yellow]"
    return f"[green]✓[/green] {outcome.name}: {outcome.status}, {outcome.pages} pages, {outcome.chunks} chunks"


def print_ingest_summary(summary: IngestSummary, location: str) -> None:
    """`location`: where the index is, for people (`Index.location`: its folder, or its schema in a database)."""
    counts = ", ".join(
        f"{summary.count(status)} {status}"
        for status in ("added", "updated", "retagged", "unchanged", "removed", "failed", "skipped")
        if summary.count(status)
    )
    console.print(
        f"\n[bold]Ingested into {location}[/bold]: {counts or 'nothing to do'} in {summary.seconds:.1f} s",
        highlight=False,
    )
    if summary.pages_parsed:
        console.print(
            f"  parsing: {summary.pages_parsed} pages at {summary.pages_parsed / max(summary.parse_seconds, 1e-9):.1f} pages/s"
        )
    if summary.chunks_embedded:
        console.print(
            f"  embedding: {summary.chunks_embedded} chunks at {summary.chunks_embedded / max(summary.embed_seconds, 1e-9):.1f} chunks/s; "
            f"end to end {summary.chunks_embedded / max(summary.seconds, 1e-9):.1f} chunks/s"
        )
    if unread := summary.unread_by_embedder:
        console.print(
            f"[yellow]note: {len(unread)} document(s) are mostly in a script this index's English embedder does not "
            f"read ({', '.join(unread[:3])}{', ...' if len(unread) > 3 else ''}): keyword search finds them; to find "
            "them by meaning too, build the index with `--embedder multilingual-e5` (with `--recreate`)[/yellow]",
            highlight=False,
        )
    for outcome in summary.failed:
        err.print(f"[red]failed: {outcome.name}: {outcome.reason}[/red]", highlight=False)


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
