"""The values a text states — numbers, percentages, amounts of money, dates and names — normalised so that an
answer's values can be looked up in the evidence it cites without a model: "five" = 5, "1,200" = 1200 (and
"3,02,16,492" = 30216492), "$1.2 million" = 1,200,000, "12 %" = "12 percent", "31st March, 2007" = "March 31, 2007" =
2007-03-31.

Numbers compare by value, also across a scale the evidence leaves to a table heading ("1,234" in a table "in
millions" against "$1,234 million"), against their percentage ("0.12" and "12%"), against a parenthesised negative
of a financial statement ("(1,234)"), and rounded where the answer writes fewer digits than the evidence ("1.2
million" for 1,234,567). Dates compare by the parts the answer gives (a month and year match any day of it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pagegraph.config import ReadingKnobs
from pagegraph.text.dates import MONTH_NAME, MONTHS
from pagegraph.text.sentences import sentences
from pagegraph.text.words import content_words, matches, unspaced

ValueKind = Literal["number", "percent", "money", "date", "name"]

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SMALL = {word: value for value, word in enumerate(_UNITS)} | _TENS | {"a dozen": 12, "dozen": 12}
_SCALES = {
    "hundred": 1e2,
    "thousand": 1e3,
    "k": 1e3,
    "million": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "tn": 1e12,
    "lakh": 1e5,
    "crore": 1e7,
}
_CURRENCY = r"(?:US\$|A\$|C\$|HK\$|S\$|R\$|\$|€|£|¥|₹|₩|USD|EUR|GBP|JPY|CNY|RMB|INR|Rs\.?|Rp)"
_MONTH = MONTH_NAME
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:1[5-9]\d\d|2[01]\d\d)"
_DATES = [
    re.compile(rf"\b(?P<year>{_YEAR})-(?P<month>0?[1-9]|1[0-2])-(?P<day>0?[1-9]|[12]\d|3[01])\b"),
    re.compile(rf"\b(?P<day>{_DAY})(?:\s+of)?\s+(?P<month>{_MONTH}),?\s+(?P<year>{_YEAR})\b", re.I),
    re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<day>{_DAY}),?\s+(?P<year>{_YEAR})\b", re.I),
    re.compile(rf"\b(?P<month>{_MONTH}),?\s+(?P<year>{_YEAR})\b", re.I),
    # 31/03/2007 or 03/31/2007: both readings are kept where both are dates
    re.compile(rf"\b(?P<first>\d{{1,2}})[/.](?P<second>\d{{1,2}})[/.](?P<year>{_YEAR})\b"),
]
_SCALE_WORDS = "|".join(sorted(_SCALES, key=len, reverse=True))
_NUMBER = re.compile(
    # a currency starts no word ("delivers 42" holds no "Rs 42")
    rf"(?:(?<![^\W\d_])(?P<currency>{_CURRENCY})\s?)?(?P<sign>[-−])?(?:(?<![^\W\d_])(?P<currency2>{_CURRENCY})\s?)?"
    # Indian grouping (lakh, crore: "3,02,16,492") before the thousands', which would take its first digit alone
    r"(?P<digits>\d{1,2}(?:,\d{2})+,\d{3}(?:\.\d+)?|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:st|nd|rd|th)?"
    rf"(?:\s?(?P<scale>{_SCALE_WORDS})\b)?"
    r"(?:\s?(?P<percent>%|percent\b|per\s?cent\b|pct\b))?"
    rf"(?:\s?(?P<currency3>{_CURRENCY}|dollars?\b|euros?\b|pounds?\b|yen\b|rupees?\b))?",
    re.I,
)
_WORD_NUMBER = re.compile(
    r"\b(?P<words>(?:(?:a\s+)?dozen|"
    + "|".join(sorted([*_UNITS, *_TENS], key=len, reverse=True))
    + r")(?:[-\s](?:"
    + "|".join(_UNITS[1:10])
    + r"))?(?:\s+(?:hundred|thousand|million|billion)(?:\s+(?:and\s+)?(?:"
    + "|".join(sorted([*_UNITS[1:], *_TENS], key=len, reverse=True))
    + r"))?)?)\b"
    + r"(?:\s?(?P<percent>%|percent\b|per\s?cent\b))?",
    re.I,
)
# Names: runs of capitalised words (an initial capital and a lower-case letter, or an acronym) not opening a sentence.
_NAME = re.compile(
    r"(?<![.!?:]\s)(?<![.!?:]\s\s)(?<!^)(?<!\n)\b(?:[A-Z][a-z]+|[A-Z]{2,})\b(?:\s+(?:[A-Z][a-z]+|[A-Z]{2,})\b)*"
)
_NOT_NAMES = frozenset(
    {
        *(m.capitalize() for m in MONTHS),
        *"I The A An This That These Those It Its They Their He She His Her We Our You Your Yes No Not None".split(),
        *"Page Section Figure Fig Table Chapter Appendix Note Total According However Also And Or But".split(),
    }
)
# content words (singular, as `content_words` makes them) that name a scale or a currency, not what a value measures
_HOW_WRITTEN = frozenset(
    {*_SCALES, "dollar", "euro", "pound", "yen", "rupee", "usd", "eur", "gbp", "percent", "percentage", "pct"}
)
_LIST_MARK = re.compile(r"(?m)^\s*\d{1,2}[.)]\s")
_DESIGNATION = re.compile(r"-[A-Za-z](?!\w)")  # what follows the number of a form or type: 10-Q, 8-K, 3-D
_LABEL = re.compile(r"\[[^\[\]\n]{1,300}\]")
# A question asking for a value computed from others (a difference, ratio, change, sum), which the text need not state.
_COMPUTATION = re.compile(
    r"\b(?:differences?|differ|gaps?|ratios?|how\s+(?:much|many)\s+(?:higher|lower|more|less|greater|larger|smaller|"
    r"fewer|bigger)|how\s+many\s+times|(?:percent(?:age)?|absolute)\s+(?:change|increase|decrease|difference|growth)|"
    r"round(?:ed)?\s+(?:your|the)\s+answer|round(?:ed)?\s+to|sum\s+of|in\s+total|combined)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Value:
    """One value a text states, where it states it (`start`/`end` in the text), and what it is.

    `number`: the value of a number, percentage or amount (a percentage as written: 12 for "12%"); a date's parts
    in `date` (year, month or 0, day or 0), with a second reading for a day/month order that is not clear; a name's
    lower-cased words in `words`. `precision`: how many significant digits the text gives when it rounds (a
    decimal or a scale word), else None (exact)."""

    kind: ValueKind
    text: str
    start: int
    end: int
    number: float | None = None
    precision: int | None = None
    scaled: bool = False
    dates: tuple[tuple[int, int, int], ...] = ()
    words: tuple[str, ...] = ()

    def key(self) -> str:
        """A canonical spelling, for showing what was checked."""
        if self.kind == "date":
            year, month, day = self.dates[0]
            return "-".join(str(part).zfill(2) for part in (year, month, day) if part)
        if self.kind == "name":
            return " ".join(self.words)
        assert self.number is not None
        number = f"{self.number:,.10g}" if abs(self.number) >= 10_000 else f"{self.number:.10g}"
        return {"percent": f"{number}%", "money": f"money {number}"}.get(self.kind, number)


def _word_number(words: str) -> float | None:
    """The value of a number written in words: "five", "twenty-one", "two hundred and five", "a dozen"."""
    total, current = 0.0, 0.0
    tokens = re.split(r"[-\s]+", words.lower().strip())
    tokens = [t for t in tokens if t not in ("and", "a")]
    if not tokens:
        return None
    for token in tokens:
        if token in _SMALL:
            current += _SMALL[token]
        elif token == "hundred":
            current = (current or 1) * 100
        elif token in ("thousand", "million", "billion"):
            total += (current or 1) * _SCALES[token]
            current = 0
        else:
            return None
    return total + current


def _significant(digits: str) -> int:
    plain = digits.replace(",", "").replace(".", "").lstrip("0")
    return max(1, len(plain))


def _dates(text: str) -> list[Value]:
    found: list[Value] = []
    taken: list[tuple[int, int]] = []
    for pattern in _DATES:
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue
            parts = match.groupdict()
            year = int(parts["year"])
            readings: list[tuple[int, int, int]] = []
            if "first" in parts:
                first, second = int(parts["first"]), int(parts["second"])
                for day, month in ((first, second), (second, first)):
                    if 1 <= month <= 12 and 1 <= day <= 31 and (year, month, day) not in readings:
                        readings.append((year, month, day))
            else:
                month_text = parts["month"].lower().rstrip(".")
                month = MONTHS[month_text] if month_text in MONTHS else int(month_text)
                day = int(re.sub(r"\D", "", parts["day"])) if parts.get("day") else 0
                readings.append((year, month, day))
            if readings:
                taken.append((match.start(), match.end()))
                found.append(Value("date", match.group(0), match.start(), match.end(), dates=tuple(readings)))
    return found


def extract_values(text: str, *, names: bool = True) -> list[Value]:
    """The values `text` states, in the order it states them. Citation labels, list numbers ("1. ", "2) ") and
    designations (a "10-Q" report) are not values."""
    text = _LABEL.sub(lambda m: " " * len(m.group(0)), text)
    text = _LIST_MARK.sub(lambda m: " " * len(m.group(0)), text)
    values = _dates(text)
    taken = [(v.start, v.end) for v in values]

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in taken)

    for match in _NUMBER.finditer(text):
        start, end = match.span()
        before = text[start - 1] if start else ""
        if not free(start, end) or (before.isalpha() and not unspaced(before)) or before == "_":
            continue
        if _DESIGNATION.match(text, match.end("digits")):
            continue
        parts = match.groupdict()
        number = float(parts["digits"].replace(",", ""))
        scale = (parts["scale"] or "").lower()
        # a bare "m" or "b" is a scale only after an amount of money ("$3m"), not after a length ("3 m")
        money = bool(parts["currency"] or parts["currency2"] or parts["currency3"])
        scaled = bool(scale) and (scale not in ("m", "b", "k") or money)
        if scaled:
            number *= _SCALES[scale]
        elif scale:
            end = match.start("scale")  # the letter is a unit, not part of the value
        if parts["sign"]:
            number = -number  # compared by size: a statement's "(1,234)" is the same loss as "-1,234"
        kind: ValueKind = "percent" if parts["percent"] else "money" if money else "number"
        rounds = "." in parts["digits"] or scaled
        precision = _significant(parts["digits"]) if rounds else None
        taken.append((start, end))
        values.append(Value(kind, text[start:end].strip(), start, end, number, precision, scaled))
    for match in _WORD_NUMBER.finditer(text):
        start, end = match.span()
        worded = _word_number(match.group("words"))
        if worded is None or not free(start, end):
            continue
        kind = "percent" if match.group("percent") else "number"
        taken.append((start, end))
        values.append(Value(kind, match.group(0), start, end, worded))
    if names:
        for match in _NAME.finditer(text):
            words = [w for w in match.group(0).split() if w not in _NOT_NAMES]
            if words and free(*match.span()):
                values.append(Value("name", match.group(0), *match.span(), words=tuple(w.lower() for w in words)))
    return sorted(values, key=lambda v: v.start)


def _round(number: float, precision: int) -> float:
    if number == 0:
        return 0.0
    digits = precision - int(math.floor(math.log10(abs(number)))) - 1
    return round(number, digits)


def _same_number(said: Value, written: Value) -> bool:
    assert said.number is not None and written.number is not None
    a, b = abs(said.number), abs(written.number)
    candidates = [b]
    if said.scaled and not written.scaled:
        candidates += [b * scale for scale in (1e3, 1e6, 1e9)]  # a table's "in thousands / millions / billions"
    if written.scaled and not said.scaled:
        candidates += [b / scale for scale in (1e3, 1e6, 1e9)]
    if said.kind == "percent" or written.kind == "percent":
        candidates += [b * 100, b / 100]
    for candidate in candidates:
        if math.isclose(a, candidate, rel_tol=1e-6, abs_tol=1e-9):
            return True
        if said.precision is not None and math.isclose(a, _round(candidate, said.precision), rel_tol=1e-6):
            return True
    return False


def same_value(said: Value, written: Value) -> bool:
    """Whether `written` (in the evidence) states the value `said` (in the answer)."""
    if said.kind == "name" or written.kind == "name":
        return False  # names are looked up as words: see `value_in`
    if said.kind == "date" or written.kind == "date":
        if said.kind == "date" and written.kind == "date":
            return any(_date_within(a, b) for a in said.dates for b in written.dates)
        # a bare year against a date's year
        date, number = (said, written) if said.kind == "date" else (written, said)
        if said.kind != "date" and number.number is not None and number.number.is_integer():
            return any(int(number.number) == d[0] for d in date.dates)
        return False
    return _same_number(said, written)


def _date_within(said: tuple[int, int, int], written: tuple[int, int, int]) -> bool:
    return all(a == 0 or a == b for a, b in zip(said, written, strict=True))


def _name_words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def value_in(value: Value, text: str, text_values: Sequence[Value] | None = None) -> bool:
    """Whether `text` states `value` (its values extracted once by the caller, or here)."""
    if value.kind == "name":
        return set(value.words) <= _name_words(text)
    if text_values is None:
        text_values = extract_values(text, names=False)
    return any(same_value(value, written) for written in text_values)


def own_values(answer: str, question: str) -> list[Value]:
    """The values an answer states that the question does not already hold."""
    asked = extract_values(question)
    asked_numbers = [v for v in asked if v.kind != "name"]
    asked_words = _name_words(question)
    own = []
    for value in extract_values(answer):
        if value.kind == "name":
            if not set(value.words) <= asked_words:
                own.append(value)
        elif not any(same_value(value, a) or same_value(a, value) for a in asked_numbers):
            own.append(value)
    return own


def own_figures(answer: str, question: str) -> list[Value]:
    """The numbers, amounts, percentages and dates an answer states that the question does not hold (`own_values`
    without names)."""
    return [value for value in own_values(answer, question) if value.kind != "name"]


def restates(answer: str, again: str, question: str) -> bool | None:
    """Whether a second answer to `question` states one or more of the answer's own numbers, amounts, percentages
    and dates, and none the answer lacks (names aside); None when it states none of its own (a refusal, or words
    alone): it neither confirms nor doubts the answer."""
    second = own_figures(again, question)
    if not second:
        return None
    first = own_figures(answer, question)

    def held(value: Value, values: list[Value]) -> bool:
        return any(same_value(value, other) or same_value(other, value) for other in values)

    return any(held(value, second) for value in first) and all(held(value, first) for value in second)


@dataclass(frozen=True)
class Holding:
    """A sentence of passage number `passage` (1-based, as the answer cites them) at `offset` in its text."""

    passage: int
    offset: int
    sentence: str


@dataclass(frozen=True)
class ValueFinding:
    """What the value check found: the answer's own values, those no cited sentence states, the sentence holding
    most of them (or, when some are missing, the evidence sentence most like the answer)."""

    values: list[Value]
    missing: list[Value]
    sentence: Holding | None


def asks_computation(question: str) -> bool:
    """Whether the question asks for a value computed from others ("how much higher", "the gap between", "a ratio",
    "round your answer"): a value its evidence need not state, whose arithmetic no check here confirms."""
    return _COMPUTATION.search(question) is not None


def anchors(value: Value, answer: str, question: str, reading: ReadingKnobs) -> set[str]:
    """The question's words that the answer writes right after a value ("10 *meetings*" for "how many meetings"):
    what the value counts or measures, which the sentence stating it must name too. A scale or a currency ("$4,222
    (in millions of dollars)") says how the value is written, which a table states once in its heading, not in the
    row holding the value."""
    if value.kind == "name":
        return set()
    following = content_words(" ".join(re.findall(r"[A-Za-z]+", answer[value.end : value.end + 40])[:2]))
    asked = content_words(question)
    return {word for word in following - _HOW_WRITTEN if matches(word, asked, reading)}


def check_values(
    answer: str, question: str, passages: Sequence[str], cited: Sequence[int], reading: ReadingKnobs
) -> ValueFinding:
    """Look the answer's own values up in the sentences of the passages it cites (1-based numbers). A value counts
    as stated by a sentence that holds it and names what the answer says it counts or measures; an answer that
    cites nothing states its values in no cited sentence."""
    answer = _LABEL.sub(lambda m: " " * len(m.group(0)), answer)  # the labels' words are no value's context
    values = own_values(answer, question)
    numbers = [n for n in dict.fromkeys(cited) if 1 <= n <= len(passages)]
    candidates = [Holding(n, offset, text) for n in numbers for offset, text in sentences(passages[n - 1], reading)]
    if not values or not passages:
        return ValueFinding(values, [], None)
    held: dict[int, int] = {}
    missing = []
    for value in values:
        needed = anchors(value, answer, question, reading)
        found = [
            i
            for i, holding in enumerate(candidates)
            if value_in(value, holding.sentence)
            and all(matches(w, content_words(holding.sentence), reading) for w in needed)
        ]
        if not found:
            missing.append(value)
        for i in found:
            held[i] = held.get(i, 0) + 1
    if held:
        # the sentence holding most of the values; of those, the one sharing most of the question's words
        asked = content_words(question)
        best = max(held, key=lambda i: (held[i], len(asked & content_words(candidates[i].sentence)), -i))
        if not missing:
            return ValueFinding(values, [], candidates[best])
    # the sentence most like the answer in words (its values left out), preferring one stating a value of a kind the
    # answer's missing values have: where the documents say what the answer should have said
    answer_words = {w for w in content_words(answer) if w.isalpha()}
    kinds = {value.kind for value in missing}
    everywhere = [
        Holding(n, offset, text)
        for n in range(1, len(passages) + 1)
        for offset, text in sentences(passages[n - 1], reading)
    ]

    def likeness(holding: Holding) -> tuple[int, bool]:
        states_kind = any(v.kind in kinds for v in extract_values(holding.sentence))
        return len(answer_words & content_words(holding.sentence)), states_kind

    closest = max(everywhere, key=likeness, default=None)
    return ValueFinding(values, missing, closest)
