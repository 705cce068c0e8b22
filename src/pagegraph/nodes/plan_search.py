"""Small-model planner: keywords and optional pre-filters (file kind, part of a file name) in one model call.
Output that never validates (after `repair_attempts` repair calls) falls back to keywords from the question itself."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of, empty_index_update
from pagegraph.prompts.small_model import PLAN_SEARCH_REQUEST, PLAN_SEARCH_SYSTEM
from pagegraph.services import Services
from pagegraph.state.answering import SearchPlan
from pagegraph.state.graph import SmallModelState
from pagegraph.text.words import tokenize

_FILE_KIND_WORDS = {
    "pdf": {"pdf", "pdfs"},
    "md": {"md", "markdown"},
    "markdown": {"md", "markdown"},
    "docx": {"docx", "word"},
    "txt": {"txt", "text"},
    "vtt": {"vtt", "transcript", "transcripts", "call", "recording"},
    "srt": {"srt", "transcript", "transcripts", "subtitles"},
}
_QUESTION_WORDS = {"how", "what", "which", "when", "where", "who", "whom", "why", "does", "did", "many", "much"}


def question_keywords(question: str) -> list[str]:
    """The question's longest content words, in question order: the planner's fallback."""
    words = [w for w in dict.fromkeys(tokenize(question)) if w not in _QUESTION_WORDS]
    longest = sorted(words, key=len, reverse=True)[:4]
    return [w for w in words if w in longest] or [question]


def grounded(plan: SearchPlan, question: str) -> tuple[SearchPlan, list[str]]:
    """Keep only the pre-filters the question itself asks for: small models fill them in unasked."""
    words = set(tokenize(question)) | set(question.lower().split())
    dropped = []
    file_filter, source_hint = plan.file_filter, plan.source_hint
    if file_filter and not (_FILE_KIND_WORDS.get(file_filter.lower().lstrip("*."), {file_filter.lower()}) & words):
        dropped.append(f"file_filter {file_filter!r}")
        file_filter = None
    if source_hint and not set(tokenize(source_hint)) <= words:
        dropped.append(f"source_hint {source_hint!r}")
        source_hint = None
    return plan.model_copy(update={"file_filter": file_filter, "source_hint": source_hint}), dropped


def plan_search(state: SmallModelState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("plan_search")
    context = context_of(runtime)
    if (empty := empty_index_update(services, context, readable_filter(state.get("filters")), timer)) is not None:
        return empty
    question = state["question"]
    messages = [
        SystemMessage(content=PLAN_SEARCH_SYSTEM),
        HumanMessage(content=PLAN_SEARCH_REQUEST.format(question=question)),
    ]
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        SearchPlan,
        messages,
        default=SearchPlan(keywords=question_keywords(question)),
        purpose="plan_search",
        repairs=context.repair_attempts,
    )
    plan, dropped = grounded(result.value, question)
    summary = f"keywords {plan.keywords}, file_filter {plan.file_filter}, source_hint {plan.source_hint}"
    if dropped:
        summary += f" ({', '.join(dropped)} dropped: the question does not ask for it)"
    if not result.ok:
        summary = f"model output invalid: keywords from the question {plan.keywords}"
    return {"search_plan": plan, "trace": [timer.record(summary, ids=plan.keywords, attempts=result.attempts)]}
