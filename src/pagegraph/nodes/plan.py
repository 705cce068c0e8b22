"""Planner: enumeration questions get one broad search aimed at lists and tables of contents, lookups one search
with the question itself, reasoning questions up to four model-planned searches (the question itself when the
model's plan never validates)."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from pagegraph.config import Context
from pagegraph.llm.structured import structured_call
from pagegraph.nodes.common import StageTimer, context_of, match_document_names
from pagegraph.prompts.plan import ENUMERATION_QUERY_SUFFIX, PLAN_REQUEST, PLAN_SYSTEM
from pagegraph.retrievers.fusion import question_kind
from pagegraph.services import Services
from pagegraph.state.answering import PlanStep, RetrievalPlan
from pagegraph.state.graph import RagState


class PlanDraft(BaseModel):
    steps: list[PlanStep] = Field(min_length=1, max_length=4)
    requires_combination: bool = False


def plan(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("plan")
    context = context_of(runtime)
    question = state["question"]
    documents = route.names if (route := state.get("route")) else []
    kind = question_kind(question)
    if kind == "enumeration":
        step = PlanStep(query=f"{question} {ENUMERATION_QUERY_SUFFIX}", expected_output="every item the documents list")
        return _planned(RetrievalPlan(kind=kind, steps=[step], method="rule"), timer, "enumeration: one broad search")
    if kind == "lookup":
        step = PlanStep(query=question, expected_output="the passage that states the answer")
        return _planned(RetrievalPlan(kind=kind, steps=[step], method="rule"), timer, "lookup: one search")

    messages = [
        SystemMessage(content=PLAN_SYSTEM),
        HumanMessage(content=PLAN_REQUEST.format(question=question, documents=", ".join(documents) or "all")),
    ]
    result = structured_call(
        services.chat_model(context, temperature=0.0),
        PlanDraft,
        messages,
        default=PlanDraft(steps=[PlanStep(query=question)]),
        purpose="plan",
        repairs=context.repair_attempts,
    )
    if result.ok:
        steps = [
            step.model_copy(update={"documents": match_document_names(step.documents, documents)})
            for step in result.value.steps
        ]
        drafted = RetrievalPlan(
            kind=kind, steps=steps, requires_combination=result.value.requires_combination, method="model"
        )
        return _planned(drafted, timer, f"reasoning: {len(steps)} planned searches", result.attempts)
    fallback = RetrievalPlan(kind=kind, steps=[PlanStep(query=question)], method="fallback")
    return _planned(fallback, timer, "model output invalid: searching with the question", result.attempts, result.error)


def _planned(
    retrieval_plan: RetrievalPlan,
    timer: StageTimer,
    summary: str,
    attempts: list | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    return {
        "plan": retrieval_plan,
        "trace": [
            timer.record(summary, ids=[s.query for s in retrieval_plan.steps], attempts=attempts or [], error=error)
        ],
    }
