"""How far an answer can be trusted: a probability-like confidence and a band in words, from signals that work for
any chat model — the answer call's token probabilities where the model gives them (llama.cpp and OpenAI-compatible
servers do), how much of the answer its cited evidence holds, and the model-free value check (`verify`). The weights
and the band threshold are `Context` knobs chosen on dev rows (`bench/confidence.py`, docs/answers.md)."""

from __future__ import annotations

import math
import re

from pagegraph.config import Context
from pagegraph.state.answering import Band, Confidence, ValueCheck

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


def refuses_in_words(answer: str, values: ValueCheck) -> bool:
    """A short answer (one or two sentences) that states no value of its own and says the passages do not hold the
    answer ("The telephone number is not shown in the provided excerpts")."""
    plain = " ".join(answer.split())
    return (
        values.status == "no_values" and len(_SENTENCE.split(plain)) <= 2 and _REFUSAL_WORDING.search(plain) is not None
    )


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def answer_confidence(
    token_probability: float | None, overlap: float, values: ValueCheck, context: Context
) -> Confidence:
    """The answer's confidence: a logistic combination of the token probability (or, from a model that gives none,
    the documented fallback `confidence_no_logprobs`), the evidence overlap and the value check; and its band:
    supported at `supported_confidence` or above when no value of it is missing from its cited sentences, else
    uncertain."""
    probability = context.confidence_no_logprobs if token_probability is None else token_probability
    score = (
        context.confidence_bias
        + context.confidence_probability_weight * _logit(probability)
        + context.confidence_overlap_weight * overlap
        + (context.confidence_unsupported_value if values.status == "unsupported" else 0.0)
        + (context.confidence_supported_value if values.status == "supported" else 0.0)
    )
    value = round(1 / (1 + math.exp(-score)), 3)
    band: Band = (
        "supported" if value >= context.supported_confidence and values.status != "unsupported" else "uncertain"
    )
    return Confidence(
        value=value,
        band=band,
        token_probability=token_probability,
        overlap=overlap,
        value_check=values,
    )
