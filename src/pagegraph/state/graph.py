"""The graphs' state: what a caller sends (input), what it gets back (output), and what the stages share.

`typing_extensions.TypedDict`, not `typing.TypedDict`: the latter breaks LangGraph server's schema endpoint on
Python 3.11. A chat thread keeps only the question, the chat and the last answer (`ThreadState`); each run of a
graph works in a state of its own (`RagState`, `ExtractState`, ...), fresh every time, as the thread's subgraph.
Lists that several stages (or parallel plan steps) add to have reducers.
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


def extend(current: list[T] | None, update: list[T] | None) -> list[T]:
    """`update` added to `current`; None adds nothing (a thread's list a state edit cleared, handed to a run)."""
    return [*(current or []), *(update or [])]


def merge_evidence(current: list[Evidence] | None, update: list[Evidence]) -> list[Evidence]:
    """Evidence from parallel plan steps, without repeats, in (step, rank) order. Passages stored as plain JSON (by
    a state edit from before edits of records were refused) are read as records, so such a thread reads again."""
    merged: dict[str, Evidence] = {}
    for item in [*(current or []), *update]:
        record = Evidence.model_validate(item) if isinstance(item, dict) else item
        merged.setdefault(record.id, record)
    return sorted(merged.values(), key=lambda e: (e.step, e.rank))


def first_failure(current: Failure | None, update: Failure | None) -> Failure | None:
    """The first stage failure of a step wins (parallel tasks may fail together)."""
    return current or update


class SearchInput(TypedDict, total=False):
    """A question or a search query, and what narrows its search (document names, dates, tags): what the `search`
    graph takes."""

    question: str
    documents: list[str]
    filters: RetrievalFilter


class Question(SearchInput, total=False):
    """A question, what narrows its search, and the kind of answer asked for."""

    output_type: OutputType


class Chat(TypedDict, total=False):
    """A chat thread's messages: each question and its answer (LangChain's Agent Chat UI, `useStream`)."""

    messages: Annotated[list[AnyMessage], add_messages]


class InputState(Question, Chat, total=False):
    """What a caller sends: `question`, or a chat client's `messages` ending in the question."""


class HandOver(Question, total=False):
    """What a graph run as another's subgraph reads of the caller's state: the question, what narrows its search and
    the search the caller already ran of it, if any (the chat thread stays with the caller)."""

    presearch: Presearch | None


class Answer(TypedDict):
    """The fields every answering graph returns: the answer with its evidence. `highlights` are the sentences picked
    before any answer-model call (shown first); `evidence` is what the answer model read. `second_reading` is what
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


def unanswered(reason: str | None) -> Answer:
    """The answer of a run that has not answered yet (or never will, for `reason`)."""
    return Answer(
        highlights=[],
        answer="",
        citations=[],
        abstained=False,
        abstain_reason=reason,
        confidence=0.0,
        band="not_found",
        band_label="",
        value_check=None,
        second_reading=None,
        pick=None,
        low_confidence=False,
        evidence=[],
    )


class HandBack(Answer):
    """What a graph run as another's subgraph gives back: the answer and its trace, one record per stage (the caller
    adds usage and the turn)."""

    trace: Annotated[list[TraceRecord], extend]


class OutputState(Answer, Chat):
    """What a run gives back: the answer, its trace, the usage of its model calls, and the thread as a chat."""

    trace: list[TraceRecord]
    usage: UsageSummary
    llm_calls: int


class ThreadState(InputState, OutputState, total=False):
    """What a chat thread keeps between runs (the graph a caller runs: `graphs.builder.threaded`): the last
    question and answer, the chat, and the turns a follow-up is read against. Each run works in a state of its own,
    fresh every time, and hands this back."""

    history: list[Turn]


class Turns(TypedDict, total=False):
    """The thread's earlier turns, which a follow-up question is read against; a finished run adds its own."""

    history: Annotated[list[Turn], extend]


class RunInput(InputState, Turns, total=False):
    """What a run takes from its thread: the question, the chat and the earlier turns."""


class RunOutput(HandBack, Question, Chat, Turns):
    """What a run hands back to its thread: the answer, the question it answered, the chat and the turns with this
    one, and the usage of its model calls."""

    usage: UsageSummary
    llm_calls: int


class RunState(RunInput, RunOutput, total=False):
    """What every answering graph's run holds: its input and output, a search handed over to it, and the first
    stage failure (which sends the run to its fallback)."""

    presearch: Presearch | None
    failure: Annotated[Failure | None, first_failure]


class SearchState(RunState, total=False):
    """A run that searches: the documents a router chose (`route`), a planned keyword search (`search_plan`), the
    passages found (best first, by plan step) and their similarity to the question."""

    route: RouteDecision | None
    search_plan: SearchPlan | None
    retrieved: Annotated[list[Evidence], merge_evidence]
    relevance: Annotated[list[float], extend]


class BasicState(SearchState, total=False):
    """`basic`'s run, and the part of every graph that answers from passages and checks the answer: the model's
    draft, whether the run abstains on it (a refusal, a failed check: a quote may stand in), the judge's verdict."""

    draft: str
    answer_doubted: bool
    verdict: Verdict | None


class RagState(BasicState, total=False):
    """`rag`'s run: the retrieval plan (one parallel search per step)."""

    plan: RetrievalPlan | None


class ExtractState(BasicState, total=False):
    """`extract`'s run: the answer candidates taken from the passages, and each reading of them."""

    candidates: list[Candidate]
    readings: Annotated[list[Reading], extend]


class SmallModelState(BasicState, total=False):
    """`small_model`'s run: the facts each passage's own model call found."""

    mapped: Annotated[list[MappedChunk], extend]


class PageindexState(BasicState, total=False):
    """`pageindex`'s run: `route` holds the files it reads, `retrieved` the sections the model picked in them."""


class AutoState(SearchState, total=False):
    """`auto`'s run: the graph it chose, which answers as its subgraph."""

    graph_choice: str


class SearchOutput(TypedDict):
    """What a search gives back, with no model call: the passages found (`retrieved`, best first) and the sentences
    in them most likely to answer the query (`highlights`), each with its citation label and place on its page."""

    retrieved: list[Evidence]
    highlights: list[Highlight]
    trace: list[TraceRecord]


class SearchThread(SearchInput, SearchOutput, total=False):
    """What a thread of searches keeps between them: the last query and what it found."""


class FindOutput(TypedDict):
    """What one search hands back to its thread (the passages and trace as its stages added them up)."""

    retrieved: Annotated[list[Evidence], merge_evidence]
    highlights: list[Highlight]
    trace: Annotated[list[TraceRecord], extend]


class FindState(SearchInput, FindOutput, total=False):
    """One search's run: its query, the documents a router chose, and what it found."""

    presearch: Presearch | None
    route: RouteDecision | None
    search_plan: SearchPlan | None
    relevance: Annotated[list[float], extend]


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
