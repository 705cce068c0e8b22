"""`pagegraph ask` and `pagegraph chat`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated, Any, Optional, get_args

import typer
from rich.markup import escape

from pagegraph import GRAPH_NAMES, GRAPHS
from pagegraph.cli.answer_view import JsonLinesView, StreamedAnswer
from pagegraph.cli.common import (
    DatabaseOption,
    DebugOption,
    DocumentOption,
    IndexOption,
    ModelOption,
    SinceOption,
    UntilOption,
    app,
    console,
    date_range,
    err,
    fail,
    index_folder,
    output_json,
)
from pagegraph.config import Context, Settings, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.services import Services
from pagegraph.state.answering import OutputType
from pagegraph.store.index import delete_index, open_index, stored_manifest

OUTPUT_TYPES = ("answer", "blueprint", "pdr", "workflow", "build_plan")


GraphOption = Annotated[str, typer.Option(help="; ".join(f"{spec.name}: {spec.summary}" for spec in GRAPHS.values()))]


def _check_graph(graph: str) -> None:
    if graph not in GRAPH_NAMES:
        raise PagegraphError(f"--graph {graph!r}: choose from {', '.join(GRAPH_NAMES)}")


def _question_context(
    index: Path | None, model: str | None, output_type: str | None, settings: Settings
) -> tuple[Context, str | None]:
    if output_type is not None and output_type not in OUTPUT_TYPES:
        raise PagegraphError(f"--output-type {output_type!r}: choose from {', '.join(OUTPUT_TYPES)}")
    return Context(index=str(index_folder(index, settings)), model=model), output_type


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
    graph: Any,
    inputs: dict[str, Any],
    context: Context,
    debug: bool,
    config: dict[str, Any] | None = None,
    view: StreamedAnswer | JsonLinesView | None = None,
) -> dict[str, Any]:
    """Run a question; with `view`, show it as it happens; with `debug`, print each stage's trace record."""
    if not debug and view is None:
        return graph.invoke(inputs, config, context=context)
    from pagegraph.state.graph import OutputState

    final: dict[str, Any] = {}
    modes = ["updates", "messages", "values"] if view else ["updates", "values"]
    for namespace, mode, data in graph.stream(inputs, config, context=context, stream_mode=modes, subgraphs=True):
        if mode == "values":
            final = data if not namespace else final
            continue
        if debug and mode == "updates" and not set(data) & set(GRAPH_NAMES):
            _print_trace_records(data)  # a subgraph's update repeats the records its own stages streamed
        if view is not None:
            view.part(mode, data)
    return {key: final.get(key) for key in OutputState.__annotations__}


def _answer_question(
    graph: Any,
    inputs: dict[str, Any],
    context: Context,
    debug: bool,
    config: dict[str, Any] | None = None,
    json_lines: bool = False,
) -> None:
    """Ask and show the answer as the run goes: the stages and the evidence as they come, then the checked answer
    (on a terminal, the model's words too while it writes them; with `json_lines`, each as a JSON line)."""
    view = JsonLinesView() if json_lines else StreamedAnswer(console, preview=not debug, redraw=console.is_terminal)
    try:
        output = _run_question(graph, inputs, context, debug, config, view)
    finally:
        view.stop()
    view.finish(output)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    graph: GraphOption = "auto",
    model: ModelOption = None,
    document: DocumentOption = None,
    output_type: Annotated[
        Optional[str], typer.Option(help=f"{' | '.join(get_args(OutputType))} (default: answer)")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the output state as JSON (highlights, answer, citations, ...)")
    ] = False,
    json_lines: Annotated[
        bool,
        typer.Option(
            "--json-lines",
            help="print one JSON object a line as the run goes: each stage, the evidence, then the output as --json",
        ),
    ] = False,
    since: SinceOption = None,
    until: UntilOption = None,
    debug: DebugOption = False,
) -> None:
    """Answer a question from the indexed documents, with citations (or say that they do not hold the answer)."""
    from pagegraph import build_graph

    settings = get_settings()
    try:
        _check_graph(graph)
        if as_json and json_lines:
            raise PagegraphError("--json prints the output at the end, --json-lines as the run goes: choose one")
        context, kind = _question_context(index, model, output_type, settings)
        inputs: dict[str, Any] = {"question": question, **date_range(since, until)}
        if document:
            inputs["documents"] = document
        if kind:
            inputs["output_type"] = kind
        services = Services(settings)
        try:
            compiled = build_graph(graph, services=services)
            if as_json:
                console.print_json(output_json(_run_question(compiled, inputs, context, debug)))
            else:
                _answer_question(compiled, inputs, context, debug, json_lines=json_lines)
        finally:
            services.close()
    except PagegraphError as exc:
        raise fail(str(exc)) from None


def _prepare_chat_index(documents: Path, folder: Path, reuse: bool, force: bool, settings: Settings) -> None:
    """Index the chat's documents: incrementally by default, not at all with --reuse (when an index exists), from
    scratch with --force."""
    from pagegraph.cli.ingest_view import (
        ingest_with_progress,
        print_ingest_summary,
    )  # the ingest pipeline: only chat indexes

    exists = stored_manifest(folder, settings) is not None
    if reuse and exists:
        return
    if force and exists:
        delete_index(folder, settings)
    with open_index(folder, settings, write=True) as opened:
        summary = ingest_with_progress(opened, [documents])
        location = opened.location
    print_ingest_summary(summary, location)


@app.command()
def chat(
    documents: Annotated[
        Optional[Path], typer.Argument(help="folder (or file) to index first, into --index, if needed")
    ] = None,
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    graph: GraphOption = "auto",
    model: ModelOption = None,
    reuse: Annotated[bool, typer.Option("--reuse", help="with DOCUMENTS: use the existing index as it is")] = False,
    force: Annotated[bool, typer.Option("--force", help="with DOCUMENTS: rebuild the index from scratch")] = False,
    since: SinceOption = None,
    until: UntilOption = None,
    debug: DebugOption = False,
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
        dates = date_range(since, until)
        if documents is not None:
            _prepare_chat_index(documents, Path(context.index or settings.index), reuse, force, settings)
        services = Services(settings)
        compiled = build_graph(graph, services=services, checkpointer=InMemorySaver(serde=checkpoint_serializer()))
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    thread = {"configurable": {"thread_id": uuid.uuid4().hex}}
    console.print(f"[dim]index {context.index}; empty line or Ctrl-D to quit[/dim]", highlight=False)
    try:
        while question := _read_question():
            try:
                _answer_question(compiled, {"question": question, **dates}, context, debug, thread)
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
