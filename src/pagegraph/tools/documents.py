"""What another agent may do with the documents, as plain calls on one index: search them, ask them a question,
list them, add to them. The MCP tools (`pagegraph.tools.mcp`) and the LangChain retriever (`pagegraph.tools.retriever`)
are thin faces on these; each call runs the graph the CLI and the server run, as the user it is given, so the same
rights narrow every read (`Access`; None: the index's owner, as on the command line)."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from pagegraph import GRAPH_NAMES, GRAPHS
from pagegraph.access.records import Access
from pagegraph.access.runs import AUTH_USER_KEY, run_user
from pagegraph.checks.confidence import doubts
from pagegraph.config import Context
from pagegraph.errors import PagegraphError
from pagegraph.graphs.builder import CompiledGraph
from pagegraph.graphs.ingest import build_ingest_graph
from pagegraph.graphs.search import build_search_graph
from pagegraph.nodes.labels import STAGE_LABELS
from pagegraph.nodes.start import length_refusal
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Highlight, Pick
from pagegraph.state.documents import Confidentiality, clipped
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.ingest import IngestReport, Status

QuestionGraph = Literal[GRAPH_NAMES]  # type: ignore[valid-type]


class ToolRefusal(PagegraphError):
    """A call that is not run, or ran and could not be done: the reason, said to the caller."""


class FoundSentence(BaseModel):
    """A sentence of a passage most likely to answer the query, with its place on the page."""

    sentence: str
    label: str = Field(description="citation of its page: [file, section, p. N]")
    page: int = Field(description="the page (of the file) it is on, 1-based")
    start: int = Field(description="character offset of the sentence in that page's text")
    end: int


class FoundPassage(BaseModel):
    """A passage a search found, best first."""

    label: str = Field(description="citation: [file, section, p. N] with the page number printed on the page")
    source: str = Field(description="file name")
    section: str
    start_page: int = Field(description="first page (of the file, 1-based)")
    end_page: int
    score: float
    text: str
    sentences: list[FoundSentence] = Field(description="its sentences most likely to answer, best first")


class SearchResult(BaseModel):
    query: str
    passages: list[FoundPassage]


class CitedSource(BaseModel):
    label: str = Field(description="[file, section, p. N]")
    source: str
    section: str
    start_page: int
    end_page: int
    quote: str | None = Field(description="the sentence that states the cited value, where the answer checked one")


class PickedValue(BaseModel):
    """A candidate the answer was picked from (or the runner-up): its value as the document writes it, what it
    measures (a table's row and column, or the words around it), and its citation."""

    value: str
    measures: str
    label: str


class AnswerPick(BaseModel):
    picked: list[PickedValue] = Field(description="the candidates the answer states; empty: none of them answers")
    probability: float = Field(description="how sure the model was of its pick, 0–1")
    runner_up: PickedValue | None = Field(description="the candidate it found next likeliest")
    candidates: int = Field(description="how many candidates from the evidence it chose among")
    answered: bool = Field(description="the answer is the pick's (else the model wrote it: the pick was unsure)")


def answer_pick(pick: Pick | None) -> AnswerPick | None:
    if pick is None:
        return None
    shown = [PickedValue(value=c.value, measures=c.measures, label=c.label) for c in pick.chosen()]
    second = pick.second()
    return AnswerPick(
        picked=shown,
        probability=pick.probability,
        runner_up=PickedValue(value=second.value, measures=second.measures, label=second.label) if second else None,
        candidates=len(pick.candidates),
        answered=pick.answered,
    )


class Answer(BaseModel):
    """An answer with what it rests on. `band` says how far to trust it: supported, uncertain, quoted (a sentence
    of the documents stands in for the model's answer), or abstained (the documents do not answer it)."""

    question: str
    answer: str
    band: str
    band_label: str
    confidence: float
    doubts: list[str] = Field(
        description="what to know before trusting the answer, as the terminal shows it under the band: a "
        "calculation no check confirms, another value a second reading of the evidence gave, values in no sentence "
        "the answer cites, values read in another year's or column's cell (each with the cell asked for)"
    )
    abstained: bool
    abstain_reason: str | None
    citations: list[CitedSource]
    evidence: list[FoundSentence] = Field(description="the sentences most likely to answer, shown before the answer")
    passages: list[FoundPassage] = Field(description="what the answer model read, each clipped to its start")
    pick: AnswerPick | None = Field(
        default=None,
        description="where the answer was picked among candidates from the evidence: the pick, its "
        "label and the runner-up",
    )


class ListedDocument(BaseModel):
    name: str
    title: str
    type: str
    pages: int
    project: str | None
    confidentiality: Confidentiality
    date: date | None
    summary: str


class DocumentList(BaseModel):
    documents: list[ListedDocument]


class IngestedFileResult(BaseModel):
    path: str
    status: Status
    pages: int
    chunks: int
    reason: str


class IngestResult(BaseModel):
    files: list[IngestedFileResult]
    seconds: float


def found_sentences(highlights: list[Highlight]) -> list[FoundSentence]:
    return [
        FoundSentence(sentence=" ".join(h.sentence.split()), label=h.label, page=h.page, start=h.start, end=h.end)
        for h in highlights
    ]


def found_passage(passage: Evidence, highlights: list[Highlight], chars: int | None = None) -> FoundPassage:
    text = passage.text if chars is None else clipped(passage.text, chars)
    return FoundPassage(
        label=passage.label(),
        source=passage.source,
        section=passage.section,
        start_page=passage.start_page,
        end_page=passage.end_page,
        score=round(passage.score, 4),
        text=text,
        sentences=found_sentences([h for h in highlights if h.passage_id == passage.id]),
    )


def best_found(found: dict[str, Any], k: int) -> tuple[list[Evidence], list[Highlight]]:
    """A search's `k` best passages and the highlighted sentences in them."""
    passages = found["retrieved"][:k]
    kept = {p.id for p in passages}
    return passages, [h for h in found["highlights"] if h.passage_id in kept]


def search_filter(
    documents: list[str] | None = None,
    projects: list[str] | None = None,
    source_types: list[str] | None = None,
    since: date | None = None,
    until: date | None = None,
) -> RetrievalFilter:
    if since and until and since > until:
        raise ToolRefusal(f"since {since} is after until {until}")
    return RetrievalFilter(
        documents=documents or None,
        projects=projects or None,
        source_types=source_types or None,
        date_from=since,
        date_to=until,
    )


class DocumentTools:
    """Search, ask, list and ingest over one index (`context.index`, else the configured one)."""

    def __init__(self, services: Services, context: Context | None = None) -> None:
        self.services = services
        self.context = context or Context()
        self._graphs: dict[str, CompiledGraph] = {}
        self._lock = threading.Lock()

    def graph(self, name: str) -> CompiledGraph:
        with self._lock:
            if name not in self._graphs:
                builders = {"search": build_search_graph, "ingest": build_ingest_graph}
                build = builders.get(name) or GRAPHS[name].build
                self._graphs[name] = build(self.services)
            return self._graphs[name]

    def config(self, access: Access | None) -> RunnableConfig:
        """The run config that makes `access` the user of a graph run (none: the owner)."""
        return {"configurable": {AUTH_USER_KEY: run_user(access)}} if access is not None else {}

    def _need_index(self) -> None:
        if not self.services.has_index(self.context):
            raise ToolRefusal(
                f"no index at {self.services.index_folder(self.context)}: ingest documents first "
                "(`pagegraph ingest FOLDER`, or the ingest tool)"
            )

    async def _run_telling(
        self,
        graph: CompiledGraph,
        inputs: dict[str, Any],
        access: Access | None,
        on_stage: Callable[[str], Awaitable[None]] | None,
    ) -> dict[str, Any]:
        if on_stage is None:
            return await graph.ainvoke(inputs, self.config(access), context=self.context)
        final: dict[str, Any] = {}
        told: set[str] = set()
        parts = graph.astream(
            inputs, self.config(access), context=self.context, stream_mode=["updates", "values"], subgraphs=True
        )
        async for namespace, mode, data in parts:
            chunk = cast(dict[str, Any], data)  # a state (values) or its updates by node (updates)
            if mode == "values":
                final = chunk if not namespace else final
                continue
            for node, update in chunk.items():
                said = stage_said(node, update or {})
                if said and said not in told:
                    told.add(said)
                    await on_stage(said)
        return final

    def _inputs(self, question: str, flt: RetrievalFilter | None, what: str) -> dict[str, Any]:
        """A graph's input for `question` (`what`: a question or a search): refused when it is empty or too long,
        or when there is no index yet."""
        question = question.strip()
        if refusal := length_refusal(question, self.services.settings, what):
            raise ToolRefusal(refusal)
        self._need_index()
        return {"question": question, **({"filters": flt} if flt is not None and flt.restricts else {})}

    def find(
        self, query: str, flt: RetrievalFilter | None = None, k: int = 5, access: Access | None = None
    ) -> tuple[list[Evidence], list[Highlight]]:
        """The `k` best passages for `query` and their best sentences: the `search` graph's hybrid search, no model."""
        found = self.graph("search").invoke(
            self._inputs(query, flt, "search"), self.config(access), context=self.context
        )
        return best_found(found, k)

    async def afind(
        self, query: str, flt: RetrievalFilter | None = None, k: int = 5, access: Access | None = None
    ) -> tuple[list[Evidence], list[Highlight]]:
        inputs = self._inputs(query, flt, "search")
        found = await self.graph("search").ainvoke(inputs, self.config(access), context=self.context)
        return best_found(found, k)

    async def search(
        self, query: str, flt: RetrievalFilter | None = None, k: int = 5, access: Access | None = None
    ) -> SearchResult:
        passages, highlights = await self.afind(query, flt, k, access)
        return SearchResult(query=query, passages=[found_passage(p, highlights) for p in passages])

    async def ask(
        self,
        question: str,
        flt: RetrievalFilter | None = None,
        graph: QuestionGraph = "auto",
        access: Access | None = None,
        on_stage: Callable[[str], Awaitable[None]] | None = None,
    ) -> Answer:
        """The question answered by `graph` as `access`; `on_stage` is told each stage as it is done, as the terminal
        shows it ("searching", "checking the answer against the evidence"; the evidence once it is found), so that a
        caller can show progress while a slow model answers."""
        inputs = self._inputs(question, flt, "question")
        output = await self._run_telling(self.graph(graph), inputs, access, on_stage)
        highlights = output.get("highlights") or []
        return Answer(
            question=inputs["question"],
            answer=output["answer"],
            band=output["band"],
            band_label=output["band_label"],
            confidence=round(output["confidence"], 3),
            doubts=doubts(output.get("value_check"), output.get("second_reading"), output.get("pick"), output["band"]),
            pick=answer_pick(output.get("pick")),
            abstained=output["abstained"],
            abstain_reason=output.get("abstain_reason"),
            citations=[
                CitedSource(
                    label=c.label,
                    source=c.source,
                    section=c.section,
                    start_page=c.start_page,
                    end_page=c.end_page,
                    quote=c.quote.sentence if c.quote else None,
                )
                for c in output.get("citations") or []
            ],
            evidence=found_sentences(highlights),
            passages=[
                found_passage(p, highlights, self.context.reading.answer_passage_chars)
                for p in output.get("evidence") or []
            ],
        )

    def documents(self, access: Access | None = None) -> DocumentList:
        """The documents `access` may read (the index is read here: call it off the event loop)."""
        if not self.services.has_index(self.context):
            return DocumentList(documents=[])
        index = self.services.index(self.context)
        summaries = index.summaries()
        listed = []
        for document in index.documents():
            if access is not None and not access.may_read(document.tags):
                continue
            summary = summaries.get(document.id)
            listed.append(
                ListedDocument(
                    name=document.name,
                    title=document.title,
                    type=document.source_type,
                    pages=document.n_pages,
                    project=document.tags.project,
                    confidentiality=document.tags.confidentiality,
                    date=document.tags.date,
                    summary=summary.summary if summary else "",
                )
            )
        return DocumentList(documents=listed)

    async def ingest(
        self,
        paths: list[str],
        project: str | None = None,
        confidentiality: Confidentiality | None = None,
        source_type: str | None = None,
        access: Access | None = None,
    ) -> IngestResult:
        inputs: dict[str, Any] = {"paths": paths, "project": project, "source_type": source_type}
        if confidentiality is not None:
            inputs["confidentiality"] = confidentiality
        output = await self.graph("ingest").ainvoke(inputs, self.config(access), context=self.context)
        if output.get("error"):
            raise ToolRefusal(output["error"])
        report: IngestReport = output["report"]
        return IngestResult(
            files=[
                IngestedFileResult(path=f.path, status=f.status, pages=f.pages, chunks=f.chunks, reason=f.reason)
                for f in report.files
            ],
            seconds=round(report.seconds, 1),
        )


def stage_said(node: str, update: dict[str, Any]) -> str | None:
    """What a caller watching a run is told of a stage that is done: its label (`nodes.labels`), and for the
    highlight stage the best evidence sentence, with its citation."""
    if node == "highlight":
        best = (update.get("highlights") or [None])[0]
        return f"evidence: {best.sentence} {best.label}" if best is not None else None
    return STAGE_LABELS.get(node)
