"""`pagegraph search`: the passages and sentences a query finds, ranked, with no model call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from pagegraph.cli.common import (
    DatabaseOption,
    DocumentOption,
    IndexOption,
    SinceOption,
    UntilOption,
    app,
    console,
    date_range,
    fail,
    index_folder,
    output_json,
)
from pagegraph.config import Context, get_settings
from pagegraph.errors import PagegraphError
from pagegraph.state.documents import clipped

if TYPE_CHECKING:
    from pagegraph.state.answering import Evidence, Highlight

SNIPPET_CHARS = 240


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="what to look for: a question or a few words")],
    index: IndexOption = None,
    database_url: DatabaseOption = None,
    document: DocumentOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the passages and highlighted sentences as JSON")
    ] = False,
    since: SinceOption = None,
    until: UntilOption = None,
) -> None:
    """Show the passages a query finds, best first, with document, section, page and the sentences most likely to
    answer it. No model is called: use it to check what your documents hold before asking."""
    from pagegraph.graphs.search import build_search_graph
    from pagegraph.services import Services

    settings = get_settings()
    try:
        context = Context(index=str(index_folder(index, settings)))
        inputs: dict[str, Any] = {"question": query, **date_range(since, until)}
        if document:
            inputs["documents"] = document
        services = Services(settings)
        try:
            if not services.has_index(context):
                raise PagegraphError(f"no index at {context.index}: run `pagegraph ingest FOLDER` first")
            found = build_search_graph(services).invoke(inputs, context=context)
        finally:
            services.close()
    except PagegraphError as exc:
        raise fail(str(exc)) from None
    if as_json:
        console.print_json(output_json({"passages": found["retrieved"], "highlights": found["highlights"]}))
    else:
        spelling: dict[str, str] = next((r.details["spelling"] for r in found["trace"] if "spelling" in r.details), {})
        print_passages(found["retrieved"], found["highlights"], spelling)


def print_passages(passages: list[Evidence], highlights: list[Highlight], spelling: dict[str, str]) -> None:
    for written, searched in spelling.items():
        console.print(f'[dim]read "{escape(written)}" as "{escape(searched)}"[/dim]', highlight=False)
    if not passages:
        console.print("Nothing found: no passage of the searched documents matches.")
        return
    for number, passage in enumerate(passages, start=1):
        console.print(
            f"[bold]{number}.[/bold] [cyan]{escape(passage.label())}[/cyan] [dim]score {passage.score:.3f}[/dim]",
            highlight=False,
        )
        sentences = [h for h in highlights if h.passage_id == passage.id]
        for sentence in sentences:
            console.print(f"   [yellow]»[/yellow] {escape(' '.join(sentence.sentence.split()))}", highlight=False)
        if not sentences:
            text = " ".join(passage.text.split())
            console.print(f"   [dim]{escape(clipped(text, SNIPPET_CHARS))}[/dim]", highlight=False)
