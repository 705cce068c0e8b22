"""`pagegraph ingest`."""

from __future__ import annotations

import time
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.markup import escape

from pagegraph.cli.common import (
    DAY_FORMATS,
    DatabaseOption,
    IndexOption,
    app,
    console,
    err,
    fail,
    index_folder,
    progress_bars,
)
from pagegraph.cli.ingest_view import ingest_with_progress, outcome_line, print_ingest_summary
from pagegraph.cli.summarize import print_refine_report, summarize_with_progress, summary_model
from pagegraph.config import Settings, get_settings
from pagegraph.errors import ModelError, PagegraphError
from pagegraph.ingest.pipeline import Ingestor, IngestSummary
from pagegraph.ingest.transfer import copy_index
from pagegraph.llm.embedder import MAX_TOKENS_OF, embedding_model
from pagegraph.state.documents import DocumentRecord, DocumentTags
from pagegraph.store.index import Index, delete_index, open_index, stored_manifest
from pagegraph.store.manifest import IndexParams


def _parse_tags(tags: list[str]) -> dict[str, str]:
    parsed = {}
    for item in tags:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PagegraphError(f"--tag {item!r}: expected KEY=VALUE")
        parsed[key.strip()] = value.strip()
    return parsed


@app.command()
def ingest(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="files or folders to index", show_default=False)] = None,
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    strategy: Annotated[
        Optional[str], typer.Option(help="page: chunks never cross pages; document: they may (default: page)")
    ] = None,
    chunk_size: Annotated[Optional[int], typer.Option(help="target chunk length in characters (default: 1000)")] = None,
    chunk_overlap: Annotated[
        Optional[int], typer.Option(help="characters shared by neighbouring chunks (default: 200)")
    ] = None,
    heading_pattern: Annotated[
        Optional[str], typer.Option(help="Markdown heading regex with groups 'marks' (level) and 'title'")
    ] = None,
    embedder: Annotated[
        Optional[str],
        typer.Option(
            help="a new index's embedder: minilm (English, fastest) or multilingual-e5 (about 100 languages, needs "
            "Linux x86_64); an index keeps the one it was built with (default: minilm)"
        ),
    ] = None,
    project: Annotated[Optional[str], typer.Option(help="project tag for access filtering")] = None,
    source_type: Annotated[Optional[str], typer.Option(help="your label for these documents, e.g. manual")] = None,
    confidentiality: Annotated[
        Optional[str], typer.Option(help="public | internal | confidential (default: internal)")
    ] = None,
    tag: Annotated[Optional[list[str]], typer.Option(help="extra KEY=VALUE tag; repeatable")] = None,
    date: Annotated[
        Optional[datetime],
        typer.Option(
            formats=DAY_FORMATS, help="the documents' date, for --since/--until (default: a PDF's or DOCX's own)"
        ),
    ] = None,
    prune: Annotated[
        bool,
        typer.Option(
            help="drop indexed documents whose file no longer exists, under the files and folders named (none named: in the whole index)"
        ),
    ] = False,
    declassify: Annotated[
        bool,
        typer.Option(help="let --confidentiality lower the level of documents already indexed (refused otherwise)"),
    ] = False,
    from_index: Annotated[
        Optional[Path],
        typer.Option(
            help="copy this index folder's documents (with their vectors, summaries and eval runs) into --index "
            "without re-reading or re-embedding them, e.g. into a database (--database-url)",
            show_default=False,
        ),
    ] = None,
    rebuild_indexes: Annotated[
        bool,
        typer.Option(
            help="rebuild the vector and BM25 indexes from store.sqlite (with a database: this machine's BM25)"
        ),
    ] = False,
    recreate: Annotated[
        bool, typer.Option(help="delete the index and build it again with this run's parameters")
    ] = False,
    summaries: Annotated[
        Optional[str],
        typer.Option(
            help="extractive: documents are committed with summaries taken from their text; model: then the model "
            "rewrites them (`pagegraph summarize`) (default: $PAGEGRAPH_INGEST_SUMMARIES, i.e. extractive)"
        ),
    ] = None,
    model: Annotated[
        Optional[str],
        typer.Option(help="with --summaries model: the model that writes them (default: $PAGEGRAPH_MODEL)"),
    ] = None,
    ocr: Annotated[
        bool,
        typer.Option(
            help="read PDF pages that have no text layer with OCR (Tesseract, when installed); --no-ocr leaves them "
            "empty and refuses image-only PDFs (default: on unless PAGEGRAPH_OCR=off)"
        ),
    ] = True,
    tables: Annotated[
        bool,
        typer.Option(
            help="put ruled tables of PDF pages into the text as Markdown rows with their header; --no-tables keeps "
            "the text layer's flat text (default: on unless PAGEGRAPH_PDF_TABLES=false)"
        ),
    ] = True,
) -> None:
    """Index documents (PDF, Markdown, TXT, DOCX, VTT/SRT/JSON transcripts). Unchanged files are not re-embedded.
    Each document is searchable once it is committed; model-written summaries come after (--summaries model)."""
    settings = get_settings()
    if not ocr:
        settings = settings.with_changes(ingest={"ocr": "off"})
    if not tables:
        settings = settings.with_changes(ingest={"pdf_tables": False})
    folder = index_folder(index, settings)
    summaries = summaries or settings.ingest.ingest_summaries
    try:
        _check_choices(summaries, strategy, confidentiality)
        if not paths and not (prune or rebuild_indexes or from_index):
            raise PagegraphError(
                "name at least one file or folder to ingest (or use --from-index / --prune / --rebuild-indexes)"
            )
        overrides = {
            key: value
            for key, value in {
                "chunk_strategy": strategy,
                "chunk_size": chunk_size,
                "chunk_overlap": chunk_overlap,
                "heading_pattern": heading_pattern,
                **_embedder_params(embedder),
            }.items()
            if value is not None
        }
        if from_index is not None and overrides:
            raise PagegraphError("--from-index keeps the parameters the copied index was built with")
        tags = _document_tags(project, source_type, confidentiality, date, tag)
        with ExitStack() as stack:
            source = stack.enter_context(_source_index(from_index, folder, settings)) if from_index else None
            manifest = stored_manifest(folder, settings)
            base = source.params if source else manifest.params if manifest and not recreate else IndexParams()
            params = _index_params(base, overrides)
            params.chunking()  # validates size against overlap before anything is written or deleted
            if recreate and manifest is not None:
                delete_index(folder, settings)
            with open_index(folder, settings, params, write=True, wait_for_writer=_waiting) as opened:
                if source is not None:
                    _copy_from(source, opened)
                if rebuild_indexes:
                    _rebuild(opened)
                if not paths and not prune:
                    return
                summary = ingest_with_progress(opened, paths or [], tags, prune, declassify)
                location = opened.location
    except (PagegraphError, ValueError) as exc:
        raise fail(str(exc)) from None
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted: documents finished so far are committed; run the same command to finish[/yellow]"
        )
        raise typer.Exit(130) from None
    _print_outcomes(summary, location)
    ingested = [o.name for o in summary.outcomes if o.status in ("added", "updated")]
    if summaries == "model" and ingested:
        _write_model_summaries(folder, settings, model, ingested)
    if summary.failed:
        raise typer.Exit(1)


@app.command()
def remove(
    documents: Annotated[list[str], typer.Argument(help="document names, as `pagegraph inspect` lists them, or paths")],
    index: IndexOption = None,
) -> None:
    """Remove documents from the index, with their chunks, vectors and keyword postings (their files stay where they
    are; `ingest` adds them again)."""
    settings = get_settings()
    folder = index_folder(index, settings)
    try:
        if stored_manifest(folder, settings) is None:
            raise PagegraphError(f"no index at {folder}: nothing to remove")
        with open_index(folder, settings, write=True, wait_for_writer=_waiting) as opened:
            outcomes = Ingestor(opened).remove(documents)
    except (PagegraphError, ValueError) as exc:
        raise fail(str(exc)) from None
    for outcome in outcomes:
        console.print(outcome_line(outcome))
    if any(outcome.status == "failed" for outcome in outcomes):
        raise typer.Exit(1)


def _waiting(reason: str) -> None:
    err.print(f"[yellow]{escape(reason)}: waiting for it to finish (its files are then found unchanged)[/yellow]")


_OPTION_OF = {"chunk_strategy": "--strategy", "embedding_model": "--embedder"}


def _embedder_params(name: str | None) -> dict:
    if name is None:
        return {}
    model = embedding_model(name)
    return {"embedding_model": model, "embedding_max_tokens": MAX_TOKENS_OF[model]}


def _index_params(base: IndexParams, overrides: dict) -> IndexParams:
    """The index parameters with the command's options over them; a bad option is named as it was typed."""
    try:
        return IndexParams.model_validate({**base.model_dump(), **overrides})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else ""
            option = _OPTION_OF.get(field, "--" + field.replace("_", "-"))
            problems.append(f"{option} {error.get('input')!r}: {error['msg'].lower()}")
        raise PagegraphError("; ".join(problems)) from None


def _check_choices(summaries: str, strategy: str | None, confidentiality: str | None) -> None:
    if summaries not in ("extractive", "model"):
        raise PagegraphError(f"--summaries {summaries!r}: choose extractive or model")
    if strategy is not None and strategy not in ("page", "document"):
        raise PagegraphError(f"--strategy {strategy!r}: choose page or document")
    if confidentiality is not None and confidentiality not in ("public", "internal", "confidential"):
        raise PagegraphError(f"--confidentiality {confidentiality!r}: choose public, internal or confidential")


def _document_tags(
    project: str | None,
    source_type: str | None,
    confidentiality: str | None,
    date: datetime | None,
    tag: list[str] | None,
) -> DocumentTags | None:
    """The tags the command gives; None when it gives none (documents already indexed keep theirs)."""
    if all(v is None for v in (project, source_type, confidentiality, date)) and not tag:
        return None
    return DocumentTags.model_validate(  # the option's text, checked against the levels here
        {
            "project": project,
            "source_type": source_type,
            "confidentiality": confidentiality or "internal",
            "date": date.date() if date else None,
            "extra": _parse_tags(tag or []),
        }
    )


def _rebuild(opened: Index) -> None:
    started = time.perf_counter()
    total = opened.rebuild_derived()
    console.print(
        f"Rebuilt the vector and keyword indexes of {opened.location} from its records: {total} chunks in "
        f"{time.perf_counter() - started:.1f} s"
    )


def _print_outcomes(summary: IngestSummary, location: str) -> None:
    for outcome in summary.outcomes:
        if outcome.status == "removed":
            console.print(f"[yellow]- removed {outcome.name}: file no longer exists[/yellow]", highlight=False)
        elif outcome.status == "skipped":
            console.print(outcome_line(outcome), highlight=False)
    print_ingest_summary(summary, location)


def _write_model_summaries(folder: Path, settings: Settings, model: str | None, ingested: list[str]) -> None:
    console.print("Every document is searchable now; the model writes their summaries next (Ctrl-C stops it, "
                  "`pagegraph summarize` goes on).")  # fmt: skip
    try:
        print_refine_report(summarize_with_progress(folder, settings, summary_model(model, settings), ingested))
    except ModelError as exc:
        raise fail(f"writing summaries: {exc}. The documents are indexed; run `pagegraph summarize` later") from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted: the summaries written so far are kept; `pagegraph summarize` goes on[/yellow]")
        raise typer.Exit(130) from None


def _source_index(folder: Path, target: Path, settings: Settings) -> Index:
    """The index folder --from-index names, opened read-only as a folder whatever the target is."""
    source = folder.expanduser().resolve()
    if source == target and not settings.storage.database_url:
        raise PagegraphError(f"--from-index {folder}: that is the index being written")
    return open_index(source, settings.with_changes(storage={"database_url": None}))


def _copy_from(source: Index, target: Index) -> None:
    with progress_bars() as bars:
        task = bars.add_task("copying", total=len(source.documents()), detail="")

        def copied(document: DocumentRecord, written: bool) -> None:
            bars.update(task, advance=1, detail=document.name if written else f"{document.name} (already there)")

        report = copy_index(source, target, copied)
    console.print(
        f"Copied {report.copied} documents ({report.chunks} chunks, vectors included) from {source.folder}; "
        f"{report.unchanged} were already there; {report.eval_runs} eval runs.",
        highlight=False,
    )
