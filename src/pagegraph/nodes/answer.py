"""Orchestrator: the answer, written from numbered evidence that fits the model's context, citing it."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.llm.budget import evidence_budget, fit_evidence, token_counter
from pagegraph.llm.calls import invoke_model, message_text
from pagegraph.nodes.common import StageTimer, context_of, recent_turns
from pagegraph.nodes.language import answer_language_instruction
from pagegraph.prompts.answer import ANSWER_REQUEST, ANSWER_SYSTEM, FORMAT_INSTRUCTIONS, HISTORY, REFUSAL, TURN
from pagegraph.retrievers.highlights import asked_columns
from pagegraph.services import Services
from pagegraph.state.answering import Evidence
from pagegraph.state.graph import BasicState
from pagegraph.text.tables import ColumnChoice, table_readings


def render_evidence(number: int, evidence: Evidence, columns: ColumnChoice | None = None) -> str:
    """A passage as the answer model reads it: its number, its label, its text with tables as readings of the
    `columns` asked about (a passage without a table as it is)."""
    readable, rows = table_readings(evidence.text, evidence.table_header, columns)
    return f"[{number}] {evidence.label()}\n{readable if rows else evidence.text}"


def answer(state: BasicState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("answer")
    context = context_of(runtime)
    output_type = state.get("output_type") or context.output_type
    temperature = context.temperature
    if output_type != "answer":
        temperature = min(temperature, context.structured_max_temperature)
    model = services.chat_model(context, temperature=temperature)
    # each step's best passages first, so the budget drops the weakest passage of every step before a strong one
    ranked = sorted(state.get("retrieved") or [], key=lambda e: (e.rank, e.step))
    turns = "\n".join(TURN.format(question=t.question, answer=t.answer) for t in recent_turns(state, context))
    system = ANSWER_SYSTEM.format(refusal=REFUSAL)
    request = ANSWER_REQUEST.format(
        history=HISTORY.format(turns=turns) if turns else "",
        question=state["question"],
        instructions=FORMAT_INSTRUCTIONS[output_type] + answer_language_instruction(state["question"], context.reading),
        evidence="{evidence}",
    )
    budget = min(context.reading.max_evidence_tokens, evidence_budget(model, system + request, services.settings))
    count = token_counter(model)
    columns = asked_columns(state["question"], context.reading)
    fit = fit_evidence(
        list(enumerate(ranked, 1)), lambda item: render_evidence(*item, columns), budget=budget, count=count
    )
    kept = [evidence for _, evidence in fit.kept]
    blocks = "\n\n".join(render_evidence(n, e, columns) for n, e in enumerate(kept, 1))
    messages = [SystemMessage(content=system), HumanMessage(content=request.replace("{evidence}", blocks))]
    reply, call = invoke_model(model, messages, purpose="answer")
    summary = f"{output_type} from {len(kept)} passages ({fit.tokens} of {budget} evidence tokens; {len(fit.dropped)} dropped)"
    return {
        "draft": message_text(reply).strip(),
        "evidence": kept,
        "trace": [timer.record(summary, ids=[e.label() for e in kept], calls=[call])],
    }
