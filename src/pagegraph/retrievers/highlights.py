"""Evidence first: the sentences of the top passages most likely to hold the answer, picked without a chat model.

Each sentence is scored by its embedding's cosine to the question's (the index's own embedder), the share of the
question's content words it holds, and what the answer should look like: a number question prefers sentences
with numbers and units, a name question capitalised names, a list question enumerations. Sentences are located in
their page's text, so every highlight carries offsets a viewer can mark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pagegraph.indexing.bm25 import tokenize
from pagegraph.state.answering import Evidence, Highlight
from pagegraph.state.records import Page

AnswerShape = Literal["number", "list", "name", "yes_no", "explanation"]

_NUMBER_QUESTION = re.compile(
    r"\b(how\s+(many|much|long|far|tall|high|heavy|big|large|old|often)|what\s+(percentage|percent|share|number|"
    r"amount|total|value|size|rate|ratio|price|cost|year|date|time)|when|which\s+year|weight|capacity|voltage|"
    r"temperature|torque|dimension)\b",
    re.IGNORECASE,
)
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
_CAPITALISED = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
# Sentence ends, and line breaks (table rows, list items, headings end a sentence too).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|\n+")
MIN_WORDS = 3
MAX_SENTENCE_CHARS = 400
DENSE_WEIGHT, LEXICAL_WEIGHT, SHAPE_WEIGHT, RANK_WEIGHT = 0.55, 0.35, 0.15, 0.05


def answer_shape(question: str) -> AnswerShape:
    """What the answer to a question looks like: a number, a list, a name, yes or no, or an explanation."""
    if _YES_NO_QUESTION.search(question):
        return "yes_no"
    if _NUMBER_QUESTION.search(question):
        return "number"
    if _NAME_QUESTION.search(question):
        return "name"
    if _LIST_QUESTION.search(question):
        return "list"
    return "explanation"


def shape_fit(sentence: str, shape: AnswerShape) -> float:
    """How well a sentence has the form of the answer, 0..1."""
    if shape == "number":
        return 1.0 if _UNIT.search(sentence) else 0.6 if _NUMBER.search(sentence) else 0.0
    if shape == "name":
        return min(1.0, len(_CAPITALISED.findall(sentence)) / 2)
    if shape == "list":
        return min(1.0, (sentence.count(",") + sentence.count(";") + sentence.count("|")) / 3)
    return 0.0


def sentences(text: str) -> list[tuple[int, str]]:
    """(offset in `text`, sentence) of each sentence worth showing."""
    found = []
    start = 0
    for end_match in [*_SENTENCE_END.finditer(text), None]:
        end = end_match.start() if end_match else len(text)
        piece = text[start:end]
        stripped = piece.strip(" \t|-*•#")
        if len(stripped.split()) >= MIN_WORDS:
            found.append((start + piece.index(stripped), stripped[:MAX_SENTENCE_CHARS]))
        start = end_match.end() if end_match else len(text)
    return found


@dataclass
class _Candidate:
    passage: Evidence
    rank: int
    sentence: str


def locate(sentence: str, evidence: Evidence, pages: Sequence[Page]) -> tuple[int, int, int] | None:
    """(page number, start, end) of a sentence in the text of one of the passage's pages."""
    for page in pages:
        if evidence.start_page <= page.number <= evidence.end_page:
            at = page.text.find(sentence)
            if at >= 0:
                return page.number, at, at + len(sentence)
    return None


def pick_highlights(
    question: str,
    passages: Sequence[Evidence],
    embed: Callable[[list[str]], np.ndarray],
    pages_of: Callable[[Evidence], Sequence[Page]],
    *,
    count: int,
) -> list[Highlight]:
    """The `count` sentences of `passages` (best first) most likely to hold the answer, each located in its page."""
    candidates = [
        _Candidate(passage, rank, sentence)
        for rank, passage in enumerate(passages)
        for _, sentence in sentences(passage.text)
    ]
    if not candidates:
        return []
    vectors = embed([question, *(c.sentence for c in candidates)])
    dense = vectors[1:] @ vectors[0]
    terms = set(tokenize(question))
    shape = answer_shape(question)
    scored = []
    for candidate, similarity in zip(candidates, dense):
        words = set(tokenize(candidate.sentence))
        lexical = len(terms & words) / len(terms) if terms else 0.0
        score = (
            DENSE_WEIGHT * float(similarity)
            + LEXICAL_WEIGHT * lexical
            + SHAPE_WEIGHT * shape_fit(candidate.sentence, shape)
            + RANK_WEIGHT / (1 + candidate.rank)
        )
        scored.append((score, candidate))
    picked: list[Highlight] = []
    seen: set[str] = set()
    for score, candidate in sorted(scored, key=lambda pair: -pair[0]):
        if len(picked) == count:
            break
        if candidate.sentence in seen:
            continue
        where = locate(candidate.sentence, candidate.passage, pages_of(candidate.passage))
        if where is None:
            continue
        page, start, end = where
        seen.add(candidate.sentence)
        label = candidate.passage.model_copy(update={"start_page": page, "end_page": page}).label()
        picked.append(
            Highlight(
                passage_id=candidate.passage.id,
                source=candidate.passage.source,
                label=label,
                page=page,
                sentence=candidate.sentence,
                start=start,
                end=end,
                score=round(score, 4),
            )
        )
    return picked
