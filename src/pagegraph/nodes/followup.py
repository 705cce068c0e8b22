"""Chat follow-ups ("and how much does it weigh?") name nothing the search could find: with earlier turns on the
thread, one model call rewrites the question into a standalone one, which every later stage searches and answers.
A reply that is empty or much longer than the question (an answer, not a rewrite) keeps the question as asked."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from pagegraph.config import Context
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of, recent_turns
from pagegraph.prompts.answer import TURN
from pagegraph.prompts.followup import FOLLOWUP_REQUEST, FOLLOWUP_SYSTEM
from pagegraph.services import Services
from pagegraph.state.graph import RagState

ANSWER_CHARS_SHOWN = 400
REWRITE_MAX_TOKENS = 96


class StandaloneQuestion(BaseModel):
    question: str = Field(description="the last question, understandable without the conversation")


def rewrite_followup(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    context = context_of(runtime)
    turns = recent_turns(state, context)
    if not turns or not context.rewrite_followups:
        return {}
    timer = StageTimer("rewrite_followup")
    asked = state["question"]
    conversation = "\n".join(
        TURN.format(question=turn.question, answer=turn.answer[:ANSWER_CHARS_SHOWN]) for turn in turns
    )
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        StandaloneQuestion,
        [
            SystemMessage(content=FOLLOWUP_SYSTEM),
            HumanMessage(content=FOLLOWUP_REQUEST.format(turns=conversation, question=asked)),
        ],
        default=StandaloneQuestion(question=asked),
        purpose="rewrite_followup",
        repair=False,
        max_tokens=REWRITE_MAX_TOKENS,
    )
    rewritten = " ".join(result.value.question.split()) if result.ok else ""
    if not rewritten or len(rewritten) > 3 * len(asked) + 150:
        summary = f"kept as asked (unusable rewrite: {result.error or 'empty, or far longer than the question'})"
        return {"trace": [timer.record(summary, attempts=result.attempts, details={"asked": asked})]}
    summary = "already standalone" if rewritten == asked else f"rewritten: {rewritten}"
    details = {"asked": asked, "standalone": rewritten}
    return {"question": rewritten, "trace": [timer.record(summary, attempts=result.attempts, details=details)]}
