"""How far an answer can be trusted: a probability-like confidence and a band in words, from signals that work for
any chat model — the judge's closed check of the answer against the evidence (`nodes.judge`; from its token
probabilities where the model gives them), how much of the answer its cited evidence holds, the model-free
value check (`checks.values`), and whether the question asks for a value computed from others. The thresholds are
`Context` knobs chosen on dev rows (`bench/answer_check.py`, docs/asking.md)."""

from __future__ import annotations

import math
import re

from pagegraph.config import Context
from pagegraph.state.answering import Band, Confidence, Pick, ValueCheck, Verdict

# An answer that says, in its own words, that the passages do not hold what was asked: a refusal, however phrased.
_REFUSAL_WORDING = re.compile(
    r"\b(?:(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+|clearly\s+)?(?:shown|mentioned|provided|given|"
    r"stated|specified|found|available|included|listed|described|discussed|present|indicated|disclosed|reported)"
    r"|(?:do|does|did)\s+not\s+(?:explicitly\s+|directly\s+)?(?:mention|say|state|specify|provide|contain|include|"
    r"give|show|list|describe|indicate|disclose|report)"
    r"|no\s+(?:information|mention|data|details|indication|answer)\b"
    r"|(?:cannot|can\s*not|can't|could\s+not|unable\s+to)\s+(?:be\s+)?(?:determine|determined|find|found|answer|"
    r"answered|tell|identify|identified|say|locate|located)"
    r"|not\s+(?:possible|enough\s+information)\s+to)",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")

COMPUTED_NOTE = (
    "A calculation: the checks confirm values the evidence states, not arithmetic. Check it against the evidence."
)
# an answer the second reading (nodes.judge.reread) did not restate: what it read instead, to check against
SECOND_READING = "Asked again over the top evidence sentences alone, the model read: {reading}"
# an uncertain pick among candidates (nodes.pick): the candidate the model found next likeliest
RUNNER_UP = "The model was {probability:.0%} sure of its pick; next likeliest: {value}{what}, {runner_up:.0%}"


def refuses_in_words(answer: str, values: ValueCheck) -> bool:
    """A short answer (one or two sentences) that states no value of its own and says the passages do not hold the
    answer ("The telephone number is not shown in the provided excerpts")."""
    plain = " ".join(answer.split())
    return (
        values.status == "no_values" and len(_SENTENCE.split(plain)) <= 2 and _REFUSAL_WORDING.search(plain) is not None
    )


def answer_confidence(
    verdict: Verdict | None, overlap: float | None, values: ValueCheck, context: Context
) -> Confidence:
    """The answer's confidence: the judge's P(Yes) times the share of the answer's words found in the evidence it
    cites — both must hold for an answer to be trusted, and on dev rows their product ranked answers better than
    either alone or the other combinations measured (docs/asking.md). Its band: supported at
    `Context.confidence.supported` or above when no value of the answer is missing from its cited sentences and
    the judge's second reading of its sentences (where asked) reads no other values, else uncertain (below
    `abstain_below` the verifier refuses instead). An output the judge did not check (a structured document:
    `verdict` None) has the overlap alone, and is uncertain; an answer written in another
    language than its evidence (`overlap` None) has the judge's P(Yes) alone. A number answering a question that
    asks for a computed value (a difference, a ratio: `values.computed`) is weighed down by `computed_weight`: both
    checks confirm values the evidence states, not arithmetic. An uncertain answer's confidence is held below
    `supported`, so that a band and its confidence never say two things."""
    parts = [verdict.probability] if verdict is not None else []
    parts += [overlap] if overlap is not None else []
    parts += [context.confidence.computed_weight] if parts and values.computed else []
    value = round(math.prod(parts), 3) if parts else 0.0
    # a picked answer's probability is read on its own scale (`picking.supported`, chosen on the lookups set)
    picked = verdict is not None and verdict.method == "pick"
    threshold = context.picking.supported if picked else context.confidence.supported
    supported = (
        verdict is not None and verdict.restated is not False and value >= threshold and values.status != "unsupported"
    )
    band: Band = "supported" if supported else "uncertain"
    if not supported:  # an uncertain answer never shows the confidence of a supported one
        value = max(0.0, min(value, round(threshold - context.confidence.uncertain_margin, 3)))
    return Confidence(value=value, band=band, verdict=verdict, overlap=overlap, value_check=values)


def doubts(
    values: ValueCheck | None, second_reading: str | None, pick: Pick | None = None, band: Band | None = None
) -> list[str]:
    """What a reader should know before trusting an answer, in words, as the terminal shows them under its band
    and the tools give them to other agents: a calculation no check confirms, what a second reading read instead,
    for an uncertain pick among candidates the one the model found next likeliest, values in no sentence the answer
    cites, and values read in another period's or column's cell."""
    said = [COMPUTED_NOTE] if values is not None and values.computed else []
    said += [SECOND_READING.format(reading=second_reading)] if second_reading else []
    if band == "uncertain" and pick is not None and pick.answered and (second := pick.second()) is not None:
        what = f" ({second.measures})" if second.measures else ""
        said += [
            RUNNER_UP.format(
                probability=pick.probability, value=second.value, what=what, runner_up=pick.runner_up_probability or 0.0
            )
        ]
    if values is not None and values.status == "unsupported":
        said += [f"{', '.join(values.missing)}: in no sentence the answer cites"] if values.missing else []
        said += [*values.other_period, *values.other_column]
    return said
