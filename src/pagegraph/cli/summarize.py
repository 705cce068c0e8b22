"""`pagegraph summarize`: model-written summaries for an index that is already searchable."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from langchain_core.language_models import BaseChatModel
from rich.progress import (
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from pagegraph.cli.common import DatabaseOption, IndexOption, app, console, err, fail, index_folder, progress_bars
from pagegraph.config import Settings, get_settings
from pagegraph.errors import ModelError, PagegraphError
from pagegraph.ingest.refine import RefineProgress, RefineReport, SummaryRefiner
from pagegraph.store.index import stored_manifest


class _RichRefineProgress(RefineProgress):
    """One bar over every summary left to write, with the time remaining at the pace so far."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID = progress.add_task("summaries", total=0, detail="")

    def start(self, total: int) -> None:
        self._progress.update(self._task, total=total)

    def document_started(self, name: str) -> None:
        self._progress.update(self._task, description=f"summaries ({name})")

    def summary_written(self, name: str, what: str, seconds: float) -> None:
        self._progress.update(self._task, advance=1, detail=f"{what[:40]} ({seconds:.0f} s)")


def summary_model(model_spec: str | None, settings: Settings) -> BaseChatModel:
    from pagegraph.llm.factory import get_chat_model

    return get_chat_model(model_spec, settings=settings)


def summarize_with_progress(
    folder: Path, settings: Settings, model: BaseChatModel, documents: list[str] | None, sections: bool = True
) -> RefineReport:
    with progress_bars(TextColumn("left"), TimeRemainingColumn()) as progress:
        with SummaryRefiner(folder, settings, model, _RichRefineProgress(progress)) as refiner:
            return refiner.run(documents, sections)


def print_refine_report(report: RefineReport) -> None:
    if not report.model_calls and not report.sections and not report.summaries:
        console.print("Every summary is already the model's.")
        return
    console.print(
        f"Wrote {report.summaries} document and {report.sections} section summaries for {report.documents} "
        f"documents ({report.model_calls} model calls) in {report.seconds:.0f} s.",
        highlight=False,
    )
    for what in report.unreadable:
        console.print(f"[yellow]- {what}: the model's reply could not be read; the extractive one stays[/yellow]")
    for name in report.gone:
        console.print(f"[yellow]- {name}: removed or re-ingested meanwhile; run again to summarise it[/yellow]")


@app.command()
def summarize(
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    document: Annotated[
        Optional[list[str]], typer.Option(help="only this document (its file name); repeatable")
    ] = None,
    model: Annotated[
        Optional[str], typer.Option(help="model that writes the summaries (default: $PAGEGRAPH_MODEL)")
    ] = None,
    watch: Annotated[
        Optional[float],
        typer.Option(help="keep running: look for documents without model summaries every SECONDS", min=1.0),
    ] = None,
    documents_only: Annotated[
        bool,
        typer.Option(
            "--documents-only", help="only the document summaries (what the router reads); sections on a later run"
        ),
    ] = False,
) -> None:
    """Replace the extractive summaries ingest wrote with the model's, one summary at a time: questions can be
    asked meanwhile, another ingest may run, and a stopped run goes on where it left off."""
    settings = get_settings()
    folder = index_folder(index, settings)
    try:
        chat_model = summary_model(model, settings)
        while True:
            if watch is not None and stored_manifest(folder, settings) is None:  # serving before the first ingest
                time.sleep(watch)
                continue
            report = summarize_with_progress(folder, settings, chat_model, document, sections=not documents_only)
            if watch is None or report.model_calls or report.sections or report.summaries:
                print_refine_report(report)
            if watch is None:
                return
            time.sleep(watch)
    except ModelError as exc:
        raise fail(f"writing summaries: {exc}. Those written so far are kept; run again once the model works") from None
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: the summaries written so far are kept; run again to go on[/yellow]")
        raise typer.Exit(130) from None
