"""A small model's reading checked against the excerpts it read, without a model (the extract graph's reader,
`nodes.read`): how much of the answer an excerpt holds, which excerpt it came from, whether two readings say the
same, and the confidence they add up to with the retrieval's similarity."""

from __future__ import annotations

import re

from pagegraph.checks.citations import cited_sentence, is_refusal, resolve_citations, strip_citations
from pagegraph.config import Context, ReadingKnobs
from pagegraph.state.answering import Evidence, Reading
from pagegraph.text.words import content_words, matches

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


def reading_confidence(reading: Reading, relevance: float, context: Context) -> float:
    """The combined abstention signal: 0 for a refusal, else the answer's support in its excerpt weighed with the
    retrieval similarity of the best passage."""
    if reading.refused:
        return 0.0
    return context.confidence.support_weight * reading.support + (1 - context.confidence.support_weight) * relevance
