"""How the CLI shows an ingest: progress bars of files, pages and chunks as they go, a line per finished file, and
the summary at the end."""

from __future__ import annotations

from pathlib import Path

from rich.progress import Progress, TaskID

from pagegraph.cli.common import console, err, progress_bars
from pagegraph.ingest.pipeline import FileOutcome, Ingestor, IngestProgress, IngestSummary
from pagegraph.state.documents import DocumentTags
from pagegraph.store.index import Index


class RichIngestProgress(IngestProgress):
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
        return Ingestor(index, RichIngestProgress(progress), declassify=declassify).run(paths, tags=tags, prune=prune)


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
