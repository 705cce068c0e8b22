"""`pagegraph` command line: ingest, ask, chat, inspect and eval."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich import box
from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.tree import Tree

from pagegraph.config import Context, Settings, get_settings
from pagegraph.errors import ModelError, PagegraphError
from pagegraph.indexing.index import Index, delete_index
from pagegraph.indexing.manifest import IndexParams, read_manifest
from pagegraph.indexing.pipeline import FileOutcome, Ingestor, IngestProgress, IngestSummary
from pagegraph.indexing.summaries import ExtractiveSummarizer, ModelSummarizer, Summarizer
from pagegraph.services import Services
from pagegraph.state.answering import StoredSummary
from pagegraph.state.records import DocumentRecord, DocumentTags, TreeNode

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Answer questions over your documents, with page citations."
)
console = Console()
err = Console(stderr=True)

IndexOption = Annotated[
    Optional[Path],
    typer.Option("--index", help="index folder (default: $PAGEGRAPH_INDEX, else ~/.local/share/pagegraph/index)"),
]


@app.callback()
def _setup(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="log details")] = False) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err, show_time=False, show_path=False)],
    )
    for noisy in ("pypdf", "bm25s", "chromadb"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def _index_folder(index: Path | None, settings: Settings) -> Path:
    return (index or settings.index).expanduser().resolve()


def _fail(message: str) -> typer.Exit:
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

    def summarizing(self, name: str) -> None:
        self._progress.update(self._files, description=f"files ({name}: writing its summary)")

    def file_finished(self, outcome: FileOutcome) -> None:
        self._progress.advance(self._files)
        self._progress.console.print(_outcome_line(outcome), highlight=False)


def _ingest_with_progress(
    index: Index,
    paths: list[Path],
    tags: DocumentTags | None = None,
    prune: bool = False,
    summarizer: Summarizer | None = None,
) -> IngestSummary:
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        return Ingestor(index, _RichProgress(progress), summarizer).run(paths, tags=tags, prune=prune)


def _summarizer(no_llm: bool, model: str | None, settings: Settings) -> Summarizer:
    if no_llm or (model is None and settings.ingest_summaries == "extractive"):
        return ExtractiveSummarizer()
    from pagegraph.llm.factory import get_chat_model

    return ModelSummarizer(get_chat_model(model, settings=settings))


def _outcome_line(outcome: FileOutcome) -> str:
    if outcome.status == "failed":
        return f"[red]✗ {outcome.name}: {outcome.reason}[/red]"
    if outcome.status == "skipped":
        return f"[yellow]- skipped {outcome.name}: {outcome.reason}[/yellow]"
    return f"[green]✓[/green] {outcome.name}: {outcome.status}, {outcome.pages} pages, {outcome.chunks} chunks"


def _print_summary(summary: IngestSummary, folder: Path) -> None:
    counts = ", ".join(
        f"{summary.count(status)} {status}"
        for status in ("added", "updated", "retagged", "unchanged", "removed", "failed", "skipped")
        if summary.count(status)
    )
    console.print(
        f"\n[bold]Ingested into {folder}[/bold]: {counts or 'nothing to do'} in {summary.seconds:.1f} s",
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
    for outcome in summary.failed:
        err.print(f"[red]failed: {outcome.name}: {outcome.reason}[/red]", highlight=False)


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
    strategy: Annotated[
        Optional[str], typer.Option(help="page: chunks never cross pages; document: they may [default: page]")
    ] = None,
    chunk_size: Annotated[Optional[int], typer.Option(help="target chunk length in characters [default: 1000]")] = None,
    chunk_overlap: Annotated[
        Optional[int], typer.Option(help="characters shared by neighbouring chunks [default: 200]")
    ] = None,
    heading_pattern: Annotated[
        Optional[str], typer.Option(help="Markdown heading regex with groups 'marks' (level) and 'title'")
    ] = None,
    project: Annotated[Optional[str], typer.Option(help="project tag for access filtering")] = None,
    source_type: Annotated[Optional[str], typer.Option(help="your label for these documents, e.g. manual")] = None,
    confidentiality: Annotated[
        Optional[str], typer.Option(help="public | internal | confidential [default: internal]")
    ] = None,
    tag: Annotated[Optional[list[str]], typer.Option(help="extra KEY=VALUE tag; repeatable")] = None,
    prune: Annotated[bool, typer.Option(help="drop indexed documents whose file no longer exists")] = False,
    rebuild_indexes: Annotated[
        bool, typer.Option(help="rebuild the vector and BM25 indexes from store.sqlite")
    ] = False,
    recreate: Annotated[
        bool, typer.Option(help="delete the index and build it again with this run's parameters")
    ] = False,
    no_llm: Annotated[
        bool, typer.Option("--no-llm", help="summarise documents without a model (title, outline, first sentences)")
    ] = False,
    model: Annotated[
        Optional[str], typer.Option(help="model that writes document summaries [default: $PAGEGRAPH_MODEL]")
    ] = None,
) -> None:
    """Index documents (PDF, Markdown, TXT, DOCX, VTT/SRT/JSON transcripts). Unchanged files are not re-embedded."""
    settings = get_settings()
    folder = _index_folder(index, settings)
    try:
        if strategy is not None and strategy not in ("page", "document"):
            raise PagegraphError(f"--strategy {strategy!r}: choose page or document")
        if confidentiality is not None and confidentiality not in ("public", "internal", "confidential"):
            raise PagegraphError(f"--confidentiality {confidentiality!r}: choose public, internal or confidential")
        if not paths and not (prune or rebuild_indexes):
            raise PagegraphError("name at least one file or folder to ingest (or use --prune / --rebuild-indexes)")
        overrides = {
            key: value
            for key, value in {
                "chunk_strategy": strategy,
                "chunk_size": chunk_size,
                "chunk_overlap": chunk_overlap,
                "heading_pattern": heading_pattern,
            }.items()
            if value is not None
        }
        manifest = read_manifest(folder)
        base = manifest.params if manifest and not recreate else IndexParams()
        params = IndexParams.model_validate({**base.model_dump(), **overrides})
        params.chunking()  # validates size against overlap before anything is written or deleted
        if recreate and manifest is not None:
            with Index(folder, settings, write=True) as old:
                old.vectors.drop()
            delete_index(folder)
        tags = None
        if any(v is not None for v in (project, source_type, confidentiality)) or tag:
            tags = DocumentTags(
                project=project,
                source_type=source_type,
                confidentiality=confidentiality or "internal",
                extra=_parse_tags(tag or []),
            )
        with Index(folder, settings, params, write=True) as opened:
            if rebuild_indexes:
                started = time.perf_counter()
                total = opened.rebuild_derived()
                console.print(
                    f"Rebuilt vector and BM25 indexes of {folder} from store.sqlite: {total} chunks in {time.perf_counter() - started:.1f} s"
                )
            if not paths and not prune:
                return
            summary = _ingest_with_progress(opened, paths or [], tags, prune, _summarizer(no_llm, model, settings))
    except ModelError as exc:
        raise _fail(
            f"writing document summaries: {exc}. Documents finished before this one are committed; "
            "run again once the model works, or with --no-llm"
        ) from None
    except (PagegraphError, ValueError) as exc:
        raise _fail(str(exc)) from None
    except KeyboardInterrupt:
        err.print(
            "[yellow]interrupted: documents finished so far are committed; run the same command to finish[/yellow]"
        )
        raise typer.Exit(130) from None
    for outcome in summary.outcomes:
        if outcome.status == "removed":
            console.print(f"[yellow]- removed {outcome.name}: file no longer exists[/yellow]", highlight=False)
        elif outcome.status == "skipped":
            console.print(_outcome_line(outcome), highlight=False)
    _print_summary(summary, folder)
    if summary.failed:
        raise typer.Exit(1)


@app.command("eval")
def evaluate(
    questions: Annotated[
        Path, typer.Argument(help="question set (JSONL rows: id, question, answerable, documents, ...)")
    ],
    index: IndexOption = None,
    docs: Annotated[
        Optional[Path], typer.Option(help="folder of the documents; ingested into --index when needed")
    ] = None,
    mode: Annotated[str, typer.Option(help="retrieval: rank chunks and score pages and documents")] = "retrieval",
    retriever: Annotated[
        Optional[list[str]], typer.Option(help="bm25 | dense | hybrid | hybrid+window | ensemble; repeatable")
    ] = None,
    scope: Annotated[
        str, typer.Option(help="document: search only each question's documents; corpus: everything")
    ] = "document",
    k: Annotated[str, typer.Option(help="cut-offs for hit@k, recall@k, doc_hit@k")] = "1,3,5,10,20",
    window: Annotated[int, typer.Option(help="neighbours on each side for hybrid+window")] = 1,
    limit: Annotated[Optional[int], typer.Option(help="only the first N questions")] = None,
    out: Annotated[Optional[Path], typer.Option(help="write the run as JSON")] = None,
    plot: Annotated[Optional[Path], typer.Option(help="write the hit@k curves as PNG")] = None,
) -> None:
    """Measure retrievers on a question set, side by side over one index; the run is stored in the index."""
    from pagegraph.eval.questions import load_questions
    from pagegraph.eval.report import plot_hit_curves, write_json
    from pagegraph.eval.retrieval import RETRIEVERS, RetrievalEvalConfig, run_retrieval_eval

    settings = get_settings()
    folder = _index_folder(index, settings)
    try:
        if mode != "retrieval":
            raise PagegraphError(f"--mode {mode!r}: this version evaluates retrieval only")
        if scope not in ("document", "corpus"):
            raise PagegraphError(f"--scope {scope!r}: choose document or corpus")
        names = retriever or ["bm25", "dense", "hybrid", "ensemble"]
        unknown = [name for name in names if name not in RETRIEVERS]
        if unknown:
            raise PagegraphError(f"--retriever {unknown[0]!r}: choose from {', '.join(RETRIEVERS)}")
        try:
            ks = sorted({int(part) for part in k.split(",") if part.strip()})
        except ValueError:
            raise PagegraphError(f"--k {k!r}: expected numbers separated by commas, e.g. 1,3,5,10") from None
        if not ks or ks[0] < 1:
            raise PagegraphError("--k: cut-offs must be at least 1")
        rows = load_questions(questions)[:limit]
        with Index(folder, settings, write=True) as opened:
            if docs is not None:
                summary = _ingest_with_progress(opened, [docs])
                if summary.failed:
                    err.print(
                        f"[yellow]{len(summary.failed)} documents failed to ingest; their questions score 0[/yellow]"
                    )
            config = RetrievalEvalConfig(
                retrievers=list(dict.fromkeys(names)), scope=scope, ks=tuple(ks), window=window
            )
            with Progress(
                TextColumn("questions"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            ) as progress:
                task = progress.add_task("questions", total=len(rows))
                run = run_retrieval_eval(opened, rows, config, on_question=lambda n: progress.update(task, completed=n))
            opened.store.add_eval_run(run)
    except (PagegraphError, ValueError) as exc:
        raise _fail(str(exc)) from None
    probe = 5 if 5 in ks else ks[-1]
    table = Table(
        "retriever",
        *(f"hit@{x}" for x in ks),
        "mrr",
        f"doc@{probe}",
        "p50 ms",
        "n",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    table.columns[0].no_wrap = True

    def cell(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    for name, metrics in run.summary.items():
        table.add_row(
            name,
            *(cell(metrics[f"hit@{x}"]) for x in ks),
            cell(metrics["mrr"]),
            cell(metrics[f"doc_hit@{probe}"]),
            f"{metrics['latency_ms_p50']:.1f}",
            str(metrics["n"]),
        )
    console.print(
        f"run {run.id}: {questions.name}, {scope} scope, {run.config['dropped_gold_pages']} gold pages dropped "
        "(not pages of the document)",
        highlight=False,
    )
    console.print(table)
    if out:
        write_json(run, out)
        console.print(f"wrote {out}")
    if plot:
        plot_hit_curves(run, plot)
        console.print(f"wrote {plot}")


OUTPUT_TYPES = ("answer", "blueprint", "pdr", "workflow", "build_plan")
GraphOption = Annotated[
    str,
    typer.Option(
        help="auto: small_model for models marked small (the local ones), else rag; rag: router, planner, hybrid "
        "retrieval; small_model: one chunk per model call, answer from extracted facts; basic: plain RAG"
    ),
]


def _check_graph(graph: str) -> None:
    from pagegraph import GRAPH_NAMES

    if graph not in GRAPH_NAMES:
        raise PagegraphError(f"--graph {graph!r}: choose from {', '.join(GRAPH_NAMES)}")


def _question_context(
    index: Path | None, model: str | None, output_type: str | None, settings: Settings
) -> tuple[Context, str | None]:
    if output_type is not None and output_type not in OUTPUT_TYPES:
        raise PagegraphError(f"--output-type {output_type!r}: choose from {', '.join(OUTPUT_TYPES)}")
    return Context(index=str(_index_folder(index, settings)), model=model), output_type


def _print_answer(output: dict[str, Any]) -> None:
    console.print(output["answer"], highlight=False, markup=False)
    if output["citations"]:
        console.print("\n[bold]Sources[/bold]")
        for citation in output["citations"]:
            note = "" if citation.origin == "model" else " [dim](attributed)[/dim]"
            console.print(f"  {escape(citation.label)}{note}", highlight=False)
    if not output["abstained"]:
        usage = output["usage"]
        console.print(
            f"[dim]confidence {output['confidence']:.2f}; {usage.calls} model calls, "
            f"{usage.prompt_tokens}+{usage.completion_tokens} tokens, {usage.latency_ms / 1000:.1f} s in the model[/dim]",
            highlight=False,
        )
        if output["low_confidence"]:
            console.print(
                "[bold yellow]warning: low confidence — little of this answer appears in the cited sources; "
                "check them before relying on it[/bold yellow]"
            )


def _print_trace_records(update: dict[str, Any]) -> None:
    for node_update in update.values():
        for record in (node_update or {}).get("trace") or []:
            cost = f", {len(record.calls)} model calls" if record.calls else ""
            err.print(
                f"[cyan]{escape(record.stage)}[/cyan] {escape(record.summary)} [dim]({record.latency_ms:.0f} ms{cost})[/dim]",
                highlight=False,
            )
            if record.error:
                err.print(f"  [red]{escape(record.error)}[/red]", highlight=False)


def _run_question(
    graph: Any, inputs: dict[str, Any], context: Context, debug: bool, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    if not debug:
        return graph.invoke(inputs, config, context=context)
    from pagegraph.state.graph import OutputState

    final: dict[str, Any] = {}
    for mode, chunk in graph.stream(inputs, config, context=context, stream_mode=["updates", "values"]):
        if mode == "updates":
            _print_trace_records(chunk)
        else:
            final = chunk
    return {key: final.get(key) for key in OutputState.__annotations__}


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    index: IndexOption = None,
    graph: GraphOption = "rag",
    model: Annotated[
        Optional[str],
        typer.Option(help="model spec: local, local-fast, ollama:NAME, openai:NAME, ... [default: $PAGEGRAPH_MODEL]"),
    ] = None,
    document: Annotated[
        Optional[list[str]],
        typer.Option("--document", help="only search this document (file name or part of it); repeatable"),
    ] = None,
    output_type: Annotated[
        Optional[str], typer.Option(help="answer | blueprint | pdr | workflow | build_plan [default: answer]")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the whole output state as JSON")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="print each stage's trace record as it completes")] = False,
) -> None:
    """Answer a question from the indexed documents, with citations (or say that they do not hold the answer)."""
    from pagegraph import build_graph

    settings = get_settings()
    try:
        _check_graph(graph)
        context, kind = _question_context(index, model, output_type, settings)
        inputs: dict[str, Any] = {"question": question}
        if document:
            inputs["documents"] = document
        if kind:
            inputs["output_type"] = kind
        services = Services(settings)
        try:
            output = _run_question(build_graph(graph, services=services), inputs, context, debug)
        finally:
            services.close()
    except PagegraphError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        console.print_json(_output_json(output))
        return
    _print_answer(output)


def _prepare_chat_index(
    documents: Path, folder: Path, reuse: bool, force: bool, model: str | None, settings: Settings
) -> None:
    """Index the chat's documents: incrementally by default, not at all with --reuse (when an index exists), from
    scratch with --force."""
    exists = read_manifest(folder) is not None
    if reuse and exists:
        return
    if force and exists:
        with Index(folder, settings, write=True) as old:
            old.vectors.drop()
        delete_index(folder)
    with Index(folder, settings, write=True) as opened:
        summary = _ingest_with_progress(opened, [documents], summarizer=_summarizer(False, model, settings))
    _print_summary(summary, folder)


def _output_json(output: dict[str, Any]) -> str:
    from pydantic import BaseModel

    def plain(value: Any) -> Any:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    return json.dumps({key: plain(value) for key, value in output.items()})


@app.command()
def chat(
    documents: Annotated[
        Optional[Path], typer.Argument(help="folder (or file) to index first, into --index, if needed")
    ] = None,
    index: IndexOption = None,
    graph: GraphOption = "rag",
    model: Annotated[Optional[str], typer.Option(help="model spec [default: $PAGEGRAPH_MODEL]")] = None,
    reuse: Annotated[bool, typer.Option("--reuse", help="with DOCUMENTS: use the existing index as it is")] = False,
    force: Annotated[bool, typer.Option("--force", help="with DOCUMENTS: rebuild the index from scratch")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="print each stage's trace record as it completes")] = False,
) -> None:
    """Ask questions one after another; earlier turns are kept as context for follow-ups. Empty line or Ctrl-D ends."""
    from langgraph.checkpoint.memory import InMemorySaver

    from pagegraph import build_graph
    from pagegraph.state.graph import checkpoint_serializer

    settings = get_settings()
    try:
        _check_graph(graph)
        if reuse and force:
            raise PagegraphError("--reuse and --force exclude each other")
        context, _ = _question_context(index, model, None, settings)
        if documents is not None:
            _prepare_chat_index(documents, Path(context.index or settings.index), reuse, force, model, settings)
        services = Services(settings)
        compiled = build_graph(graph, services=services, checkpointer=InMemorySaver(serde=checkpoint_serializer()))
    except ModelError as exc:
        raise _fail(f"writing document summaries: {exc}; or run `pagegraph ingest --no-llm` first") from None
    except PagegraphError as exc:
        raise _fail(str(exc)) from None
    thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
    console.print(f"[dim]index {context.index}; empty line or Ctrl-D to quit[/dim]", highlight=False)
    try:
        while question := _read_question():
            try:
                _print_answer(_run_question(compiled, {"question": question}, context, debug, thread))
            except PagegraphError as exc:
                err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
            console.print()
    finally:
        services.close()


def _read_question() -> str:
    """The next question; empty at an empty line, Ctrl-D or Ctrl-C."""
    try:
        return console.input("[bold]? [/bold]").strip()
    except (EOFError, KeyboardInterrupt):
        console.print()
        return ""


def _document_row(doc: DocumentRecord) -> dict[str, object]:
    return {
        "name": doc.name,
        "path": doc.path,
        "type": doc.source_type.value,
        "title": doc.title,
        "pages": doc.n_pages,
        "chunks": doc.n_chunks,
        "tree_nodes": doc.n_nodes,
        "tree_source": doc.outline_source,
        "tags": doc.tags.model_dump(exclude_defaults=False),
        "status": "indexed",
        "ingested_at": doc.ingested_at,
    }


@app.command()
def inspect(
    index: IndexOption = None,
    document: Annotated[Optional[str], typer.Option(help="one document, by file name (or part of it)")] = None,
    tree: Annotated[bool, typer.Option("--tree", help="show the document's section tree")] = False,
    summaries: Annotated[
        bool, typer.Option("--summaries", help="show each document's summary (what the router reads)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Show what an index holds: documents with pages, chunks, tree nodes and status."""
    settings = get_settings()
    folder = _index_folder(index, settings)
    try:
        with Index(folder, settings) as opened:
            documents = opened.store.documents()
            failures = opened.store.failures()
            if document is not None:
                documents = [_find_document(documents, document)]
            if tree and document is None:
                raise PagegraphError("--tree needs --document NAME")
            if tree:
                nodes = opened.store.tree(documents[0].id)
                _show_tree(documents[0], nodes, as_json)
                return
            if summaries:
                _show_summaries(documents, opened.store.summaries(), as_json)
                return
            info = {
                "index": str(folder),
                "manifest": opened.manifest.model_dump(),
                "documents": [_document_row(doc) for doc in documents],
                "failed": [
                    {"name": name, "path": path, "status": f"failed: {reason}"} for path, name, reason in failures
                ],
                "vectors": opened.vectors.count(),
                "bm25": "current" if not opened.bm25_is_stale() else "stale (rebuilt by the next ingest)",
            }
    except PagegraphError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        console.print_json(json.dumps(info))
        return
    params = opened.params
    console.print(
        f"[bold]{folder}[/bold]  {len(documents)} documents, {sum(d.n_chunks for d in documents)} chunks, "
        f"{info['vectors']} vectors, BM25 {info['bm25']}",
        highlight=False,
    )
    console.print(
        f"  {params.embedding_model} ({params.embedding_dimension} d, {opened.manifest.embedding_backend}); "
        f"{params.chunk_strategy} chunks of {params.chunk_size} chars, overlap {params.chunk_overlap}, "
        f"at most {params.chunk_max_tokens} word-pieces",
        highlight=False,
    )
    table = Table("document", "type", "pages", "chunks", "tree", "tags", "status")
    for column in (table.columns[0], table.columns[5]):
        column.overflow = "fold"
    for doc in documents:
        table.add_row(
            doc.name,
            doc.source_type.value,
            str(doc.n_pages),
            str(doc.n_chunks),
            f"{doc.n_nodes} from {doc.outline_source}",
            " ".join(f"{k}={v}" for k, v in _flat_tags(doc.tags).items()),
            "[green]indexed[/green]",
        )
    console.print(table)
    for _, name, reason in failures if document is None else []:
        console.print(f"[red]✗ {name}: failed: {reason}[/red]", highlight=False)


def _show_summaries(documents: list[DocumentRecord], stored: dict[str, StoredSummary], as_json: bool) -> None:
    if as_json:
        console.print_json(
            json.dumps({doc.name: stored[doc.id].model_dump() if doc.id in stored else None for doc in documents})
        )
        return
    for doc in documents:
        summary = stored.get(doc.id)
        if summary is None:
            console.print(f"[bold]{doc.name}[/bold]: no summary yet (the next ingest writes one)\n", highlight=False)
            continue
        source = f"by {summary.model}" if summary.method == "model" else "extracted without a model"
        console.print(f"[bold]{doc.name}[/bold] — {summary.document_type} [dim]({source})[/dim]", highlight=False)
        console.print(f"  {summary.summary}", highlight=False)
        if summary.key_topics:
            console.print(f"  topics: {', '.join(summary.key_topics)}", highlight=False)
        if summary.use_for:
            console.print(f"  use for: {summary.use_for}", highlight=False)
        console.print()


def _flat_tags(tags: DocumentTags) -> dict[str, str]:
    named = {"project": tags.project, "type": tags.source_type, "access": tags.confidentiality}
    return {**{k: v for k, v in named.items() if v}, **tags.extra}


def _find_document(documents: list[DocumentRecord], name: str) -> DocumentRecord:
    exact = [doc for doc in documents if doc.name == name or doc.path == name]
    matches = exact or [doc for doc in documents if name.lower() in doc.name.lower()]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise PagegraphError(f"no indexed document matches {name!r}")
    raise PagegraphError(f"{name!r} matches several documents: {', '.join(doc.name for doc in matches)}")


def _show_tree(doc: DocumentRecord, nodes: list[TreeNode], as_json: bool) -> None:
    if as_json:
        console.print_json(
            json.dumps([node.model_dump(exclude={"text"}) | {"chars": len(node.text)} for node in nodes])
        )
        return
    by_id = {node.id: node for node in nodes}

    def label(node: TreeNode) -> str:
        pages = f"p. {node.start_page}" if node.start_page == node.end_page else f"p. {node.start_page}–{node.end_page}"
        return f"{node.title} [dim]({pages}, {len(node.text)} chars)[/dim]"

    root = Tree(label(nodes[0]))
    branches = {nodes[0].id: root}
    for node in nodes[1:]:
        branches[node.id] = branches[by_id[node.parent_id].id].add(label(node))
    console.print(f"[bold]{doc.name}[/bold]: tree from {doc.outline_source}, {len(nodes)} nodes", highlight=False)
    console.print(root)


def main() -> None:
    app()
