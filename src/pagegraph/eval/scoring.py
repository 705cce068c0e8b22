"""Scoring one generated answer against a gold answer of the evaluation format (Int, Float, Str, List, or a long
free-text answer).

A generated answer is prose with citation labels, not a bare value, so each format is matched inside it:
numbers are looked for among the numbers the answer states, short strings in its best-matching run of words, list
items one by one. Citation labels are removed first: their page and section numbers are not part of the answer.
"""

from __future__ import annotations

import ast
import math
import re
import string
from collections import Counter
from dataclasses import dataclass

LONG_ANSWER_WORDS = 12
STR_F1_THRESHOLD = 0.5
RELATIVE_TOLERANCE = 0.01

_LABEL = re.compile(r"\[[^\[\]]*\]")
_NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?%?|(?<![\w.])[-−]?\.\d+%?")
_ARTICLES = {"a", "an", "the"}
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}


@dataclass(frozen=True)
class AnswerScore:
    """`kind`: short (a value to find: scored 0–1 in `score`), long (free text: token F1 in `f1`) or none (nothing
    to score: unanswerable row or no gold answer)."""

    kind: str
    score: float | None = None
    f1: float | None = None


def strip_labels(text: str) -> str:
    return _LABEL.sub(" ", text)


def tokens(text: str) -> list[str]:
    """Lower-cased words without punctuation and articles (the SQuAD normalisation)."""
    cleaned = "".join(" " if ch in string.punctuation else ch for ch in text.lower())
    return [word for word in cleaned.split() if word not in _ARTICLES]


def token_f1(prediction: str, gold: str) -> float:
    predicted, expected = tokens(prediction), tokens(gold)
    if not predicted or not expected:
        return float(predicted == expected)
    return _f1(predicted, expected)


def _f1(predicted: list[str], expected: list[str]) -> float:
    common = sum((Counter(predicted) & Counter(expected)).values())
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def numbers(text: str) -> list[float]:
    """The numbers a text states (digits, thousands separators, decimals, percentages, number words to twenty)."""
    found = []
    for match in _NUMBER.findall(text):
        cleaned = match.replace(",", "").replace("−", "-").rstrip("%")
        try:
            found.append(float(cleaned))
        except ValueError:
            continue
    found.extend(float(_NUMBER_WORDS[word]) for word in tokens(text) if word in _NUMBER_WORDS)
    return found


def same_number(predicted: float, gold: float, as_float: bool) -> bool:
    """Equal for integers; within 1% for floats, also when one side is a fraction and the other a percentage."""
    if not as_float:
        return predicted == gold
    candidates = (gold, gold * 100, gold / 100)
    return any(math.isclose(predicted, value, rel_tol=RELATIVE_TOLERANCE, abs_tol=1e-9) for value in candidates)


def parse_list(gold: str) -> list[str]:
    """Items of a Python-style list string; a plain string is split on commas."""
    try:
        value = ast.literal_eval(gold.strip())
    except (ValueError, SyntaxError):
        value = None
    if isinstance(value, (list, tuple, set)):
        return [str(item).strip() for item in value if str(item).strip()]
    return [part.strip() for part in gold.strip("[]").split(",") if part.strip().strip("'\"")]


def item_found(item: str, answer: str) -> bool:
    """A list item is in the answer when its number is stated, or when all of its words are."""
    expected = numbers(item)
    if expected and len(tokens(item)) == 1:
        return any(same_number(value, expected[0], as_float=True) for value in numbers(answer))
    words = set(tokens(item))
    return bool(words) and words <= set(tokens(answer))


def best_span_f1(answer: str, gold: str) -> float:
    """Token F1 of the answer's best-matching run of words about as long as the gold answer (± 2 words): a
    generated sentence that states a short gold answer is not penalised for the words around it."""
    words, expected = tokens(answer), tokens(gold)
    if not words or not expected:
        return float(words == expected)
    best = 0.0
    for length in range(max(1, len(expected) - 2), len(expected) + 3):
        for start in range(max(1, len(words) - length + 1)):
            best = max(best, _f1(words[start : start + length], expected))
    return best


def score_answer(answer: str, gold: str | None, answer_format: str | None, answerable: bool) -> AnswerScore:
    """Score one answer. Abstaining on an answerable row scores 0 because the value is not in the refusal."""
    if not answerable or gold is None or not gold.strip():
        return AnswerScore("none")
    text = strip_labels(answer)
    kind = (answer_format or "").strip()
    kind = "" if kind == "None" else kind
    if kind in ("Int", "Float"):
        expected = numbers(gold)
        if not expected:
            return AnswerScore("short", score=float(best_span_f1(text, gold) >= STR_F1_THRESHOLD))
        hit = any(same_number(value, expected[0], as_float=kind == "Float") for value in numbers(text))
        return AnswerScore("short", score=float(hit))
    if kind == "List":
        items = parse_list(gold)
        if not items:
            return AnswerScore("none")
        return AnswerScore("short", score=sum(item_found(item, text) for item in items) / len(items))
    if kind == "Str" or (not kind and len(tokens(gold)) < LONG_ANSWER_WORDS):
        return AnswerScore("short", score=float(best_span_f1(text, gold) >= STR_F1_THRESHOLD))
    return AnswerScore("long", f1=token_f1(text, gold))
