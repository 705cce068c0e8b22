"""Reduce: one call that writes the answer from the extracted facts only, citing their sources' numbers."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.config import Context
from pagegraph.llm.calls import invoke_model, message_text
from pagegraph.nodes.common import StageTimer, context_of
from pagegraph.nodes.language import answer_language_instruction
from pagegraph.prompts.answer import FORMAT_INSTRUCTIONS, REFUSAL
from pagegraph.prompts.small_model import REDUCE_REQUEST, REDUCE_SYSTEM
from pagegraph.services import Services
from pagegraph.state.graph import SmallModelState


def reduce(state: SmallModelState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("reduce")
    context = context_of(runtime)
    output_type = state.get("output_type") or context.output_type
    evidence = state.get("evidence") or []
    facts = "\n\n".join(
        f"[{n}] {e.label()}\n" + "\n".join(f"- {fact}" for fact in e.text.split("\n"))
        for n, e in enumerate(evidence, 1)
    )
    messages = [
        SystemMessage(content=REDUCE_SYSTEM.format(refusal=REFUSAL)),
        HumanMessage(
            content=REDUCE_REQUEST.format(
                facts=facts,
                question=state["question"],
                instructions=FORMAT_INSTRUCTIONS[output_type]
                + answer_language_instruction(state["question"], context.reading),
            )
        ),
    ]
    reply, call = invoke_model(services.chat_model(context), messages, purpose="reduce")
    return {
        "draft": message_text(reply).strip(),
        "trace": [timer.record(f"{output_type} from {len(evidence)} sources of facts", calls=[call])],
    }
