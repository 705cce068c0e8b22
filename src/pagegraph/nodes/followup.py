"""Chat follow-ups ("and how much does it weigh?") name nothing the search could find: with earlier turns on the
thread, one model call rewrites the question into a standalone one, which every later stage searches and answers.
A reply that is empty, does not end like a question when the question did, or is much longer than the question (an
answer, not a rewrite) keeps the question as asked."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.llm.calls import invoke_model, message_text
from pagegraph.llm.structured import reply_cap
from pagegraph.nodes.common import StageTimer, context_of, recent_turns
from pagegraph.prompts.answer import TURN
from pagegraph.prompts.followup import FOLLOWUP_EXAMPLES, FOLLOWUP_REQUEST, FOLLOWUP_SYSTEM
from pagegraph.services import Services
from pagegraph.state.graph import RunState

QUESTION_MARKS = ("?", "？")


def rewrite_followup(state: RunState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    context = context_of(runtime)
    turns = recent_turns(state, context)
    if not turns or not context.rewrite_followups:
        return {}
    timer = StageTimer("rewrite_followup")
    asked = state["question"]
    conversation = "\n".join(
        TURN.format(question=turn.question, answer=turn.answer[: context.followup_answer_chars]) for turn in turns
    )
    messages: list[BaseMessage] = [SystemMessage(content=FOLLOWUP_SYSTEM)]
    for example_turns, example_question, example_rewrite in FOLLOWUP_EXAMPLES:
        messages.append(HumanMessage(content=FOLLOWUP_REQUEST.format(turns=example_turns, question=example_question)))
        messages.append(AIMessage(content=example_rewrite))
    messages.append(HumanMessage(content=FOLLOWUP_REQUEST.format(turns=conversation, question=asked)))
    model = services.chat_model(context, temperature=0.0)
    reply, call = invoke_model(
        model, messages, purpose="rewrite_followup", **reply_cap(model, context.followup_max_tokens)
    )
    rewritten = standalone_question(message_text(reply))
    if not usable_rewrite(asked, rewritten):
        summary = f"kept as asked (unusable rewrite: {rewritten[:80]!r})"
        return {"trace": [timer.record(summary, calls=[call], details={"asked": asked})]}
    summary = "already standalone" if rewritten == asked else f"rewritten: {rewritten}"
    details = {"asked": asked, "standalone": rewritten}
    return {"question": rewritten, "trace": [timer.record(summary, calls=[call], details=details)]}


def standalone_question(reply: str) -> str:
    """The reply's first line, without quotes or a label the model repeated."""
    line = next((line.strip() for line in reply.splitlines() if line.strip()), "")
    line = line.removeprefix("Rewritten question:").strip()
    return " ".join(line.strip("\"'“”").split())


def usable_rewrite(asked: str, rewritten: str) -> bool:
    if not rewritten or len(rewritten) > 3 * len(asked) + 150:
        return False
    return not asked.rstrip().endswith(QUESTION_MARKS) or rewritten.endswith(QUESTION_MARKS)
