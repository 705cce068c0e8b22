"""The extract graph's reader, for small models: copy the answer out of a few focused excerpts, measure how much of
it the cited excerpt holds, read whole passages once when that falls short, and abstain on the combined signals."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.checks.reading import answers_agree, judge_reading, reading_confidence
from pagegraph.config import Context
from pagegraph.llm.budget import evidence_budget, fit_evidence, token_counter
from pagegraph.llm.calls import invoke_model, message_text
from pagegraph.nodes.answer import render_evidence
from pagegraph.nodes.common import StageTimer, context_of, readable_evidence, recent_turns
from pagegraph.nodes.highlight import sentence_locator
from pagegraph.nodes.language import answer_language_instruction
from pagegraph.prompts.answer import HISTORY, REFUSAL, TURN
from pagegraph.prompts.extract import EXTRACT_REQUEST, EXTRACT_SYSTEM, SHAPE_INSTRUCTIONS
from pagegraph.retrievers.highlights import (
    answer_shape,
    asked_columns,
    focus_passages,
    score_sentences,
    with_table_readings,
)
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Reading
from pagegraph.state.graph import ExtractState
from pagegraph.text.dates import period_heading_above


def fell_short(reading: Reading, context: Context) -> bool:
    """Whether a focused read needs the whole passages: it refused, or too little of its answer is in its excerpt."""
    return reading.refused or reading.support < context.reading.widen_below


def focused_evidence(
    state: ExtractState, context: Context, services: Services, passages: list[Evidence]
) -> list[Evidence]:
    index = services.index(context)
    passages, _ = with_table_readings(passages, state["question"], context.reading)
    scored = score_sentences(state["question"], passages, index.embedder, context.reading)
    reading = context.reading
    locate = sentence_locator(index, context.retrieval.page_rules.printed_offset_support)

    def heading_of(sentence: str, passage: Evidence) -> str | None:
        where = locate(sentence, passage)
        lines = context.confidence.period_heading_lines
        heading = period_heading_above(where.page_text, where.start, lines) if where is not None else None
        return heading[1] if heading is not None else None

    return focus_passages(
        passages,
        scored,
        best=reading.focus_sentences,
        context=reading.focus_context,
        span_chars=reading.focus_span_chars,
        heading_of=heading_of,
    )


def read(state: ExtractState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """First read: the best sentences of the top passages with their neighbours. Second read (when the first fell
    short): the passages whole, as many as the evidence budget holds."""
    context = context_of(runtime)
    readings = state.get("readings") or []
    focused = readings[-1] if readings else None
    wide = focused is not None
    # the focused answer this wide read confirms, where it did not fall short
    confirmed = (
        focused
        if focused is not None and context.reading.confirm_answers and not fell_short(focused, context)
        else None
    )
    timer = StageTimer("read")
    model = services.chat_model(context)
    ranked = readable_evidence(services.index(context), state.get("retrieved") or [], state)  # in (step, rank) order
    if wide:
        passages, limit = ranked, context.reading.max_evidence_tokens
    else:
        top = ranked[: context.reading.highlight_passages]
        passages, limit = focused_evidence(state, context, services, top), context.reading.focus_max_tokens
    shape = answer_shape(state["question"])
    turns = "\n".join(TURN.format(question=t.question, answer=t.answer) for t in recent_turns(state, context))
    system = EXTRACT_SYSTEM.format(shape=SHAPE_INSTRUCTIONS[shape], refusal=REFUSAL)
    request = EXTRACT_REQUEST.format(
        history=HISTORY.format(turns=turns) if turns else "", question=state["question"], evidence="{evidence}"
    ) + answer_language_instruction(state["question"], context.reading)
    budget = min(limit, evidence_budget(model, system + request, services.settings))
    columns = asked_columns(state["question"], context.reading)
    fit = fit_evidence(
        list(enumerate(passages, 1)),
        lambda item: render_evidence(*item, columns),
        budget=budget,
        count=token_counter(model),
    )
    kept = [evidence for _, evidence in fit.kept]
    blocks = "\n\n".join(render_evidence(n, e, columns) for n, e in enumerate(kept, 1))
    messages = [SystemMessage(content=system), HumanMessage(content=request.replace("{evidence}", blocks))]
    reply, call = invoke_model(model, messages, purpose="read")
    draft = message_text(reply).strip()
    reading = judge_reading(draft, state["question"], kept, wide, context.reading)
    if not wide and (fell_short(reading, context) or context.reading.confirm_answers):
        reading = reading.model_copy(update={"widen": True})
    how = "whole passages" if wide else "focused excerpts"
    summary = f"{shape} answer from {len(kept)} {how} ({fit.tokens} of {budget} tokens): " + (
        "refused" if reading.refused else f"support {reading.support:.2f} in excerpt {reading.source}"
    )
    record = timer.record(summary, ids=[e.label() for e in kept], calls=[call])
    if confirmed is not None and reading.refused:
        # the whole passages hid what the excerpts showed: the focused answer, its excerpts and its draft stand
        kept_focused = confirmed.model_copy(update={"widen": False})
        record = record.model_copy(update={"summary": f"{summary}; the focused answer stands"})
        return {"readings": [kept_focused], "trace": [record]}
    if confirmed is not None and not answers_agree(confirmed.draft, reading.draft, state["question"]):
        reading = reading.model_copy(update={"disagrees": True})
        record = record.model_copy(update={"summary": f"{summary}; it differs from the focused answer"})
    return {
        "draft": reading.draft,
        "evidence": kept,
        "readings": [reading],
        "trace": [record],
    }


def weigh_answer(state: ExtractState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Abstain unless the final reading's combined confidence reaches `answer_threshold`."""
    timer = StageTimer("weigh")
    context = context_of(runtime)
    reading = (state.get("readings") or [])[-1]
    relevance = max(state.get("relevance") or [0.0])
    confidence = reading_confidence(reading, relevance, context)
    signals = {
        "refused": reading.refused,
        "support": reading.support,
        "relevance": round(relevance, 4),
        "confidence": round(confidence, 4),
        "wide": reading.wide,
        "disagrees": reading.disagrees,
    }
    if reading.refused:
        reason = "the answer model found no answer in the retrieved passages"
    elif reading.disagrees:
        reason = "the answer model gave different answers from the best excerpts and from the whole passages"
    elif confidence < context.confidence.answer_threshold:
        reason = (
            f"the answer is not supported well enough by the passages (confidence {confidence:.2f} < "
            f"{context.confidence.answer_threshold:.2f}: {reading.support:.0%} of it found in its excerpt, best similarity "
            f"{relevance:.2f})"
        )
    else:
        summary = f"confidence {confidence:.2f} ≥ {context.confidence.answer_threshold:.2f}"
        return {"trace": [timer.record(summary, details=signals)]}
    return {"abstain_reason": reason, "answer_doubted": True, "trace": [timer.record(reason, details=signals)]}
