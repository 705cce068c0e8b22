"""Verifier: keep only citations of evidence the answer model was given, write them as labels, check that the
answer's values are in the sentences it cites (without a model), and give the answer its confidence and band
(`checks.confidence`, from the `judge` stage's verdict). An answer that says in its own words that the passages do
not hold the answer is a refusal, and so is a judged one whose confidence is below
`Context.confidence.abstain_below`. A short answer stating a number no passage given to the model holds, or a value
from a table row with no column for the year asked, is withheld (`misstated`); the abstention may then quote a
strong evidence sentence instead (`nodes.abstain`)."""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from pagegraph.checks.citations import (
    attribute,
    citation,
    content_tokens,
    is_refusal,
    overlap,
    resolve_citations,
    strip_citations,
)
from pagegraph.checks.columns import OtherColumn, other_columns
from pagegraph.checks.confidence import answer_confidence, refuses_in_words
from pagegraph.checks.periods import other_periods, paragraph_year, stated_for_another_year
from pagegraph.checks.values import Holding, asks_computation, check_values
from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, finished_turn, readable_evidence, usage_update
from pagegraph.nodes.highlight import sentence_locator
from pagegraph.nodes.language import band_label, question_language
from pagegraph.prompts.answer import FORMAT_INSTRUCTIONS, MISSING_SECTION
from pagegraph.retrievers.highlights import Location
from pagegraph.services import Services
from pagegraph.state.answering import Evidence, EvidenceSentence, ValueCheck, ValueStatus
from pagegraph.state.graph import BasicState

_HEADING = re.compile(r"^(#+)[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# the sections each structured document is asked for, as its instructions write them
SECTIONS = {kind: _HEADING.findall(text) for kind, text in FORMAT_INSTRUCTIONS.items() if kind != "answer"}
REFUSED_IN_WORDS = "the answer model said the retrieved passages do not hold the answer"
NO_SUCH_PERIOD = "the answer's value is another period's: the row or sentence stating it gives none for {year}"
UNSTATED = "the answer model wrote {values}, which no passage it was given states"
UNCONFIRMED = "the evidence did not confirm the answer the model wrote (confidence {value:.2f}, below {threshold:.2f})"


def with_sections(text: str, output_type: str) -> tuple[str, list[str]]:
    """A structured document with each section it was asked for and lacks added at the end, saying that the model
    wrote nothing there; and the names of those added."""
    written = {" ".join(title.split()).casefold() for _, title in _HEADING.findall(text)}
    missing = [(marks, title) for marks, title in SECTIONS.get(output_type, []) if title.casefold() not in written]
    added = "".join(f"\n\n{marks} {title}\n{MISSING_SECTION}" for marks, title in missing)
    return text + added, [title for _, title in missing]


def value_check(
    state: BasicState, text: str, evidence: list[Evidence], cited: list[int], services: Services, context: Context
) -> tuple[ValueCheck, EvidenceSentence | None, int | None]:
    """The value check of an answer, and the sentence that states its values (with the number of the passage
    holding it), located on its page. The answer's values are looked up in the passages it cites, and, when some are
    missing there, in every passage given to the model: a value another passage states is supported by it (the
    caller cites that passage). A value that sentence, a table row, states only in the column of another period
    than the year the question names (`checks.periods`), or only outside the columns the question names
    (`checks.columns`), is not supported either. Passages are read as retrieved
    (an excerpt the model read, with its tables as readings, is looked up in its whole passage), so that a sentence
    is found on its page."""
    retrieved = {p.id: p for p in state.get("retrieved") or []}
    passages = [retrieved.get(e.id, e) for e in evidence]
    texts = [p.text for p in passages]
    finding = check_values(text, state["question"], texts, cited, context.reading)
    nowhere = finding.missing  # the values no passage given states
    if finding.missing and len(cited) < len(passages):
        anywhere = check_values(text, state["question"], texts, range(1, len(passages) + 1), context.reading)
        finding, nowhere = (anywhere, []) if not anywhere.missing else (finding, anywhere.missing)
    index = services.index(context) if services.has_index(context) else None

    def located(holding: Holding | None) -> tuple[EvidenceSentence | None, Location | None]:
        if holding is None:
            return None, None
        passage = passages[holding.passage - 1]
        support = context.retrieval.page_rules.printed_offset_support
        readable = index is not None and readable_evidence(index, [passage], state)
        where = sentence_locator(index, support)(holding.sentence, passage) if index is not None and readable else None
        if where is None:
            return EvidenceSentence(sentence=holding.sentence, label=passage.label(), chunk_ids=passage.chunk_ids), None
        place = {"start_page": where.page, "end_page": where.page, "section": where.section or passage.section}
        place |= {"start_label": where.printed, "end_label": where.printed}
        label = passage.model_copy(update=place).label()
        sentence = EvidenceSentence(
            sentence=holding.sentence,
            label=label,
            chunk_ids=passage.chunk_ids,
            page=where.page,
            start=where.start,
            end=where.end,
        )
        return sentence, where

    sentence, where = located(finding.sentence)
    others, outside = [], OtherColumn([], "")
    if finding.values and not finding.missing and where is not None:
        others = other_periods(
            finding.values, state["question"], where.page_text, where.start, context.confidence.period_heading_lines
        )
        if not others:
            outside = other_columns(finding.values, state["question"], where.page_text, where.start, context.reading)
    if finding.values and not finding.missing and finding.sentence is not None and not others and not outside.values:
        heading_year = (
            paragraph_year(where.page_text, where.start, context.confidence.period_heading_lines) if where else None
        )
        others = stated_for_another_year(finding.values, state["question"], finding.sentence.sentence, heading_year)
    doubted = bool(finding.missing or others or outside.values)
    status: ValueStatus = "no_values" if not finding.values else "unsupported" if doubted else "supported"
    check = ValueCheck(
        status=status,
        values=[v.text for v in finding.values],
        missing=[v.text for v in finding.missing],
        unstated=[v.text for v in nowhere if v.kind != "name"],
        other_period=[
            f"{o.value.text} is for {o.period} where the evidence states it; "
            + (f"for {o.asked} it reads {' or '.join(o.asked_cells)}" if o.asked_cells else f"it has no {o.asked}")
            for o in others
        ],
        other_column=[
            f"{v.text} is in another column of the cited row than the question names; in those it names, the row "
            f"reads: {outside.asked_reading}"
            for v in outside.values
        ],
        period_absent=next((o.asked for o in others if not o.asked_cells), None),
        closest=sentence if doubted else None,
        # a question about a difference answered in words ("how do the plans differ?") asked for no calculation
        computed=asks_computation(state["question"]) and any(v.kind != "name" for v in finding.values),
    )
    holder = finding.sentence.passage if finding.sentence is not None and not doubted else None
    return check, (None if doubted else sentence), holder


def misstated(checked: ValueCheck) -> str | None:
    """Why a short answer whose values the evidence does not state is withheld, or None: a number, amount,
    percentage or date no passage given to the model holds (unless the question asks for a computed value), or a
    value from a table row with no column for the year asked. A value the evidence holds for another period or
    column than the one asked, a name the passages spell otherwise and one wrong item of a list leave the answer
    shown, banded uncertain, with what the evidence says beside it."""
    if checked.period_absent is not None:
        return NO_SUCH_PERIOD.format(year=checked.period_absent)
    if checked.unstated and not checked.computed:
        return UNSTATED.format(values=", ".join(checked.unstated))
    return None


def verify(state: BasicState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
    timer = StageTimer("verify")
    context = context_of(runtime)
    evidence = state.get("evidence") or []
    draft = state.get("draft", "")
    text, cited, invalid = resolve_citations(draft, evidence)
    if is_refusal(text, cited):
        reason = "the answer model found no answer in the retrieved passages"
        return {"abstain_reason": reason, "answer_doubted": True, "trace": [timer.record(reason)]}
    text, attributed = attribute(
        text, evidence, context.reading.attribution_min_tokens, context.reading.attribution_min_overlap
    )
    attributed = [n for n in attributed if n not in cited]
    checked, quote, holder = value_check(state, text, evidence, [*cited, *attributed], services, context)
    if holder is not None and holder not in cited and holder not in attributed:
        attributed.append(holder)  # the passage stating the answer's values, though the answer did not cite it
    supporting = " ".join(evidence[n - 1].text for n in [*cited, *attributed])
    language = question_language(state["question"], context.reading)
    # words of an answer written in the question's language are not looked for in evidence in another one
    same_language = not supporting or question_language(supporting, context.reading) == language
    overlap_share = round(overlap(content_tokens(text), supporting), 3) if same_language else None
    short = (state.get("output_type") or context.output_type) == "answer"
    if short and (misstatement := misstated(checked)):
        details: dict[str, object] = {"value_check": checked.model_dump(mode="json"), "withheld": text}
        return {
            "abstain_reason": misstatement,
            "answer_doubted": True,
            "trace": [timer.record(misstatement, details=details)],
        }
    if refuses_in_words(strip_citations(text), checked):
        reason = REFUSED_IN_WORDS
        details = {"overlap": overlap_share, "withheld": text}
        return {"abstain_reason": reason, "answer_doubted": True, "trace": [timer.record(reason, details=details)]}
    verdict = state.get("verdict")
    confidence = answer_confidence(verdict, overlap_share, checked, context)
    if verdict is not None and confidence.value < context.confidence.abstain_below:
        reason = UNCONFIRMED.format(value=confidence.value, threshold=context.confidence.abstain_below)
        details = {**confidence.model_dump(), "withheld": text}
        return {"abstain_reason": reason, "answer_doubted": True, "trace": [timer.record(reason, details=details)]}
    text, unwritten = with_sections(text, state.get("output_type") or context.output_type)
    citations = [citation(evidence[n - 1], "model") for n in cited]
    citations += [citation(evidence[n - 1], "attributed") for n in attributed]
    if holder is not None and quote is not None:
        citations = [
            c.model_copy(update={"quote": quote}) if c.chunk_ids == evidence[holder - 1].chunk_ids else c
            for c in citations
        ]
    doubts = [*(f"missing {v}" for v in checked.missing), *checked.other_period, *checked.other_column]
    values = f"; values {checked.status}" + (f" ({'; '.join(doubts)})" if doubts else "")
    trace = timer.record(
        f"{len(cited)} cited by the model, {len(attributed)} attributed, {invalid} invalid removed{values}; "
        f"confidence {confidence.value:.2f}, {confidence.band}"
        + (f"; sections the model left out: {', '.join(unwritten)}" if unwritten else ""),
        ids=[c.label for c in citations],
        details=confidence.model_dump(),
    )
    return {
        "answer": text,
        "citations": citations,
        "abstained": False,
        "abstain_reason": None,
        "confidence": confidence.value,
        "band": confidence.band,
        "band_label": band_label(confidence.band, language),
        "value_check": checked,
        "second_reading": verdict.reread if verdict is not None and verdict.restated is False else None,
        "low_confidence": confidence.band != "supported",
        **usage_update([*(state.get("trace") or []), trace]),
        **finished_turn(state, text),
        "trace": [trace],
    }
