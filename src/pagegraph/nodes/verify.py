"""Verifier: keep only citations of evidence the answer model was given, write them as labels, check that the
answer's values are in the sentences it cites (without a model), and give the answer its confidence and band
(`nodes.confidence`, from the `judge` stage's verdict). An answer that says in its own words that the passages do
not hold the answer is a refusal, and so is a judged one whose confidence is below
`Context.confidence.abstain_below`."""

from __future__ import annotations

import re
from typing import Any

from langgraph.runtime import Runtime

from pagegraph.checks.periods import other_periods
from pagegraph.checks.values import Holding, asks_computation, check_values
from pagegraph.config import Context
from pagegraph.nodes.common import StageTimer, context_of, finished_turn, readable_evidence, usage_update
from pagegraph.nodes.confidence import answer_confidence, refuses_in_words
from pagegraph.nodes.highlight import sentence_locator
from pagegraph.nodes.language import band_label, question_language
from pagegraph.prompts.answer import FORMAT_INSTRUCTIONS, MISSING_SECTION, REFUSAL
from pagegraph.retrievers.highlights import Location
from pagegraph.services import Services
from pagegraph.state.answering import Citation, Evidence, EvidenceSentence, ValueCheck
from pagegraph.state.graph import RagState
from pagegraph.store.bm25 import tokenize

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,300})\]")
_NUMBERS = re.compile(r"^\s*\d+(?:\s*(?:,|;|and|-|–)\s*\d+)*\s*$")
_PAGE = re.compile(r"p{1,2}\.\s*(\d+)")
_FILE_NAME = re.compile(r"\w\.(?:pdf|md|markdown|txt|docx|vtt|srt|json)\b", re.I)
_REFUSAL_WORDS = set(tokenize(REFUSAL))
_HEADING = re.compile(r"^(#+)[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
# the sections each structured document is asked for, as its instructions write them
SECTIONS = {kind: _HEADING.findall(text) for kind, text in FORMAT_INSTRUCTIONS.items() if kind != "answer"}
REFUSED_IN_WORDS = "the answer model said the retrieved passages do not hold the answer"
UNCONFIRMED = "the evidence did not confirm the answer the model wrote (confidence {value:.2f}, below {threshold:.2f})"


def _cited_numbers(inside: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:,|;|and)\s*", inside.strip()):
        if m := re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part):
            numbers.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.isdigit():
            numbers.append(int(part))
    return numbers


def _cited_label(inside: str, evidence: list[Evidence]) -> list[int]:
    """A citation written as a label: the evidence from that file whose pages hold the page it names."""
    lowered = inside.lower()
    same_file = [n for n, e in enumerate(evidence, 1) if e.source.lower() in lowered]
    page = _PAGE.search(lowered)
    if page is not None:  # the number printed on the page, as labels show it, or the page's place in the file
        number = int(page.group(1))
        same_file = [
            n
            for n in same_file
            if evidence[n - 1].start_page <= number <= evidence[n - 1].end_page
            or page.group(1) in (evidence[n - 1].start_label, evidence[n - 1].end_label)
        ]
    return same_file[:1]


def resolve_citations(draft: str, evidence: list[Evidence]) -> tuple[str, list[int], int]:
    """The answer with citations written as evidence labels, the evidence numbers cited (in order of first
    citation), and how many citations pointed at no evidence (removed)."""
    cited: list[int] = []
    invalid = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal invalid
        inside = match.group(1)
        numbers = _cited_numbers(inside) if _NUMBERS.match(inside) else _cited_label(inside, evidence)
        valid = [n for n in numbers if 1 <= n <= len(evidence)]
        if not valid:
            if _NUMBERS.match(inside) or _FILE_NAME.search(inside) or _PAGE.search(inside.lower()):
                invalid += 1
                return ""
            return match.group(0)
        cited.extend(n for n in valid if n not in cited)
        return " ".join(evidence[n - 1].label() for n in dict.fromkeys(valid))

    text = _BRACKETS.sub(replace, draft)
    text = re.sub(r"[ \t]+([.,;:])", r"\1", re.sub(r"[ \t]{2,}", " ", text)).strip()
    return text, cited, invalid


def strip_citations(text: str) -> str:
    """The text without its bracketed citations (numbers or labels)."""
    return _BRACKETS.sub(" ", text)


def content_tokens(text: str) -> set[str]:
    return set(tokenize(strip_citations(text)))


def overlap(answer_tokens: set[str], text: str) -> float:
    if not answer_tokens:
        return 0.0
    return len(answer_tokens & set(tokenize(text))) / len(answer_tokens)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?![^\[]*\])")  # not inside a [label, p. 3]


def attribute(text: str, evidence: list[Evidence], min_tokens: int, min_overlap: float) -> tuple[str, list[int]]:
    """Cite, for each sentence of at least `min_tokens` content words that cites nothing, the evidence sharing most
    of its words (at least `min_overlap` of them).

    Small models often answer correctly from a passage without writing its number; the label then comes from the
    evidence the sentence's words were taken from."""
    attributed: list[int] = []
    lines = []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            lines.append(line)
            continue
        parts: list[tuple[str, int | None]] = []
        for sentence in _SENTENCE_END.split(line):
            tokens = content_tokens(sentence)
            best = None
            if not _BRACKETS.search(sentence) and len(tokens) >= min_tokens and evidence:
                scores = [overlap(tokens, e.text) for e in evidence]
                best = max(range(len(evidence)), key=scores.__getitem__)
                best = best if scores[best] >= min_overlap else None
            parts.append((sentence, best))
            if best is not None and best + 1 not in attributed:
                attributed.append(best + 1)
        rendered = []
        for i, (sentence, best) in enumerate(parts):
            # a run of sentences from the same passage carries its label once, at the end of the run
            if best is None or (i + 1 < len(parts) and parts[i + 1][1] == best):
                rendered.append(sentence)
                continue
            rendered.append(cited_sentence(sentence, evidence[best].label()))
        lines.append(" ".join(rendered))
    return "\n".join(lines), attributed


def cited_sentence(sentence: str, mark: str) -> str:
    """The sentence with a citation before its closing punctuation ("98 kg [1]."), where sentence splitting keeps
    it with the sentence it cites."""
    stripped = re.sub(r"\s+([.,;:!?])", r"\1", sentence.rstrip())
    return f"{stripped[:-1]} {mark}{stripped[-1]}" if stripped[-1:] in ".!?" else f"{stripped} {mark}"


def is_refusal(draft: str, cited: list[int]) -> bool:
    """An empty answer, the refusal sentence with nothing else but citations (small models cite the passages they
    found wanting), or an uncited answer that contains the refusal sentence."""
    words = set(tokenize(strip_citations(draft)))
    return words <= _REFUSAL_WORDS or (not cited and _REFUSAL_WORDS <= words)


def with_sections(text: str, output_type: str) -> tuple[str, list[str]]:
    """A structured document with each section it was asked for and lacks added at the end, saying that the model
    wrote nothing there; and the names of those added."""
    written = {" ".join(title.split()).casefold() for _, title in _HEADING.findall(text)}
    missing = [(marks, title) for marks, title in SECTIONS.get(output_type, []) if title.casefold() not in written]
    added = "".join(f"\n\n{marks} {title}\n{MISSING_SECTION}" for marks, title in missing)
    return text + added, [title for _, title in missing]


def citation(evidence: Evidence, origin: str) -> Citation:
    return Citation(
        source=evidence.source,
        section=evidence.section,
        start_page=evidence.start_page,
        end_page=evidence.end_page,
        chunk_ids=evidence.chunk_ids,
        label=evidence.label(),
        origin=origin,
    )


def value_check(
    state: RagState, text: str, evidence: list[Evidence], cited: list[int], services: Services, context: Context
) -> tuple[ValueCheck, EvidenceSentence | None, int | None]:
    """The value check of an answer, and the sentence that states its values (with the number of the passage
    holding it), located on its page. The answer's values are looked up in the passages it cites, and, when some are
    missing there, in every passage given to the model: a value another passage states is supported by it (the
    caller cites that passage). A value that sentence, a table row, states only in the column of another period
    than the year the question names (`checks.periods`) is not supported either. Passages are read as retrieved
    (an excerpt the model read, with its tables as readings, is looked up in its whole passage), so that a sentence
    is found on its page."""
    retrieved = {p.id: p for p in state.get("retrieved") or []}
    passages = [retrieved.get(e.id, e) for e in evidence]
    texts = [p.text for p in passages]
    finding = check_values(text, state["question"], texts, cited)
    if finding.missing and len(cited) < len(passages):
        anywhere = check_values(text, state["question"], texts, range(1, len(passages) + 1))
        finding = anywhere if not anywhere.missing else finding
    index = services.index(context) if services.has_index(context) else None

    def located(holding: Holding | None) -> tuple[EvidenceSentence | None, Location | None]:
        if holding is None:
            return None, None
        passage = passages[holding.passage - 1]
        readable = index is not None and bool(readable_evidence(index, [passage], state))
        support = context.retrieval.page_rules.printed_offset_support
        where = sentence_locator(index, support)(holding.sentence, passage) if readable else None
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
    others = []
    if finding.values and not finding.missing and where is not None:
        others = other_periods(finding.values, state["question"], where.page_text, where.start)
    doubted = bool(finding.missing or others)
    status = "no_values" if not finding.values else "unsupported" if doubted else "supported"
    check = ValueCheck(
        status=status,
        values=[v.text for v in finding.values],
        missing=[v.text for v in finding.missing],
        other_period=[
            f"{o.value.text} is for {o.period} in the cited row; for {o.asked} it reads {' or '.join(o.asked_cells)}"
            for o in others
        ],
        closest=sentence if doubted else None,
        # a question about a difference answered in words ("how do the plans differ?") asked for no calculation
        computed=asks_computation(state["question"]) and any(v.kind != "name" for v in finding.values),
    )
    holder = finding.sentence.passage if finding.sentence is not None and not doubted else None
    return check, (None if doubted else sentence), holder


def verify(state: RagState, runtime: Runtime[Context], services: Services) -> dict[str, Any]:
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
    doubts = [*(f"missing {v}" for v in checked.missing), *checked.other_period]
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
        "low_confidence": confidence.band != "supported",
        **usage_update([*(state.get("trace") or []), trace]),
        **finished_turn(state, text),
        "trace": [trace],
    }
