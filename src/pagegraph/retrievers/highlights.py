"""Evidence first: the sentences of the top passages most likely to hold the answer, picked without a chat model.

Each sentence is scored by its embedding's cosine to the question's (the index's own embedder), the share of the
question's content words it holds (weighted by how few sentences hold them), and what the answer should look like: a number question prefers sentences
with numbers and units, a name question capitalised names, a list question enumerations. Table rows are scored and shown as
readings that carry their row label and column headings (`Brightness — 32": 350 cd/m²`), not as bare cells.
Sentences are located in their page's text, so every highlight carries offsets a viewer can mark, and labelled with
the section that holds them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from pagegraph.config import ReadingKnobs
from pagegraph.state.answering import Evidence, Highlight
from pagegraph.state.documents import Chunk, Page
from pagegraph.text.sentences import sentences
from pagegraph.text.tables import ColumnChoice, table_readings
from pagegraph.text.words import AMOUNT_ZH, content_words, matches

if TYPE_CHECKING:
    from pagegraph.llm.embedder import Embedder

AnswerShape = Literal["number", "list", "name", "yes_no", "explanation"]

_NUMBER_QUESTION = re.compile(
    r"\b(how\s+(many|much|long|far|tall|high|heavy|big|large|old|often)|what\s+(percentage|percent|share|number|"
    r"amount|total|value|size|rate|ratio|price|cost|year|date|time)|when|which\s+year|weight|capacity|voltage|"
    r"temperature|torque|dimension)\b",
    re.IGNORECASE,
)
_NUMBER_QUESTION_ZH = re.compile(AMOUNT_ZH)
_LIST_QUESTION = re.compile(r"\b(list|enumerate|what\s+are|which\s+\w+\s+are|name\s+(all|the)|steps)\b", re.IGNORECASE)
_NAME_QUESTION = re.compile(
    r"^\s*(who|whom|whose)\b|\b(which|what)\s+(company|person|author|organi[sz]ation|name)\b", re.IGNORECASE
)
_YES_NO_QUESTION = re.compile(
    r"^\s*(is|are|was|were|does|do|did|can|could|should|will|would|has|have|had)\b", re.IGNORECASE
)
_NUMBER = re.compile(r"\d")
_UNIT = re.compile(
    r"\d\s*(%|percent|kg|g|mm|cm|m|km|kwh|wh|kw|w|v|a|nm|hz|°c|c|h|min|s|years?|months?|days?|hours?|"
    r"million|billion|thousand|\$|usd|eur|dollars?)\b",
    re.IGNORECASE,
)
_UNIT_ZH = re.compile(
    r"\d\s*(?:小时|分钟|秒|天|周|个月|年|岁|元|美元|万|亿|公里|千米|米|厘米|毫米|公斤|千克|克|瓦|伏|度|%)"
)
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")


def answer_shape(question: str) -> AnswerShape:
    """What the answer to a question looks like: a number, a list, a name, yes or no, or an explanation."""
    if _YES_NO_QUESTION.search(question):
        return "yes_no"
    if _NUMBER_QUESTION.search(question) or _NUMBER_QUESTION_ZH.search(question):
        return "number"
    if _NAME_QUESTION.search(question):
        return "name"
    if _LIST_QUESTION.search(question):
        return "list"
    return "explanation"


def shape_fit(sentence: str, shape: AnswerShape) -> float:
    """How well a sentence has the form of the answer, 0..1."""
    if shape == "number":
        if _UNIT.search(sentence) or _UNIT_ZH.search(sentence):
            return 1.0
        return 0.6 if _NUMBER.search(sentence) else 0.0
    if shape == "name":
        return min(1.0, len(_CAPITALISED.findall(sentence)) / 2)
    if shape == "list":
        return min(1.0, (sentence.count(",") + sentence.count(";") + sentence.count("|")) / 3)
    return 0.0


@dataclass(frozen=True)
class ScoredSentence:
    """A sentence of passage number `passage`, at `offset` in its text, with how likely it holds the answer."""

    passage: int
    offset: int
    sentence: str
    score: float


@dataclass
class Location:
    """Where a sentence sits: its page (and the number printed on it, where that differs), its offsets in that page's
    text, the section that holds it, and the page's text (what surrounds the sentence: a table row's heading, say)."""

    page: int
    start: int
    end: int
    section: str
    page_text: str
    printed: str | None = None


def locate_in_chunks(
    sentence: str, chunks: Sequence[Chunk], pages: Sequence[Page], printed: Mapping[int, str]
) -> Location | None:
    """The first of `chunks` (a passage's, in order) whose text holds the sentence, and the sentence's place in the
    text of one of that chunk's pages (`printed`: the numbers printed on the document's pages)."""
    for chunk in chunks:
        if sentence not in chunk.text:
            continue
        for page in pages:
            if chunk.start_page <= page.number <= chunk.end_page and (at := page.text.find(sentence)) >= 0:
                section = chunk.section_path[-1] if chunk.section_path else ""
                return Location(page.number, at, at + len(sentence), section, page.text, printed.get(page.number))
    return None


def asked_columns(question: str, reading: ReadingKnobs) -> ColumnChoice:
    """The columns of a table a question asks about: those whose headings hold the most of its content words (a year,
    a model's name, a subject), when some hold more than others; else every column ("Net income — 2013: 112,403"
    for a question about 2013, not the row's three years)."""
    asked = content_words(question)

    def choose(headings: list[str]) -> set[int] | None:
        held = [sum(matches(word, content_words(heading), reading) for word in asked) for heading in headings[1:]]
        most = max(held, default=0)
        if not most or min(held) == most:
            return None
        return {i for i, count in enumerate(held, 1) if count == most}

    return choose


def with_table_readings(
    passages: Sequence[Evidence], question: str, reading: ReadingKnobs
) -> tuple[list[Evidence], dict[str, str]]:
    """The passages with their tables written as readings of the columns the question asks about (`table_readings`,
    `asked_columns`), and each reading's row as its page writes it, by what `sentences` keeps of the reading."""
    readable, rows = [], {}
    columns = asked_columns(question, reading)
    for passage in passages:
        text, raw_of = table_readings(passage.text, passage.table_header, columns)
        readable.append(passage.model_copy(update={"text": text}) if raw_of else passage)
        rows.update({text[: reading.sentence_max_chars]: row for text, row in raw_of.items()})
    return readable, rows


def score_sentences(
    question: str, passages: Sequence[Evidence], embedder: Embedder, reading: ReadingKnobs
) -> list[ScoredSentence]:
    """Every sentence of `passages` (best passage first), in reading order, scored by `reading.sentence_weights`
    for how likely it holds the answer to `question`. For a question in a script the embedder does not read, its
    cosines are noise: the words it holds take their weight."""
    weights = reading.sentence_weights
    candidates = [
        (rank, offset, sentence) for rank, p in enumerate(passages) for offset, sentence in sentences(p.text, reading)
    ]
    if not candidates:
        return []
    dense_weight, lexical_weight = weights.dense, weights.lexical
    if embedder.reads(question):
        cosines = embedder.embed([sentence for _, _, sentence in candidates]) @ embedder.embed_queries([question])[0]
        dense = embedder.comparable(cosines)
    else:
        dense_weight, lexical_weight, dense = 0.0, weights.dense + weights.lexical, np.zeros(len(candidates))
    terms = content_words(question)
    found = [{t for t in terms if matches(t, content_words(sentence), reading)} for _, _, sentence in candidates]
    # A question word found in every passage (the product's name, say) tells less than one found in few.
    weight = {t: float(np.log(len(found) / max(1, sum(t in f for f in found)))) for t in terms}
    total = sum(weight.values())
    shape = answer_shape(question)
    scored = []
    for (rank, offset, sentence), similarity, matched in zip(candidates, dense, found):
        lexical = sum(weight[t] for t in matched) / total if total else 0.0
        fit = shape_fit(sentence, shape)
        score = dense_weight * float(similarity) + lexical_weight * lexical + weights.shape * fit
        if shape == "number" and not fit:
            score *= weights.no_number  # a sentence without a figure can hardly state the figure asked for
        score += weights.rank / (1 + rank)
        scored.append(ScoredSentence(rank, offset, sentence, round(score, 4)))
    return scored


def pick_highlights(
    question: str,
    passages: Sequence[Evidence],
    embedder: Embedder,
    locate: Callable[[str, Evidence], Location | None],
    *,
    count: int,
    reading: ReadingKnobs,
) -> list[Highlight]:
    """The `count` sentences of `passages` (best first) most likely to hold the answer, each located by `locate`
    (sentences it cannot place are passed over) and shown whole, over the line breaks that wrap it; a table row as
    its reading, located by its cells."""
    picked: list[Highlight] = []
    seen: set[str] = set()
    readable, rows = with_table_readings(passages, question, reading)
    shown: dict[int, list[tuple[int, str]]] = {}
    for candidate in sorted(score_sentences(question, readable, embedder, reading), key=lambda c: -c.score):
        if len(picked) == count:
            break
        passage = passages[candidate.passage]
        sentence = candidate.sentence
        if sentence not in rows:
            whole = shown.setdefault(
                candidate.passage, sentences(readable[candidate.passage].text, reading, wrapped=True)
            )
            sentence = next((s for at, s in whole if at <= candidate.offset < at + len(s)), sentence)
        if sentence in seen:
            continue
        where = locate(rows.get(sentence, sentence), passage)
        if where is None and sentence != candidate.sentence:  # a whole sentence the page writes otherwise
            sentence, where = candidate.sentence, locate(candidate.sentence, passage)
        if where is None or sentence in seen:
            continue
        seen.add(sentence)
        place = {"start_page": where.page, "end_page": where.page, "section": where.section}
        place |= {"start_label": where.printed, "end_label": where.printed}
        picked.append(
            Highlight(
                passage_id=passage.id,
                source=passage.source,
                label=passage.model_copy(update=place).label(),
                page=where.page,
                sentence=sentence,
                start=where.start,
                end=where.end,
                score=candidate.score,
            )
        )
    return picked


def focus_passages(
    passages: Sequence[Evidence],
    scored: Sequence[ScoredSentence],
    *,
    best: int,
    context: int,
    span_chars: int,
    heading_of: Callable[[str, Evidence], str | None] | None = None,
) -> list[Evidence]:
    """The passages cut down to what a small model should read: the `best` highest-scoring sentences of all of
    them, each with `context` sentences on either side, in reading order and joined by " … " where text is left
    out; with `heading_of` (the heading of periods over the paragraph a passage's sentence is in, read on its page:
    "Three Months Ended December 31, 2022 Compared with ..."), each run of sentences after its heading where the
    excerpt does not show it. Passages keep their labels; those without a chosen sentence are dropped, the rest are
    ordered by their best sentence."""
    by_passage: dict[int, list[ScoredSentence]] = {}
    for sentence in scored:
        by_passage.setdefault(sentence.passage, []).append(sentence)
    chosen = sorted(scored, key=lambda s: -s.score)[:best]
    focused: list[tuple[float, Evidence]] = []
    for number in dict.fromkeys(s.passage for s in chosen):
        in_passage = by_passage[number]
        keep: set[int] = set()
        for sentence in chosen:
            if sentence.passage == number:
                at = in_passage.index(sentence)
                keep.update(range(max(0, at - context), min(len(in_passage), at + context + 1)))
        text = passages[number].text
        spans: list[list[int]] = []  # [start, end, the sentence it opens with]
        for at in sorted(keep):
            start, end = in_passage[at].offset, _sentence_end(text, in_passage, at, span_chars)
            if spans and start <= spans[-1][1] + 1:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end, at])
        parts: list[str] = []
        for start, end, at in spans:
            part = text[start:end].strip()
            heading = heading_of(in_passage[at].sentence, passages[number]) if heading_of else None
            if heading and not any(heading in shown for shown in [*parts, part]):
                parts.append(heading)
            parts.append(part)
        excerpt = " … ".join(parts)
        top = max(s.score for s in chosen if s.passage == number)
        focused.append((top, passages[number].model_copy(update={"text": excerpt})))
    return [passage for _, passage in sorted(focused, key=lambda pair: -pair[0])]


def _sentence_end(text: str, in_passage: Sequence[ScoredSentence], at: int, span_chars: int) -> int:
    """Where sentence `at` ends in `text`: where the next sentence starts, so that short lines between them (table
    cells, a figure on its own line) stay with the sentence before them, at most `span_chars` from its start."""
    start = in_passage[at].offset
    end = in_passage[at + 1].offset if at + 1 < len(in_passage) else len(text)
    return min(end, start + span_chars)
