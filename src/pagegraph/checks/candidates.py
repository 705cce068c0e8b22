"""Answer candidates, without a model: what in the passages a question reads could be its answer — each table cell
of the best rows with its row label, column heading and the table's units; each number, amount, percentage and date
of the best sentences with the words around it, and their names where the question asks for a name — ranked by how
well the sentence and the candidate's own label match the question. The reader picks among them (`nodes.pick`)
instead of writing a value, so it cannot state one the passages do not hold. A question answered in words (why, how,
what something means) has no candidates of its words: its reader writes it (`nodes.read`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from pagegraph.checks.values import Value, extract_values, same_value
from pagegraph.config import PickingKnobs, ReadingKnobs
from pagegraph.retrievers.highlights import answer_shape, asked_columns, score_sentences
from pagegraph.state.answering import GAP_MARK, Candidate, CandidateKind, Evidence
from pagegraph.text.dates import MONTH_NAME
from pagegraph.text.tables import TableRow, table_rows
from pagegraph.text.words import content_words, matches

if TYPE_CHECKING:
    from pagegraph.llm.embedder import Embedder

# names are candidates where the question asks for one (who, which company, a list); elsewhere a sentence's
# capitalised words are mostly headings and terms, not answers
_NAMED_SHAPES = frozenset({"name", "list"})
_EMPTY_CELL = frozenset({"—", "–", "-", "n/a", "N/A"})
_CURRENCY_SIGNS = "$€£¥"
_DIGIT_NEXT = re.compile(r"\s*[-(]?\d")
_AFTER_WORDS = 6  # words after a value shown with it: its unit and what follows ("27% of adults 65 and older")
_LEADERS = re.compile(r"\.{5,}|(?:\. ){4,}")  # a contents line's dots leading to its page number
# a question asking for two or more things: "X, and how many Y?", "of A and of B", "on MMLU and on TimeQA"
_SEVERAL = re.compile(
    r",\s*and\s+\w|\band\s+(?:what|how|which|who|when|where|whether|of|on|for|in|at|to|the\s+\w+\s+of)\b|\bboth\b",
    re.IGNORECASE,
)


# what a question asks for, for the kinds of value that can answer it (`fits_question`)
_TIME_ASKED = re.compile(
    r"\b(?:when|how\s+long|(?:what|which|in\s+what)\s+(?:year|date|day|month|time|period|quarter))\b", re.IGNORECASE
)
_SHARE_ASKED = re.compile(r"\b(?:percent(?:age)?s?|proportion|fraction|share\s+of)\b|%", re.IGNORECASE)
_MONEY_ASKED = re.compile(r"\b(?:dollars?|euros?|pounds|yen|usd|eur)\b|[$€£¥]", re.IGNORECASE)
_TIME_UNIT = r"(?:second|minute|hour|day|week|month|quarter|year)"
# "six months", "six-month", and the first of two: "three and six months", "three- and six-month periods"
_DURATION_AFTER = re.compile(rf"\s*-?\s*(?:(?:and|or|to)\s+\w+[\s-]+)?(?P<unit>{_TIME_UNIT})s?\b", re.IGNORECASE)
# a number after a month's name is a day of a date a line break or a stray space cut ("December 31 ,")
_MONTH_BEFORE = re.compile(rf"\b{MONTH_NAME}\s*$", re.IGNORECASE)
# a number that names a part of the document, not a quantity: "Table 2", "Note 7", "Item 1A", "page 12"
_REFERENCE_BEFORE = re.compile(
    r"\b(?:table|figure|fig\.|section|item|note|notes|appendix|chapter|step|part|page|p\.|pp\.|exhibit|schedule|"
    r"article|footnote)\s*$",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?:1[89]|20)\d\d")


class _Place(TypedDict):
    """Where a candidate stands: its sentence, the passage's number among those read, and its citation label."""

    sentence: str
    passage: int
    label: str


def fits_question(question: str, text: str, before: str = "", after: str = "") -> bool:
    """Whether a value written `text`, with the words `before` and `after` it, is of a kind that can answer
    `question`: a date, a year or a duration ("six months ended") only where the question asks when or how long,
    or counts in the duration's unit ("how many minutes"); an amount of money not where it asks for a percentage, a
    percentage not where it names a currency; never a number that names a part of the document ("Table 2")."""
    if _REFERENCE_BEFORE.search(before):
        return False
    values = extract_values(text, names=False)
    if not values:
        return True  # a name or words: the question's shape decides those
    value = values[0]
    time_asked = bool(_TIME_ASKED.search(question))
    if value.kind == "date" or (value.kind == "number" and _YEAR.fullmatch(value.text.strip())):
        return time_asked
    if value.kind == "number" and _MONTH_BEFORE.search(before):
        return time_asked
    duration = _DURATION_AFTER.match(after)
    if duration and value.kind == "number":
        unit = duration.group("unit").lower()
        counted = rf"\bhow\s+many\s+(?:\w+\s+)?{unit}s\b|\b(?:in|number\s+of)\s+{unit}s\b"
        return time_asked or bool(re.search(counted, question, re.IGNORECASE))
    if value.kind == "money" and _SHARE_ASKED.search(question) and not _MONEY_ASKED.search(question):
        return False
    return not (value.kind == "percent" and _MONEY_ASKED.search(question) and not _SHARE_ASKED.search(question))


def asks_several(question: str) -> bool:
    """Whether a question asks for more than one value or name (a two-place question, a list)."""
    return bool(_SEVERAL.search(question)) or answer_shape(question) == "list"


def _label_match(label: str, asked: set[str], reading: ReadingKnobs) -> float:
    """The share of the question's words that a candidate's own label holds."""
    if not asked:
        return 0.0
    words = content_words(label)
    return sum(matches(word, words, reading) for word in asked) / len(asked)


def _row_of(sentence: str, rows: Sequence[TableRow]) -> TableRow | None:
    """The table row a scored sentence reads, where it is one: the sentence is the row's reading, or its start (a
    reading is cut where a stop stands before a number: "Approx. 0.7 kg"), less a gap mark after it."""
    text = sentence.strip().removesuffix(GAP_MARK.strip()).strip()
    return next((row for row in rows if text and row.reading.startswith(text)), None)


def _cells(row: TableRow) -> list[tuple[str, str, str]]:
    """A row's non-empty cells, each with what it measures (the row's label, the column's heading, the heading of
    the labels' column, where a table names itself or a segment: "Domestic Segment Performance Summary", and the
    units) and its option (`Revenues, 2014 (in thousands): $ 5,504,656`)."""
    found = []
    table = row.headings[0] if row.headings else ""
    for heading, cell in zip(row.headings[1:], row.cells[1:]):
        if cell and cell not in _EMPTY_CELL:
            label = ", ".join(part for part in (row.label, heading, table) if part)
            option = f"{label} ({row.units}): {cell}" if row.units else f"{label}: {cell}"
            found.append((cell, ", ".join(part for part in (label, row.units) if part), " ".join(option.split())))
    return found


def _around(sentence: str, value: Value, after_previous: int, before: int) -> tuple[str, str]:
    """The value with up to `before` words before it (none before `after_previous`, where the sentence's previous
    candidate value ends) and a few after, within its sentence; and the same without the words after: the option, which ends
    with the value. No option holds another value, so none starts another's: a model copying a sentence's words
    would otherwise run on past the value asked to the last one it could end at."""
    head = sentence[after_previous : value.start].split()[-before:]
    tail = sentence[value.end :].split()[:_AFTER_WORDS]
    option = " ".join([*head, *sentence[value.start : value.end].split()])
    return " ".join([option, *tail]), option


def _written(sentence: str, value: Value) -> str:
    """The value as its sentence writes it, less a currency sign that belongs to the next amount of a row written as
    text ("Revenues $ 1,953,435 $ 1,308,061")."""
    if value.text[-1:] in _CURRENCY_SIGNS and _DIGIT_NEXT.match(sentence, value.end):
        return value.text[:-1].rstrip()
    return value.text


def _page_number(sentence: str, value: Value, passage: Evidence) -> bool:
    """Whether `value` is the number of the passage's page in its running header or footer: the first or last word of
    its line ("Apple Inc. | Q2 2023 Form 10-Q | 15", "98 User Manual") and one of the passage's page numbers, as
    counted or as printed."""
    if sentence[: value.start].strip() and sentence[value.end :].strip(" …"):
        return False
    numbers = {str(page) for page in range(passage.start_page, passage.end_page + 1)}
    numbers |= {label for label in (passage.start_label, passage.end_label) if label}
    return value.text.strip() in numbers


def _asked(value: Value, question_values: Sequence[Value]) -> bool:
    return any(same_value(value, asked) or same_value(asked, value) for asked in question_values)


def answer_candidates(
    question: str,
    passages: Sequence[Evidence],
    embedder: Embedder,
    knobs: PickingKnobs,
    reading: ReadingKnobs,
) -> list[Candidate]:
    """The candidates for answering `question` from `passages` (best first; a candidate's `passage` numbers them
    from 1), best first, at most `knobs.max_candidates`, a value stated twice offered once, where it is best
    labelled. Cells come from the columns the question names where it names some (`asked_columns`), so another
    year's cell of a row is no candidate for a question about one year. Values the question itself states are not
    candidates, nor are the values of a table of contents' lines."""
    shape = answer_shape(question)
    columns = asked_columns(question, reading)
    readable: list[Evidence] = []
    rows: dict[int, list[TableRow]] = {}
    for number, passage in enumerate(passages):
        text, held = table_rows(passage.text, passage.table_header, columns)
        readable.append(passage.model_copy(update={"text": text}) if held else passage)
        rows[number] = held
    scored = sorted(score_sentences(question, readable, embedder, reading), key=lambda s: -s.score)
    asked = content_words(question)
    question_values = extract_values(question)
    found: list[Candidate] = []
    for sentence in [s for s in scored if not _LEADERS.search(s.sentence)][: knobs.sentences]:
        passage = passages[sentence.passage]
        where = _Place(sentence=sentence.sentence, passage=sentence.passage + 1, label=passage.label())
        row = _row_of(sentence.sentence, rows.get(sentence.passage, []))
        if row is not None:
            for cell, measures, option in _cells(row):
                if not fits_question(question, cell):
                    continue
                score = round(sentence.score + knobs.label_weight * _label_match(measures, asked, reading), 4)
                found.append(Candidate(kind="cell", value=cell, measures=measures, option=option, score=score, **where))
            continue
        after_previous = 0
        for value in extract_values(sentence.sentence, names=shape in _NAMED_SHAPES):
            if _asked(value, question_values) or _page_number(sentence.sentence, value, passage):
                continue  # part of the label ("In 2021, the rate was 91%"), or the page's number
            said = sentence.sentence
            if not fits_question(question, said[value.start : value.end], said[: value.start], said[value.end :]):
                continue
            start, after_previous = after_previous, value.end
            measures, option = _around(sentence.sentence, value, start, knobs.context_words)
            score = sentence.score + knobs.label_weight * _label_match(measures, asked, reading)
            kind: CandidateKind = "name" if value.kind == "name" else "value"
            written = _written(sentence.sentence, value)
            found.append(
                Candidate(kind=kind, value=written, measures=measures, option=option, score=round(score, 4), **where)
            )
    best: dict[str, Candidate] = {}
    for candidate in sorted(found, key=lambda c: -c.score):
        best.setdefault(" ".join(candidate.value.split()), candidate)
    return list(best.values())[: knobs.max_candidates]
