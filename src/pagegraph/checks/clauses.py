"""Which named thing a value is given for in a sentence that gives several ("7% and 11% on MMLU Physics and
Chemistry, 27% on TimeQA, and 7% on MuSiQue"). A reader asked about TimeQA that answers 7% states a value the
sentence does hold, for another thing. Read without a model: the sentence's clauses (split at commas, semicolons,
colons and dashes), the names the question names (`key_terms`, years aside), and the values of the answer's kind in
the clauses that name them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pagegraph.checks.values import Value, extract_values, same_value
from pagegraph.retrievers.key_terms import key_terms

_CLAUSE_END = re.compile(r"[,;:]\s+|\s+[—–]\s+")


def other_subjects(values: Sequence[Value], question: str, sentence: str) -> list[str]:
    """For each number, amount or percentage of the answer that no clause naming one of the question's names holds,
    while such clauses hold other values of its kind: what the sentence gives for those names."""
    names = [term for term in key_terms(question) if not term.isdigit()]
    clauses = [
        (clause, extract_values(clause, names=False))
        for clause in _CLAUSE_END.split(sentence)
        if any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", clause, re.IGNORECASE) for name in names)
    ]
    doubts = []
    for value in values:
        if value.kind not in ("number", "money", "percent"):
            continue
        given = [written for _, held in clauses for written in held if written.kind == value.kind]
        if given and not any(same_value(value, written) for written in given):
            named = "; ".join(" ".join(clause.split()) for clause, held in clauses if held)
            doubts.append(
                f"{value.text}: the cited sentence gives another value where it names what was asked ({named})"
            )
    return doubts
