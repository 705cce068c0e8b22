"""How `ask` and `chat` show a run: the evidence sentences first, then the answer with its sources. On a terminal
the run is streamed: each stage as it finishes, the evidence as soon as it is picked, what the answer model writes
as it comes (redrawn, then cleared), then the checked answer with its sources. Piped, the stages and the evidence
are written as they come and the answer at the end; `--json` prints the output once the run ends, `--json-lines`
one JSON object per event as it comes (`JsonLinesView`)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.spinner import Spinner
from rich.text import Text

from pagegraph.checks.confidence import doubts
from pagegraph.cli.common import output_json
from pagegraph.nodes.labels import ANSWER_NODES, STAGE_LABELS
from pagegraph.prompts.languages import BAND_TEXTS
from pagegraph.state.answering import Band, Highlight, Pick, ValueCheck

ABSTAINED_EVIDENCE = "The evidence above is what came closest; it does not answer the question."


def print_evidence(console: Console, highlights: list[Highlight]) -> None:
    if not highlights:
        return
    console.print("[bold]Evidence[/bold]")
    for highlight in highlights:
        sentence = " ".join(highlight.sentence.split())  # a PDF's wrapped lines, shown as one line
        console.print(f"  [cyan]{escape(highlight.label)}[/cyan] {escape(sentence)}", highlight=False)
    console.print()


def print_sources(console: Console, output: dict[str, Any]) -> None:
    if not output["citations"]:
        return
    console.print("\n[bold]Sources[/bold]")
    for citation in output["citations"]:
        note = "" if citation.origin == "model" else " [dim](attributed)[/dim]"
        console.print(f"  {escape(citation.label)}{note}", highlight=False)


def print_footer(console: Console, output: dict[str, Any]) -> None:
    if output["abstained"]:
        if output.get("highlights"):
            console.print(f"[dim]{ABSTAINED_EVIDENCE}[/dim]")
        return
    band: Band = output.get("band") or "uncertain"
    style = {"supported": "bold green", "quoted": "bold cyan"}.get(band, "bold yellow")
    label = output.get("band_label") or BAND_TEXTS["en"][band]  # a thread answered before labels were written
    # a quote's figure is how well the sentence matches the question, no confidence in an answer: not shown
    shown = "" if band == "quoted" else f" [dim](confidence {output['confidence']:.2f})[/dim]"
    console.print(f"[{style}]{escape(label)}[/{style}]{shown}")
    chosen: Pick | None = output.get("pick")
    for candidate in chosen.chosen() if chosen is not None and chosen.answered else []:
        if candidate.kind != "cell":  # a cell's row and column are in the answer; a value's words are shown here
            console.print(f"[dim]{escape(candidate.value)}: “{escape(candidate.measures)}”[/dim]", highlight=False)
    check: ValueCheck | None = output.get("value_check")
    for doubt in doubts(check, output.get("second_reading"), output.get("pick"), band):
        console.print(f"[yellow]{escape(doubt)}[/yellow]", highlight=False)
    if check is not None and check.status == "unsupported" and check.closest is not None:
        sentence = " ".join(check.closest.sentence.split())
        console.print(
            f"  the closest evidence: [cyan]{escape(check.closest.label)}[/cyan] {escape(sentence)}", highlight=False
        )
    usage = output["usage"]
    console.print(
        f"[dim]{usage.calls} model calls, {usage.prompt_tokens}+{usage.completion_tokens} tokens, "
        f"{usage.latency_ms / 1000:.1f} s in the model[/dim]",
        highlight=False,
    )


def searched_as(console: Console, output: dict[str, Any]) -> None:
    rewrite: dict[str, Any] = next((r.details for r in output["trace"] if r.stage == "rewrite_followup"), {})
    if "standalone" in rewrite and rewrite["standalone"] != rewrite["asked"]:
        console.print(f"[dim]searched as: {escape(rewrite['standalone'])}[/dim]", highlight=False)


class StreamedAnswer:
    """Shows a run on a terminal as it happens; feed it the parts of
    `graph.stream(..., stream_mode=["updates", "messages"], subgraphs=True)`.

    Stages and the evidence stay on screen as they come. While the model writes, its words show below them in a
    region that is redrawn (excerpt numbers left out: they are resolved to labels only once the answer is checked)
    and cleared at the end, so that a first read a second one replaced never stays on screen: only the final,
    checked answer is printed, with its sources and band. With `preview` off (--debug prints trace records to the
    same terminal), a spinner line is all that shows while the model writes. Without `redraw` (output to a pipe or
    a file, where nothing can be cleared), the stages and the evidence are written as they come and the model's
    words not at all: the checked answer follows them."""

    def __init__(self, console: Console, preview: bool = True, redraw: bool = True) -> None:
        self.console = console
        self.preview = preview
        self.redraw = redraw
        self.stages_shown: set[str] = set()
        self.evidence_shown = False
        self.written = ""
        self.writing: tuple[Any, ...] | None = None  # the model call whose words are being shown
        self.live: Live | None = None

    def part(self, mode: str, data: Any) -> None:
        if mode == "updates":
            for node, update in data.items():
                self._stage_done(node, update or {})
        elif mode == "messages":
            chunk, metadata = data
            if metadata.get("langgraph_node") in ANSWER_NODES and isinstance(chunk.content, str) and chunk.content:
                call = (metadata.get("langgraph_checkpoint_ns"), metadata.get("langgraph_step"))
                if self.writing is None:
                    self._stage("writing the answer")
                elif call != self.writing:  # a second answer call (extract reading whole passages, a fallback)
                    self._stage("that fell short: answering again from more of the documents")
                    self.written = ""
                self.writing = call
                self.written += chunk.content
                self._show_writing()

    def _show_writing(self) -> None:
        if not self.redraw:
            return
        if self.live is None:
            self.live = Live(console=self.console, transient=True, auto_refresh=False)
            self.live.start()
        preview = Text(without_excerpt_numbers(self.written)) if self.preview else Text()
        self.live.update(Group(Spinner("dots", Text("the model is writing", style="dim")), preview), refresh=True)

    def _stage_done(self, node: str, update: dict[str, Any]) -> None:
        if node == "highlight":
            if not self.evidence_shown:
                self.evidence_shown = True
                print_evidence(self.console, update.get("highlights") or [])
            return
        label = STAGE_LABELS.get(node)
        if label is None or self.writing is not None:
            return
        found = next((r.details for r in update.get("trace") or [] if "passages" in r.details), None)
        if found and found["passages"]:
            plural = "s" if found["documents"] > 1 else ""
            label = f"{label}: {found['passages']} passages from {found['documents']} document{plural}"
        if found and found.get("spelling"):
            label += "".join(f' (read "{written}" as "{searched}")' for written, searched in found["spelling"].items())
        self._stage(label)

    def _stage(self, label: str) -> None:
        if label not in self.stages_shown:
            self.stages_shown.add(label)
            self.console.print(f"[dim]· {label}[/dim]", highlight=False)

    def stop(self) -> None:
        """Clear what the model was writing (also when the run failed or was interrupted)."""
        if self.live is not None:
            self.live.stop()
            self.live = None

    def finish(self, output: dict[str, Any]) -> None:
        """After the run: the checked answer (or the refusal), its sources and its band."""
        self.stop()
        if not self.evidence_shown:
            print_evidence(self.console, output.get("highlights") or [])
        if self.writing is not None:
            self.console.print()
        searched_as(self.console, output)
        self.console.print(output["answer"], highlight=False, markup=False)
        print_sources(self.console, output)
        print_footer(self.console, output)


# a model's excerpt numbers as it writes them, "[2]", "[1, 3]", "[2-4]", and one cut off at the end ("[1,")
_EXCERPT_NUMBERS = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]|\s*\[[\d,\s–-]*$")


def without_excerpt_numbers(text: str) -> str:
    return _EXCERPT_NUMBERS.sub("", text)


class JsonLinesView:
    """Shows a run as JSON lines for a program reading them as they come (`ask --json-lines`): `{"event": "stage",
    "stage": NODE, "label": ...}` as each stage finishes, `{"event": "evidence", "highlights": [...]}` once the
    evidence is picked, and `{"event": "answer", ...}` with the whole output (as `--json` prints it) at the end."""

    def __init__(self, write: Callable[[str], Any] | None = None) -> None:
        self.write = write or self._stdout

    @staticmethod
    def _stdout(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()

    def _event(self, event: str, fields: str) -> None:
        """One line: the event's name, then `fields`, a JSON object's text (records already dumped)."""
        body = fields.strip()[1:-1]
        self.write(f'{{"event": {json.dumps(event)}{", " if body else ""}{body}}}\n')

    def part(self, mode: str, data: Any) -> None:
        if mode != "updates":
            return
        for node, update in data.items():
            if node == "highlight":
                self._event("evidence", output_json({"highlights": (update or {}).get("highlights") or []}))
            elif label := STAGE_LABELS.get(node):
                self._event("stage", json.dumps({"stage": node, "label": label}))

    def stop(self) -> None:
        """Nothing is drawn that would need clearing."""

    def finish(self, output: dict[str, Any]) -> None:
        self._event("answer", output_json(output))
