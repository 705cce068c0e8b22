"""An answer's confidence and band: a wrong value is never shown as supported, whatever the model's own certainty;
a refusal in the model's own words is a refusal; the cited sentence that states the value is the one marked."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from pagegraph import build_graph
from pagegraph.config import Context, Settings
from pagegraph.indexing.embedder import Embedder
from pagegraph.nodes.confidence import answer_confidence, draft_probability, refuses_in_words
from pagegraph.services import Services
from pagegraph.state.answering import DraftProbability, ValueCheck
from tests.conftest import markdown_library
from tests.fakes import ScriptedChatModel

GOVERNANCE = """# Report on Corporate Governance

## Board of Directors

The Board of Directors has 10 members, of whom four are independent directors with long experience in industry.
During the financial year ended 31st March, 2007, five meetings of the Board took place.
The Audit Committee met 4 times during the year and reviewed the quarterly results.

## Shareholders

The company has 12,500 shareholders holding shares in electronic form.
"""
MEETINGS = "How many meetings of the Board were held during the financial year ended 31st March, 2007?"
CERTAIN = math.log(0.99)  # the model's per-token log-probability: it is sure of what it writes
# Knobs under which token probability and the value check count (the defaults are fitted to the embedded reader,
# whose signals barely separate right from wrong: bench/confidence.py)
WEIGHTED = Context(
    confidence={"bias": 0.0, "probability_weight": 1.0, "supported_value": 0.5, "unsupported_value": -2.0}
)


@pytest.fixture(scope="module")
def governance(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    with markdown_library(
        tmp_path_factory.mktemp("governance"), {"governance.md": GOVERNANCE}, cache_dir, embedder
    ) as index:
        yield index, cache_dir


def answer(governance, reply: str, logprob: float | None = CERTAIN) -> dict:
    """The extract graph's output when the model replies `reply` (to the focused read and, if it reads whole
    passages too, to that)."""
    index, cache_dir = governance
    model = ScriptedChatModel.replying(reply, reply, logprob=logprob)
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    return graph.invoke({"question": MEETINGS}, context=WEIGHTED)


def test_a_count_the_cited_sentence_does_not_state_is_never_supported(governance) -> None:
    output = answer(governance, "10 meetings of the Board were held [1].")
    assert not output["abstained"] and "10 meetings" in output["answer"]
    assert output["band"] == "uncertain" and output["low_confidence"]
    check = output["value_check"]
    assert check.status == "unsupported" and check.missing == ["10"]
    assert "five meetings of the Board took place" in check.closest.sentence
    assert check.closest.page == 1 and check.closest.start is not None


def test_the_right_count_is_supported_and_its_citation_marks_the_sentence_stating_it(governance) -> None:
    output = answer(governance, "Five meetings of the Board were held in the year [1].")
    assert output["band"] == "supported" and output["value_check"].status == "supported"
    assert output["confidence"] >= WEIGHTED.confidence.supported
    (citation,) = output["citations"]
    quote = citation.quote
    assert "five meetings of the Board took place" in quote.sentence
    document = governance[0].store.documents()[0]
    page_text = governance[0].store.pages(document.id)[0].text
    assert page_text[quote.start : quote.end] == quote.sentence


def test_a_model_unsure_of_its_answer_is_shown_uncertain(governance) -> None:
    output = answer(governance, "Five meetings of the Board were held in the year [1].", logprob=math.log(0.3))
    assert output["band"] == "uncertain" and output["value_check"].status == "supported"


def test_without_log_probabilities_the_documented_fallback_is_used(governance) -> None:
    output = answer(governance, "Five meetings of the Board were held in the year [1].", logprob=None)
    signals = next(r.details for r in output["trace"] if r.stage == "verify")
    assert signals["token_probability"] is None
    expected = answer_confidence(None, signals["overlap"], output["value_check"], WEIGHTED)
    assert output["confidence"] == expected.value and output["band"] == expected.band


def test_a_refusal_in_the_model_s_own_words_is_a_refusal(governance) -> None:
    output = answer(governance, "The number of Board meetings is not mentioned in the provided excerpts [1].")
    assert output["abstained"] and output["band"] == "not_found" and output["citations"] == []


def test_refusal_wording_needs_a_short_answer_without_values_of_its_own() -> None:
    none = ValueCheck(status="no_values")
    assert refuses_in_words("The telephone number is not shown in the provided excerpts.", none)
    assert refuses_in_words("The documents do not mention it.", none)
    assert not refuses_in_words("The unit is not shown in red; it is grey.", ValueCheck(status="supported"))
    long = "It covers safety. It covers installation. It covers repairs. Pricing is not provided."
    assert not refuses_in_words(long, none)


def reported(*tokens: tuple[str, float]) -> AIMessage:
    content = [{"token": text, "logprob": math.log(p)} for text, p in tokens]
    return AIMessage(content="".join(t for t, _ in tokens), response_metadata={"logprobs": {"content": content}})


def test_the_answer_s_own_tokens_are_those_neither_asked_nor_cited() -> None:
    reply = reported(("The", 0.99), (" Board", 0.99), (" held", 0.98), (" five", 0.4), (" meetings", 0.97),
                     (" [", 0.9), ("1", 0.6), ("]", 0.9), (".", 0.99))  # fmt: skip
    probability = draft_probability(reply, MEETINGS)
    assert probability is not None
    assert probability.answer_lowest == 0.4  # "five" alone is the answer's own: not 0.6, the citation's
    assert probability.reply < 0.9


def test_a_reply_without_token_text_or_own_words_keeps_the_reply_probability() -> None:
    copied = reported(("Meetings", 0.9), (" of", 0.9), (" the", 0.9), (" Board", 0.9))
    assert draft_probability(copied, MEETINGS) == DraftProbability(reply=0.9)
    untexted = AIMessage(content="5", response_metadata={"logprobs": {"content": [{"logprob": math.log(0.5)}]}})
    assert draft_probability(untexted, MEETINGS) == DraftProbability(reply=0.5)
    assert draft_probability(AIMessage(content="5"), MEETINGS) is None
