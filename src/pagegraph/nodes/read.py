"""The extract graph's reader, for small models: copy the answer out of a few focused excerpts, measure how much of
it the cited excerpt holds, read whole passages once when that falls short, and abstain on the combined signals."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from pagegraph.checks.citations import cited_sentence, is_refusal, resolve_citations, strip_citations
from pagegraph.config import Context, ReadingKnobs
from pagegraph.llm.budget import evidence_budget, fit_evidence, token_counter
from pagegraph.llm.calls import invoke_model, message_text
from pagegraph.nodes.answer import render_evidence
from pagegraph.nodes.common import StageTimer, context_of, readable_evidence, recent_turns
from pagegraph.nodes.language import answer_language_instruction
from pagegraph.prompts.answer import HISTORY, REFUSAL, TURN
from pagegraph.prompts.extract import EXTRACT_REQUEST, EXTRACT_SYSTEM, SHAPE_INSTRUCTIONS
from pagegraph.retrievers.highlights import (
    answer_shape,
    asked_columns,
    content_words,
    focus_passages,
    matches,
    score_sentences,
    with_table_readings,
)
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, Reading
from pagegraph.state.graph import RagState

_FIGURE = re.compile(r"\d[\d,]*(?:\.\d+)?")
_COUNT_QUESTION = re.compile(r"\bhow\s+many\b", re.IGNORECASE)
_YES_NO = frozenset({"yes", "no"})


def figures(text: str) -> set[str]:
    return {match.replace(",", "") for match in _FIGURE.findall(text)}


def answer_support(answer: str, question: str, text: str, knobs: ReadingKnobs) -> float:
    """The share of the answer's own figures and words (those the question does not already hold) that `text`
    holds: 0 for an answer that only restates the question. A count (a "how many" question) is usually counted,
    not written: figures `text` lacks are not held against it, and a bare count is supported as far as `text` is
    about what the question counts (the share of the question's words it holds)."""
    asked_figures, asked_words = figures(question), content_words(question)
    passage_figures, passage_words = figures(text), content_words(text)
    own_figures = figures(answer) - asked_figures
    if _COUNT_QUESTION.search(question):
        own_figures &= passage_figures
    own_words = {w for w in content_words(_FIGURE.sub(" ", answer)) - _YES_NO if not matches(w, asked_words, knobs)}
    total = len(own_figures) + len(own_words)
    if not total:
        if _COUNT_QUESTION.search(question) and figures(answer) and asked_words:
            return sum(matches(w, passage_words, knobs) for w in asked_words) / len(asked_words)
        return 0.0
    found = len(own_figures & passage_figures) + sum(matches(w, passage_words, knobs) for w in own_words)
    return found / total


def judge_reading(draft: str, question: str, evidence: list[Evidence], wide: bool, knobs: ReadingKnobs) -> Reading:
    """The reading's signals: did the model refuse, and how much of its answer does the excerpt it cites hold (citing
    none: the excerpt holding most of it; verify attributes each sentence later). An answer citing an excerpt that
    holds less of it than another does is cited to that other one instead (small models often copy the right value
    and write the wrong number)."""
    answer, cited, _ = resolve_citations(draft, evidence)
    if is_refusal(answer, cited) or not evidence:
        return Reading(draft=draft, wide=wide, refused=True, support=0.0)
    plain = " ".join(strip_citations(draft).split())
    scores = {n: answer_support(plain, question, evidence[n - 1].text, knobs) for n in range(1, len(evidence) + 1)}
    best = max(scores, key=scores.__getitem__)
    if not cited:
        return Reading(draft=draft, wide=wide, refused=False, support=round(scores[best], 3), source=best)
    if scores[cited[0]] >= scores[best]:
        return Reading(draft=draft, wide=wide, refused=False, support=round(scores[cited[0]], 3), source=cited[0])
    draft = cited_sentence(plain, f"[{best}]")
    return Reading(draft=draft, wide=wide, refused=False, support=round(scores[best], 3), source=best)


def answers_agree(first: str, second: str, question: str) -> bool:
    """Whether two answers to a question say the same: they share a figure the question does not hold when both
    state one, else half the words the question does not hold of the shorter one."""
    first, second = strip_citations(first), strip_citations(second)
    asked = figures(question)
    first_figures, second_figures = figures(first) - asked, figures(second) - asked
    if first_figures and second_figures:
        return bool(first_figures & second_figures)
    asked_words = content_words(question)
    first_words, second_words = content_words(first) - asked_words, content_words(second) - asked_words
    if not first_words or not second_words:
        return True
    return len(first_words & second_words) >= 0.5 * min(len(first_words), len(second_words))


def fell_short(reading: Reading, context: Context) -> bool:
    """Whether a focused read needs the whole passages: it refused, or too little of its answer is in its excerpt."""
    return reading.refused or reading.support < context.reading.widen_below


def focused_evidence(state: RagState, context: Context, services: Services, passages: list[Evidence]) -> list[Evidence]:
    index = services.index(context)
    passages, _ = with_table_readings(passages, state["question"], context.reading)
    scored = score_sentences(state["question"], passages, index.embedder, context.reading)
    reading = context.reading
    return focus_passages(
        passages,
        scored,
        best=reading.focus_sentences,
        context=reading.focus_context,
        span_chars=reading.focus_span_chars,
    )


def read(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    """First read: the best sentences of the top passages with their neighbours. Second read (when the first fell
    short): the passages whole, as many as the evidence budget holds."""
    context = context_of(runtime)
    focused = (state.get("readings") or [None])[-1]
    wide = focused is not None
    confirming = wide and context.reading.confirm_answers and not fell_short(focused, context)
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
    if confirming and reading.refused:
        # the whole passages hid what the excerpts showed: the focused answer, its excerpts and its draft stand
        kept_focused = focused.model_copy(update={"widen": False})
        record = record.model_copy(update={"summary": f"{summary}; the focused answer stands"})
        return {"readings": [kept_focused], "trace": [record]}
    if confirming and not answers_agree(focused.draft, reading.draft, state["question"]):
        reading = reading.model_copy(update={"disagrees": True})
        record = record.model_copy(update={"summary": f"{summary}; it differs from the focused answer"})
    return {
        "draft": reading.draft,
        "evidence": kept,
        "readings": [reading],
        "trace": [record],
    }


def answer_confidence(reading: Reading, relevance: float, context: Context) -> float:
    """The combined abstention signal: 0 for a refusal, else the answer's support in its excerpt weighed with the
    retrieval similarity of the best passage."""
    if reading.refused:
        return 0.0
    return context.confidence.support_weight * reading.support + (1 - context.confidence.support_weight) * relevance


def weigh_answer(state: RagState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Abstain unless the final reading's combined confidence reaches `answer_threshold`."""
    timer = StageTimer("weigh")
    context = context_of(runtime)
    reading = (state.get("readings") or [])[-1]
    relevance = max(state.get("relevance") or [0.0])
    confidence = answer_confidence(reading, relevance, context)
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
