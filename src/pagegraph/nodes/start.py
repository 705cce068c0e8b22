"""First stage of every run: settle the output type, narrow the filters to what a LangGraph server user may read,
and refuse a question too long to answer before any model call (keeping only a short prefix of it, so that no
state, trace or reply echoes the rest), or one asked of a document the index does not hold."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from pagegraph.access.runs import readable_filter
from pagegraph.config import Context, Settings
from pagegraph.errors import PagegraphError
from pagegraph.llm.budget import context_window
from pagegraph.llm.calls import estimate_tokens
from pagegraph.nodes.common import context_of, match_document_names, pending_question, visible_documents
from pagegraph.services import Services
from pagegraph.state.filters import RetrievalFilter
from pagegraph.state.graph import FindState, RunState, SearchInput, unanswered


def length_refusal(question: str, settings: Settings, what: str = "question") -> str | None:
    """Why a question (`what`: or a search) is not run at all: empty, or over PAGEGRAPH_MAX_QUESTION_CHARS."""
    if not question:
        return f"the {what} is empty"
    if len(question) > settings.limits.max_question_chars:
        return (
            f"the {what} has {len(question):,} characters; the limit is {settings.limits.max_question_chars:,} "
            "(PAGEGRAPH_MAX_QUESTION_CHARS). Ask it in fewer words"
        )
    return None


def question_refusal(question: str, services: Services, context: Context) -> str | None:
    """Why a question is not answered at all (empty, or too long for the limits or the model's window)."""
    settings = services.settings
    if refusal := length_refusal(question, settings):
        return refusal
    window = context_window(services.chat_model(context), settings)
    limit = settings.question_token_limit(window)
    if (tokens := estimate_tokens(question)) > limit:
        return (
            f"the question has about {tokens:,} tokens; the limit is {limit:,} (PAGEGRAPH_MAX_QUESTION_TOKENS, at "
            f"most a quarter of the model's {window:,}-token window). Ask it in fewer words"
        )
    return None


SHOWN_NAMES = 8


def named_documents(state: SearchInput, filters: RetrievalFilter | None) -> list[str]:
    """The documents a run names: its `documents`, and those of its filter (as MCP and the tools send them)."""
    return [*(state.get("documents") or []), *(filters.documents if filters and filters.documents else [])]


def _unknown(what: str, requested: list[str], known: list[str], matches: Callable[[str], bool]) -> str | None:
    """Why `requested` names are refused: the first that `matches` says is none of `known`, with the closest known
    names (else the first of them)."""
    missing = next((name for name in requested if not matches(name)), None)
    if missing is None:
        return None
    closest = difflib.get_close_matches(missing.lower(), [k.lower() for k in known], n=3, cutoff=0.5)
    shown = [k for k in known if k.lower() in closest] or known[:SHOWN_NAMES]
    more = f" and {len(known) - len(shown)} more" if len(known) > len(shown) else ""
    listed = f"{', '.join(shown)}{more}"
    holds = (f"the closest: {listed}" if closest else f"it holds {listed}") if known else "it holds none yet"
    return f"no {what} in the index is called {missing!r}: {holds}"


def unknown_names(
    state: SearchInput, services: Services, context: Context, filters: RetrievalFilter | None
) -> str | None:
    """Why a run that names its documents, projects or source types is not run: a name that matches none the user
    may read (a document name matched as everywhere: exactly, ignoring case or the extension, or a unique part of a
    name). A user who mistyped one would otherwise read "nothing found" as the documents' answer. A document the
    user may not read is missing to them, as it is everywhere else."""
    asked = state.get("filters")
    asked = RetrievalFilter.model_validate(asked) if isinstance(asked, dict) else asked
    named = named_documents(state, filters)
    if not (named or (asked and (asked.projects or asked.source_types))):
        return None
    index = services.index(context)
    readable = visible_documents(index, readable_filter(None))  # projects and types: those the user may read
    for what, requested, known in (
        ("project", (asked.projects if asked else None) or [], {doc.tags.project for doc in readable}),
        ("source type", (asked.source_types if asked else None) or [], {doc.tags.source_type for doc in readable}),
    ):
        names = sorted(name for name in known if name)
        if problem := _unknown(what, requested, names, names.__contains__):
            return problem
    documents = sorted(doc.name for doc in visible_documents(index, filters))
    return _unknown(
        "document",
        named,
        documents,
        lambda name: bool(match_document_names([name], documents)),
    )


def asked_question(state: RunState) -> tuple[str, bool]:
    """This run's question, and whether a chat client sent it as the thread's last message. `question` holds the
    previous run's question until a caller sends a new one; a question already on the thread is that stale one."""
    question = state.get("question", "").strip()
    pending = pending_question(state)
    if pending is None:
        return question, False
    earlier = {m.text.strip() for m in state["messages"][:-1] if isinstance(m, HumanMessage)}
    turns = state.get("history") or []
    stale = not question or question in earlier or (turns and question == turns[-1].question)
    return (pending, True) if stale else (question, False)


def start(state: RunState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """Check the question, narrow the filters to what the user may read, and set the answer of a run that has not
    answered yet (the run's state is fresh: nothing of an earlier run is in it)."""
    context = context_of(runtime)
    question, from_messages = asked_question(state)
    filters = readable_filter(state.get("filters"))
    refusal = question_refusal(question, services, context) or unknown_names(state, services, context, filters)
    kept = services.settings.limits.refused_question_chars
    if refusal and len(question) > kept:
        question = question[:kept] + "…"
    return {
        "messages": [] if from_messages else [HumanMessage(question)],
        "filters": filters,
        "question": question,
        "output_type": state.get("output_type") or context.output_type,
        **unanswered(refusal),
    }


def start_search(state: FindState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """First stage of a search: refuse an empty or overlong query (the run fails, naming why), and narrow the
    filters to what a server user may read."""
    question = state.get("question", "").strip()
    filters = readable_filter(state.get("filters"))
    refusal = length_refusal(question, services.settings, "search") or unknown_names(
        state, services, context_of(runtime), filters
    )
    if refusal:
        raise PagegraphError(refusal)
    return {"question": question, "filters": filters}
