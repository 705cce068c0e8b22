"""The graphs' state: what a caller sends (input), what it gets back (output), and what the stages share.

`typing_extensions.TypedDict`, not `typing.TypedDict`: the latter breaks LangGraph server's schema endpoint on
Python 3.11. Lists that several stages (or parallel plan steps) add to have reducers; passing None to them
clears them, which the first stage of a run does so that a chat thread's earlier turns do not leak in.
"""

from __future__ import annotations

from typing import Annotated, NotRequired, TypeVar

from langchain_core.messages import AnyMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from pagegraph.errors import PagegraphError
from pagegraph.state.answering import (
    Band,
    Candidate,
    Citation,
    Evidence,
    EvidenceSentence,
    Failure,
    Highlight,
    MappedChunk,
    OutputType,
    Pick,
    Presearch,
    Reading,
    RetrievalPlan,
    RouteDecision,
    SearchPlan,
    TraceRecord,
    Turn,
    ValueCheck,
    Verdict,
)
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.ingest import IngestedFile, IngestReport
from pagegraph.state.usage import UsageSummary

T = TypeVar("T")


def required(value: T | None, what: str) -> T:
    """`value`, which an earlier stage of the run sets; a clear error where none did (a graph wired wrong)."""
    if value is None:
        raise PagegraphError(f"{what} is not set: the stage that sets it has not run")
    return value


def extend_or_reset(current: list[T] | None, update: list[T] | None) -> list[T]:
    if update is None:
        return []
    return [*(current or []), *update]


def merge_evidence(current: list[Evidence] | None, update: list[Evidence] | None) -> list[Evidence]:
    """Evidence from parallel plan steps, without repeats, in (step, rank) order. Passages stored as plain JSON (by
    a state edit from before edits of records were refused) are read as records, so such a thread reads again."""
    if update is None:
        return []
    merged: dict[str, Evidence] = {}
    for item in [*(current or []), *update]:
        record = Evidence.model_validate(item) if isinstance(item, dict) else item
        merged.setdefault(record.id, record)
    return sorted(merged.values(), key=lambda e: (e.step, e.rank))


def first_failure(current: Failure | None, update: Failure | None) -> Failure | None:
    """The first stage failure of a step wins (parallel tasks may fail together); None clears it."""
    if update is None:
        return None
    return current or update


class Question(TypedDict, total=False):
    """A question and what narrows its search."""

    question: str
    documents: list[str]
    filters: RetrievalFilter
    output_type: OutputType


class HandOver(Question, total=False):
    """What a graph run as another's subgraph reads of the caller's state: the question, what narrows its search and
    the search the caller already ran of it, if any (the chat thread stays with the caller)."""

    presearch: Presearch | None


class InputState(Question, total=False):
    """`question`, or a chat client's `messages` ending in the question (LangChain's Agent Chat UI, `useStream`)."""

    messages: Annotated[list[AnyMessage], add_messages]


class HandBack(TypedDict):
    """What a graph run as another's subgraph gives back: the answer with its evidence, and its trace records (the
        caller adds usage and the turn). `highlights` are the sentences picked before any answer-model call (shown
        first); `evidence` is what the answer model read; `trace` has one record per stage. `second_reading` is what
        the answer model read from the judge's sentences when asked the question again, where it read other values than
        the answer states (the answer is then uncertain); None otherwise. `pick` is the candidate(s) the reader picked
    among those taken from the evidence, with the runner-up, where it answered by picking."""

    highlights: list[Highlight]
    answer: str
    citations: list[Citation]
    abstained: bool
    abstain_reason: str | None
    confidence: float
    band: Band
    band_label: str
    value_check: ValueCheck | None
    second_reading: str | None
    pick: Pick | None
    low_confidence: bool
    evidence: list[Evidence]
    trace: Annotated[list[TraceRecord], extend_or_reset]


class OutputState(HandBack):
    """What a run gives back: the above, the usage of its model calls, and `messages`, the thread as a chat: each
    question and its answer."""

    messages: Annotated[list[AnyMessage], add_messages]
    usage: UsageSummary
    llm_calls: int


# a caller may leave out `messages`, a run always gives them back: both schemas are LangGraph's to read
class RagState(InputState, OutputState, total=False):  # type: ignore[misc]
    presearch: Presearch | None  # set by auto's highlight, read by the graph it hands over to; cleared at a run's start
    history: Annotated[list[Turn], extend_or_reset]
    route: RouteDecision | None
    plan: RetrievalPlan | None
    retrieved: Annotated[list[Evidence], merge_evidence]
    relevance: Annotated[list[float], extend_or_reset]
    failure: Annotated[Failure | None, first_failure]
    draft: str
    answer_doubted: (
        bool  # the run abstains on the answer model's reply (a refusal, a failed check): a quote may stand in
    )
    verdict: Verdict | None
    candidates: list[Candidate]
    graph_choice: str
    search_plan: SearchPlan | None
    mapped: Annotated[list[MappedChunk], extend_or_reset]
    readings: Annotated[list[Reading], extend_or_reset]


class SearchInput(TypedDict, total=False):
    """What the `search` graph takes: a query, narrowed as a question is (document names, dates, tags)."""

    question: str
    documents: list[str]
    filters: RetrievalFilter


class SearchOutput(TypedDict):
    """What a search gives back, with no model call: the passages found (`retrieved`, best first) and the sentences
    in them most likely to answer the query (`highlights`), each with its citation label and place on its page."""

    retrieved: list[Evidence]
    highlights: list[Highlight]
    trace: Annotated[list[TraceRecord], extend_or_reset]


class ChunkTask(TypedDict):
    """What one parallel map task of the small_model graph receives (through `Send`)."""

    question: str
    evidence: Evidence


class FileTask(TypedDict):
    """What one parallel section-selection task of the pageindex graph receives (through `Send`)."""

    question: str
    document: str
    step: int


class StepTask(TypedDict):
    """What one parallel retrieval step receives (through `Send`)."""

    question: str
    step: int
    query: str
    documents: list[str]
    filters: NotRequired[RetrievalFilter]
    kind: str


STATE_RECORD_TYPES = (
    IngestedFile,
    IngestReport,
    Citation,
    Evidence,
    EvidenceSentence,
    Failure,
    Highlight,
    Presearch,
    RetrievalFilter,
    RetrievalPlan,
    RouteDecision,
    SearchPlan,
    MappedChunk,
    Candidate,
    Pick,
    Reading,
    TraceRecord,
    Turn,
    UsageSummary,
    ValueCheck,
    Verdict,
)


def checkpoint_serializer() -> JsonPlusSerializer:
    """A checkpoint serializer that restores the state's records and no other classes."""
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_RECORD_TYPES)
