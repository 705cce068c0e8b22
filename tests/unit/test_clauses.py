"""A value a sentence gives for another named thing than the one the question names (`checks.clauses`)."""

from __future__ import annotations

from pagegraph.checks.clauses import other_subjects
from pagegraph.checks.values import own_values

GAINS = (
    "Step-Back Prompting improves the performance of PaLM-2L across the board: 7% and 11% on MMLU Physics and "
    "Chemistry, 27%\non TimeQA, and 7% on MuSiQue."
)
TIMEQA = "By how much does Step-Back Prompting improve PaLM-2L's performance on TimeQA?"


def doubts(question: str, answer: str, sentence: str) -> list[str]:
    return other_subjects(own_values(answer, question), question, sentence)


def test_a_value_the_sentence_gives_for_another_named_thing_is_doubted() -> None:
    assert doubts(TIMEQA, "7%", GAINS) == [
        "7%: the cited sentence gives another value where it names what was asked (27% on TimeQA)"
    ]
    assert doubts(TIMEQA, "27%", GAINS) == []


def test_a_sentence_naming_the_asked_thing_beside_its_value_raises_no_doubt() -> None:
    renewal = "Our member renewal rate was 91% in the U.S. and Canada and 89% worldwide at the end of 2021."
    question = "What was Costco's member renewal rate in the U.S. and Canada at the end of 2021?"
    assert doubts(question, "91%", renewal) == []
    assert doubts("What was the improvement on MuSiQue and on TimeQA?", "7% and 27%", GAINS) == []
    assert doubts(TIMEQA, "7 tasks", "Step-Back Prompting helped on 7 tasks.") == [], "no clause gives TimeQA a value"
    # a value of another kind than the answer's (a share, not an amount) is no other answer
    assert (
        doubts("What were Netflix's revenues?", "$6.8 billion", "Netflix's revenues grew 23%, to $6.8 billion.") == []
    )
