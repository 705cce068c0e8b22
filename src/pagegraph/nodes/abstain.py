"""Abstention: say plainly, in the question's language, that the documents do not hold the answer, why, and what to
ingest — unless the run gave up on the answer model's reply while an evidence sentence matches the question strongly
(`checks.quotes`): that sentence is then the answer, quoted with its citation (band `quoted`)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from pagegraph.checks.quotes import quotable_highlight
from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, finished_turn, names_documents, usage_update
from pagegraph.nodes.language import band_label, question_language
from pagegraph.prompts.abstain import ABSTAIN_TEXTS
from pagegraph.state.answering import Citation, EvidenceSentence, Highlight
from pagegraph.state.graph import BasicState


def abstain(state: BasicState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Abstain, naming the documents read, in the question's language; or quote (see the module). A search the user
    did not point at documents chose them itself, and may have missed the one that holds the answer: the user is
    told how to name it."""
    timer = StageTimer("abstain")
    context = context_of(runtime)
    reason = state.get("abstain_reason") or "no relevant passage was found"
    language = question_language(state["question"], context.reading)
    if state.get("answer_doubted"):
        quote = quotable_highlight(
            state["question"], state.get("highlights") or [], context.confidence, context.gate, context.reading
        )
        if quote is not None:
            return quoted(state, quote, language, f"{reason}; quoted {quote.label} instead", timer)
    route = state.get("route")
    sources = list(dict.fromkeys(e.source for e in state.get("retrieved") or []))  # in (step, rank) order
    texts = ABSTAIN_TEXTS.get(language, ABSTAIN_TEXTS["en"])
    if route:
        searched = texts.searched.format(documents=", ".join(route.names))
    else:
        searched = texts.passages_from.format(documents=", ".join(sources)) if sources else ""
    # naming a document helps only where the search chose among more than it read
    searched_all = route is not None and route.method in ("all", "given")
    hint = texts.name_hint if sources and not names_documents(state) and not searched_all else texts.ingest_hint
    message = texts.message.format(reason=reason, searched=searched, hint=hint)
    return {
        "answer": message,
        "citations": [],
        "abstained": True,
        "abstain_reason": reason,
        "confidence": 0.0,
        "band": "not_found",
        "band_label": band_label("not_found", language),
        "value_check": None,
        "second_reading": None,
        "low_confidence": True,
        "evidence": state.get("evidence") or [],
        **usage_update(state.get("trace") or []),
        **finished_turn(state, message),
        "trace": [timer.record(reason)],
    }


def quoted(state: BasicState, quote: Highlight, language: str, summary: str, timer: StageTimer) -> dict[str, Any]:
    """The answer that quotes `quote`: its sentence and label in the question's language's words, cited to its
    passage and marked on its page; its confidence is the sentence's highlight score (at most 1)."""
    sentence = " ".join(quote.sentence.split())
    answer = ABSTAIN_TEXTS.get(language, ABSTAIN_TEXTS["en"]).quoted.format(sentence=sentence, label=quote.label)
    passage = next((p for p in state.get("retrieved") or [] if p.id == quote.passage_id), None)
    chunk_ids = passage.chunk_ids if passage is not None else [quote.passage_id]
    citation = Citation(
        source=quote.source,
        section=passage.section if passage is not None else "",
        start_page=quote.page,
        end_page=quote.page,
        chunk_ids=chunk_ids,
        label=quote.label,
        origin="quoted",
        quote=EvidenceSentence(
            sentence=quote.sentence,
            label=quote.label,
            chunk_ids=chunk_ids,
            page=quote.page,
            start=quote.start,
            end=quote.end,
        ),
    )
    return {
        "answer": answer,
        "citations": [citation],
        "abstained": False,
        "abstain_reason": None,
        "confidence": round(min(1.0, quote.score), 3),
        "band": "quoted",
        "band_label": band_label("quoted", language),
        "value_check": None,
        "second_reading": None,
        "low_confidence": True,
        "evidence": state.get("evidence") or [],
        **usage_update(state.get("trace") or []),
        **finished_turn(state, answer),
        "trace": [timer.record(summary, ids=[quote.label])],
    }
