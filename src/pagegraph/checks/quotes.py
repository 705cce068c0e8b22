"""A quoted answer instead of a false refusal. A small answer model often refuses, or writes an answer the checks
reject, while the first evidence sentence states the answer. When a highlight matches the question strongly — its
highlight score, the share of the question's content words it holds with its section and file name, every name and
year the question names, and, for a number question, a value the question does not already hold — that sentence is
the answer, quoted with its citation, rather than "not found". Read without a model."""

from __future__ import annotations

from collections.abc import Sequence

from pagegraph.checks.values import own_values
from pagegraph.config import ConfidenceKnobs, GateKnobs, ReadingKnobs
from pagegraph.retrievers.highlights import answer_shape
from pagegraph.retrievers.key_terms import unmentioned_terms
from pagegraph.state.answering import Highlight
from pagegraph.text.words import content_words, matches


def question_coverage(question: str, text: str, reading: ReadingKnobs) -> float:
    """The share of the question's content words `text` holds (`matches`); 1 for a question without any."""
    asked = content_words(question)
    if not asked:
        return 1.0
    held = content_words(text)
    return sum(matches(word, held, reading) for word in asked) / len(asked)


def quotable_highlight(
    question: str, highlights: Sequence[Highlight], knobs: ConfidenceKnobs, gate: GateKnobs, reading: ReadingKnobs
) -> Highlight | None:
    """The first of the top `knobs.quote_candidates` highlights (best first) that may stand as the answer, or None.
    A yes/no question is never answered by a quote: the sentence would not say which."""
    shape = answer_shape(question)
    if not knobs.quote or shape == "yes_no":
        return None
    for highlight in highlights[: knobs.quote_candidates]:
        if highlight.score < knobs.quote_min_score:
            continue
        text = f"{highlight.label} {highlight.sentence}"
        if question_coverage(question, text, reading) < knobs.quote_min_terms:
            continue
        if unmentioned_terms(question, [text], gate, reading):
            continue
        if shape == "number" and not any(v.kind != "name" for v in own_values(highlight.sentence, question)):
            continue
        return highlight
    return None
