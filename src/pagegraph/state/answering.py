"""Records the question-answering graphs pass between their stages."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from pagegraph.state.documents import names_a_section
from pagegraph.state.usage import Attempt, ModelCall

OutputType = Literal["answer", "blueprint", "pdr", "workflow", "build_plan"]
# enumeration questions want every matching passage, reasoning ones want meaning, lookups one fact
QuestionKind = Literal["enumeration", "reasoning", "lookup"]
# How far an answer can be trusted, in words: supported (its values are in the sentences it cites and its confidence
# clears Context.confidence.supported), uncertain (check the evidence), not_found (the documents do not hold it).
Band = Literal["supported", "uncertain", "quoted", "not_found"]


class DocumentSummary(BaseModel):
    """What a document is and when to use it; written at ingest, read by the router."""

    document_type: str = Field(max_length=80, description="e.g. user manual, annual report, research paper")
    summary: str = Field(max_length=1200, description="two to four sentences on what the document covers")
    key_topics: list[str] = Field(default_factory=list, max_length=10)
    use_for: str = Field(default="", max_length=400, description="one sentence: which questions to look up here")


class StoredSummary(DocumentSummary):
    method: Literal["model", "extractive"]
    model: str | None = None
    # the document's opening words (a cover, a title page, a contents page): what names it, for the router's profile
    # search, never shown as its summary
    opening: str = ""


class RoutedDocument(BaseModel):
    name: str
    reason: str = ""


RouteMethod = Literal["given", "all", "model", "ranking"]


class RouteDecision(BaseModel):
    documents: list[RoutedDocument]
    method: RouteMethod = Field(
        description="given: the question named its documents; all: the index holds no more than top_k_files; "
        "model: chosen by the model from the summaries; ranking: retrieval-based ranking after the model failed"
    )

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.documents]


class PlanStep(BaseModel):
    query: str = Field(min_length=1, max_length=400, description="search query for this step")
    documents: list[str] = Field(default_factory=list, description="documents to search; empty: every routed one")
    expected_output: str = Field(default="", max_length=300, description="what this step should find")


class RetrievalPlan(BaseModel):
    kind: QuestionKind
    steps: list[PlanStep] = Field(min_length=1, max_length=4)
    requires_combination: bool = False
    method: Literal["model", "rule", "fallback"] = "rule"


# joins a passage's chunks where the text between them is left out (a page break, a skipped chunk)
GAP_MARK = " … "


class Evidence(BaseModel):
    """A passage handed to the answer model: one hit with its window, merged where neighbours overlap."""

    id: str = Field(description="the passage's hit chunk id")
    chunk_ids: list[str]
    source: str = Field(description="file name")
    section: str = ""
    start_page: int
    end_page: int
    start_label: str | None = Field(
        default=None, description="the number printed on its first page, where that differs from `start_page`"
    )
    end_label: str | None = Field(
        default=None, description="the number printed on its last page, where that differs from `end_page`"
    )
    start_time: float | None = None
    end_time: float | None = None
    text: str
    table_header: str | None = Field(
        default=None, description="the header row of the Markdown table the text starts inside, if it does"
    )
    score: float = Field(description="fused retrieval score of the hit")
    step: int = Field(default=0, description="plan step that retrieved it")
    rank: int = Field(default=0, description="rank within its step, 0 = best")

    def label(self) -> str:
        """The citation label: `[file, section, p. X–Y]`, or `[file, t=MM:SS]` for transcripts; the section only
        where its title names one (`names_a_section`); the page numbers printed on the pages where they have them."""
        parts = [self.source]
        if names_a_section(self.section, self.source):
            parts.append(self.section)
        first, last = self.start_label or str(self.start_page), self.end_label or str(self.end_page)
        if self.start_time is not None:
            parts.append(f"t={_clock(self.start_time)}")
        elif first == last:
            parts.append(f"p. {first}")
        else:
            parts.append(f"p. {first}–{last}")
        return "[" + ", ".join(parts) + "]"


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Highlight(BaseModel):
    """A sentence of a retrieved passage likely to hold the answer, picked before any answer-model call."""

    passage_id: str = Field(description="the passage's id (its hit chunk)")
    source: str = Field(description="file name")
    label: str = Field(description="citation label of the sentence's page: [file, section, p. X] or [file, t=MM:SS]")
    page: int
    sentence: str
    start: int = Field(ge=0, description="character offset of the sentence in its page's text")
    end: int = Field(ge=0)
    score: float


class Presearch(BaseModel):
    """A search of the question run before the graph that answers it (`auto` shows its highlights first), handed to
    that graph so it does not search again: what was searched, and what it found."""

    question: str
    documents: list[str] = Field(description="the documents asked for (none: all readable ones)")
    filters: dict[str, Any] | None = Field(description="the filter searched under, as JSON")
    retrieved: list[Evidence]
    relevance: float = Field(description="the search's best similarity")
    highlights: list[Highlight]


class Reading(BaseModel):
    """One read of the extract graph: what the model answered from which excerpts, and the signals abstention
    weighs."""

    draft: str = Field(description="the model's reply, cited to the excerpt holding most of its answer")
    wide: bool = Field(description="read from whole passages (after the focused read fell short)")
    refused: bool
    support: float = Field(
        ge=0.0,
        le=1.0,
        description="share of the answer's own numbers and words (those not in the question) found in the excerpt "
        "it cites (or, citing none, the excerpt holding most of them)",
    )
    source: int | None = Field(default=None, description="the excerpt number the support was measured in")
    widen: bool = Field(
        default=False, description="read whole passages next: the focused read fell short, or `confirm_answers` is on"
    )
    disagrees: bool = Field(default=False, description="a confirming read whose answer differs from the focused one")


class EvidenceSentence(BaseModel):
    """A sentence of a passage, with its place on its page (offsets into the page's text) where it was found."""

    sentence: str
    label: str
    chunk_ids: list[str] = Field(default_factory=list, description="the chunks of the passage holding it")
    page: int | None = None
    start: int | None = Field(default=None, ge=0)
    end: int | None = Field(default=None, ge=0)


CitationOrigin = Literal["model", "attributed", "quoted"]


class Citation(BaseModel):
    source: str
    section: str = ""
    start_page: int
    end_page: int
    chunk_ids: list[str]
    label: str
    origin: CitationOrigin = Field(
        description="model: cited by the answer model; attributed: a sentence that cited nothing took most of its "
        "words from this evidence, or this evidence states the answer's values; quoted: the evidence sentence quoted "
        "as the answer"
    )
    quote: EvidenceSentence | None = Field(
        default=None, description="the cited passage's sentence that states the answer's values, where one does"
    )


ValueStatus = Literal["supported", "unsupported", "no_values"]


class ValueCheck(BaseModel):
    """Whether the values a short answer states (numbers, amounts, percentages, dates, names) are in the sentences
    it cites, checked without a model."""

    status: ValueStatus = Field(
        description="supported: a cited sentence states each value; unsupported: some value is in no cited sentence "
        "about it, or is a table row's value for another period or column than the one asked; no_values: the answer "
        "states none the question does not already hold"
    )
    values: list[str] = Field(default_factory=list, description="the answer's own values, as it writes them")
    missing: list[str] = Field(default_factory=list, description="those no cited sentence states")
    unstated: list[str] = Field(
        default_factory=list,
        description="the numbers, amounts, percentages and dates (no names) of the answer that no passage given to "
        "the model states: unless the question asks for a computed value, the run withholds a short answer stating "
        "one",
    )
    other_period: list[str] = Field(
        default_factory=list,
        description="those a cited table row states only for another period than the year the question names, "
        "with the row's value for that year",
    )
    other_column: list[str] = Field(
        default_factory=list,
        description="those a cited table row states only in columns the question does not name, where it names some "
        "of the table's columns and not others, with the row read in the columns it names",
    )
    period_absent: int | None = Field(
        default=None,
        description="the year the question names where the table row holding the answer's value has no column for "
        "it: the answer states another period's value, and the run abstains",
    )
    closest: EvidenceSentence | None = Field(
        default=None,
        description="unsupported: the evidence sentence most like the answer (or the row read in another period's "
        "column), to check the value against",
    )
    computed: bool = Field(
        default=False,
        description="the question asks for a value computed from others (a difference, ratio, change, sum) and the "
        "answer states a number: the evidence need not state it, and no check confirms the arithmetic",
    )


CandidateKind = Literal["cell", "value", "name"]


class Candidate(BaseModel):
    """A possible answer taken from the evidence without a model (`checks.candidates`): a table cell, or a value or
    name in a sentence, with what it measures and where it stands."""

    kind: CandidateKind
    value: str = Field(description="as the document writes it")
    measures: str = Field(
        description="what it is: a cell's row label and column heading, with the table's units; the words around a "
        "value or name in its sentence"
    )
    option: str = Field(
        description="the text the pick copies, on one line, what it is first and the value last: a cell's row and "
        "column then its value (`Revenues, 2014 (in thousands): $ 5,504,656`), the words before a value in its "
        "sentence then the value"
    )
    sentence: str = Field(description="the sentence, or the table row's reading, it stands in")
    passage: int = Field(ge=1, description="the number of the passage holding it among the evidence the pick read")
    label: str = Field(description="the citation label of that passage")
    score: float = Field(
        description="how well it and its sentence match the question; candidates are offered best first"
    )


class Pick(BaseModel):
    """The reader's choice among the candidates (`nodes.pick`): those it picked (none: the evidence does not hold
    the answer), how likely the model found its choice, and the candidate it found next likeliest."""

    candidates: list[Candidate] = Field(description="the candidates offered, lettered A, B, C … in this order")
    picked: list[int] = Field(description="indexes of the picked candidates; empty: none of these")
    probability: float = Field(
        ge=0.0,
        le=1.0,
        description="the share of the model's likelihood on its pick among the options, from its log-probabilities "
        "(over candidates of the same value together; the least of several picks); from a model that gives none, "
        "`Context.picking.written_weight`",
    )
    from_logprobs: bool
    runner_up: int | None = Field(default=None, description="index of the likeliest candidate not picked")
    runner_up_probability: float | None = Field(default=None, ge=0.0, le=1.0)
    answered: bool = Field(
        default=False,
        description="the answer is the pick's; False where the written reader answered instead (no pick, none of "
        "these for an answer in words, a pick below `Context.picking.answer_from`)",
    )

    def chosen(self) -> list[Candidate]:
        return [self.candidates[i] for i in self.picked]

    def second(self) -> Candidate | None:
        return self.candidates[self.runner_up] if self.runner_up is not None else None


class Verdict(BaseModel):
    """Whether the answer model, asked a closed question, finds the answer stated by the question's top evidence
    sentences; and, asked the question itself over them, whether it reads the same values."""

    probability: float = Field(
        ge=0.0,
        le=1.0,
        description="P(Yes) / (P(Yes) + P(No)) over the first token the model would write; from a model that gives "
        "no log-probabilities, the written word's stand-in (`Context.confidence.written_yes`)",
    )
    from_logprobs: bool = Field(description="read from the model's log-probabilities, not from the word it wrote")
    method: Literal["judge", "pick"] = Field(
        default="judge",
        description="judge: P(Yes) of the closed check (`nodes.judge`); pick: the probability the model put on the "
        "candidate it picked (`nodes.pick`), which is then the answer's support",
    )
    reread: str | None = Field(
        default=None,
        description="the second reading: what the model answered when asked the question again over the same "
        "sentences alone (its citations left out); None when not asked (`Context.confidence.reread`)",
    )
    restated: bool | None = Field(
        default=None,
        description="whether the second reading states the answer's numbers, amounts, percentages and dates and no "
        "other (`checks.values.restates`); an answer it does not is never supported; None when not asked or when "
        "the reading states no value (neither confirmed nor doubted)",
    )


class Confidence(BaseModel):
    """An answer's confidence (a probability-like 0–1 estimate that it is right), its band, and the signals both
    came from."""

    value: float = Field(ge=0.0, le=1.0)
    band: Band
    verdict: Verdict | None = Field(
        default=None, description="the model's closed check of the answer against the evidence; None if not asked"
    )
    overlap: float | None = Field(
        ge=0.0,
        le=1.0,
        description="share of the answer's words in the evidence it cites; None when the answer is written in another "
        "language than that evidence",
    )
    value_check: ValueCheck
    refusal_wording: bool = Field(
        default=False, description="the answer says, in its own words, that the passages do not hold the answer"
    )


class TraceRecord(BaseModel):
    """One stage's entry in the run's trace: what it did, what it chose, what it cost."""

    stage: str
    summary: str
    ids: list[str] = Field(default_factory=list, description="documents, chunk ids or labels the stage chose")
    latency_ms: float = 0.0
    calls: list[ModelCall] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    error: str | None = None
    details: dict[str, Any] = Field(
        default_factory=dict, description="what the stage found and chose, as data (pageindex: its search history)"
    )


class Turn(BaseModel):
    """A finished question and answer, kept on a chat thread."""

    question: str
    answer: str


class Failure(BaseModel):
    stage: str
    error: str


class SearchPlan(BaseModel):
    """The small-model planner's output: keywords to search for and optional pre-filters."""

    keywords: list[str] = Field(min_length=1, max_length=4, description="2 to 4 search terms")
    file_filter: str | None = Field(default=None, description="file extension to restrict to, e.g. pdf; null for any")
    source_hint: str | None = Field(default=None, description="part of a file name to restrict to; null for any")


class ChunkFacts(BaseModel):
    # facts before the verdict: a small model decoding left to right decides better after writing them out
    facts: list[str] = Field(
        default_factory=list, max_length=5, description="facts from the passage that help, numbers and names verbatim"
    )
    relevant: bool = Field(description="whether the passage helps answer the question")


class MappedChunk(BaseModel):
    """One chunk read on its own by the small model: whether it helps, and the facts it gives."""

    evidence: Evidence
    relevant: bool
    facts: list[str]
    parsed_by: str = Field(description="how the reply was read: json, extract, lenient, salvage or default")
