"""How far an answer can be trusted: a probability-like confidence and a band in words, from signals that work for
any chat model — the answer call's token probabilities where the model gives them (llama.cpp and OpenAI-compatible
servers do), how much of the answer its cited evidence holds, and the model-free value check (`verify`). The weights
and the band threshold are `Context` knobs chosen on dev rows (`bench/confidence.py`, docs/answers.md)."""

from __future__ import annotations

import math
import re

from langchain_core.messages import BaseMessage

from pagegraph.config import Context
from pagegraph.indexing.bm25 import tokenize
from pagegraph.llm.calls import token_logprobs, token_probability
from pagegraph.state.answering import Band, Confidence, DraftProbability, ValueCheck

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
_CITATION = re.compile(r"\[[^\[\]\n]{0,300}\]?")
_WORD = re.compile(r"\w+")


def refuses_in_words(answer: str, values: ValueCheck) -> bool:
    """A short answer (one or two sentences) that states no value of its own and says the passages do not hold the
    answer ("The telephone number is not shown in the provided excerpts")."""
    plain = " ".join(answer.split())
    return (
        values.status == "no_values" and len(_SENTENCE.split(plain)) <= 2 and _REFUSAL_WORDING.search(plain) is not None
    )


def draft_probability(reply: BaseMessage, question: str) -> DraftProbability | None:
    """The reply's token probabilities: over the whole reply, and over the answer's own tokens — those of words
    that are neither in the question nor stopwords, outside citations. A small model copies the question's words
    into its sentence with near-certainty; how sure it was of the value it added is what tells a guess apart."""
    tokens, reply_probability = token_logprobs(reply), token_probability(reply)
    if reply_probability is None:
        return None
    if any(text is None for text, _ in tokens):
        return DraftProbability(reply=reply_probability)
    text = "".join(piece or "" for piece, _ in tokens)
    asked = set(tokenize(question))
    own_chars = [False] * len(text)
    cited = [False] * len(text)
    for match in _CITATION.finditer(text):
        cited[match.start() : match.end()] = [True] * (match.end() - match.start())
    for match in _WORD.finditer(text):
        words = tokenize(match.group())
        if words and not set(words) <= asked and not cited[match.start()]:
            own_chars[match.start() : match.end()] = [True] * (match.end() - match.start())
    own, at = [], 0
    for piece, logprob in tokens:
        if any(own_chars[at : at + len(piece or "")]):
            own.append(logprob)
        at += len(piece or "")
    if not own:
        return DraftProbability(reply=reply_probability)
    return DraftProbability(reply=reply_probability, answer_lowest=round(math.exp(min(own)), 4))


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def answer_confidence(
    token_probability: DraftProbability | None, overlap: float, values: ValueCheck, context: Context
) -> Confidence:
    """The answer's confidence: a logistic combination of the token probabilities (the whole reply's, and the
    lowest among the answer's own tokens; from a model that gives none, the documented fallback
    `confidence_no_logprobs` for both), the evidence overlap and the value check; and its band: supported at
    `supported_confidence` or above when no value of it is missing from its cited sentences, else uncertain."""
    probability = context.confidence.no_logprobs if token_probability is None else token_probability.reply
    answer_probability = (
        probability
        if token_probability is None or token_probability.answer_lowest is None
        else token_probability.answer_lowest
    )
    score = (
        context.confidence.bias
        + context.confidence.probability_weight * _logit(probability)
        + context.confidence.answer_probability_weight * _logit(answer_probability)
        + context.confidence.overlap_weight * overlap
        + (context.confidence.unsupported_value if values.status == "unsupported" else 0.0)
        + (context.confidence.supported_value if values.status == "supported" else 0.0)
    )
    value = round(1 / (1 + math.exp(-score)), 3)
    band: Band = (
        "supported" if value >= context.confidence.supported and values.status != "unsupported" else "uncertain"
    )
    return Confidence(
        value=value,
        band=band,
        token_probability=token_probability,
        overlap=overlap,
        value_check=values,
    )
