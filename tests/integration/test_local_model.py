"""The embedded local model, for real, in its llama-server process: offline load, a structured call that
validates, usage counted, token log-probabilities reported.

Short calls (~5 s each on 2 cores). The joined weights live in the default cache folder so that a second run
reuses them instead of writing another 1.1 GB.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from pagegraph.config import Settings
from pagegraph.ingest.loaders import load_document
from pagegraph.ingest.summaries import ModelSummarizer, SummarySource
from pagegraph.llm import get_chat_model, invoke_model, structured_call
from pagegraph.llm.calls import first_token_alternatives
from pagegraph.llm.local import LlamaCppChatModel
from pagegraph.llm.weights import QWEN_CODER_1_5B
from tests.conftest import SAMPLES

pytestmark = pytest.mark.slow


class PassageJudgement(BaseModel):
    # facts before the verdict: a small model decoding left to right decides better after writing them out
    facts: list[str] = Field(default_factory=list, max_length=5, description="facts from the passage that help")
    relevant: bool = Field(description="whether the passage helps answer the question")


JUDGE = "You judge whether a passage from a document helps answer a question, and list the facts in it that help."


@pytest.fixture(scope="module")
def local_model() -> LlamaCppChatModel:
    model = get_chat_model("local", settings=Settings())
    assert isinstance(model, LlamaCppChatModel)
    return model


@pytest.fixture(scope="module")
def specifications_page() -> str:
    manual = load_document(SAMPLES / "sb40-user-manual.pdf")
    return next(p.text for p in manual.pages if "Technical specifications" in p.text)


def judge(model: LlamaCppChatModel, question: str, passage: str) -> tuple[PassageJudgement, bool]:
    result = structured_call(
        model,
        PassageJudgement,
        [SystemMessage(content=JUDGE), HumanMessage(content=f"Question: {question}\n\nPassage:\n{passage}")],
        default=PassageJudgement(relevant=False),
        purpose="judge",
    )
    assert all(a.constrained for a in result.attempts), "llama.cpp decodes under the schema's grammar"
    return result.value, result.ok


def test_weights_come_from_the_verified_packages(local_model: LlamaCppChatModel) -> None:
    path = Path(local_model.model_path)
    assert path.stat().st_size == QWEN_CODER_1_5B.size
    assert path.with_name(path.name + ".sha256").read_text().split()[0] == QWEN_CODER_1_5B.sha256


def test_structured_call_validates_and_finds_the_fact(local_model: LlamaCppChatModel, specifications_page: str) -> None:
    value, ok = judge(local_model, "How much does the SB-40 weigh?", specifications_page)
    assert ok and value.relevant
    assert any("98" in fact for fact in value.facts), value


def test_irrelevant_passage_is_judged_irrelevant(local_model: LlamaCppChatModel) -> None:
    passage = "Preheat the oven to 200 degrees. Knead the dough for ten minutes and let it rise for an hour."
    value, ok = judge(local_model, "How much does the SB-40 weigh?", passage)
    assert ok and not value.relevant


def test_streaming_reports_the_same_usage_as_a_plain_call() -> None:
    question = [HumanMessage(content="Name the capital of France in one word.")]
    plain = get_chat_model("local", settings=Settings(), max_tokens=8)
    streaming = get_chat_model("local", settings=Settings(), max_tokens=8, streaming=True)
    plain_reply, plain_call = invoke_model(plain, question, purpose="plain")
    stream_reply, stream_call = invoke_model(streaming, question, purpose="stream")
    assert "Paris" in str(plain_reply.content) and stream_reply.content == plain_reply.content
    assert not plain_call.estimated and not stream_call.estimated
    assert (stream_call.prompt_tokens, stream_call.completion_tokens) == (
        plain_call.prompt_tokens,
        plain_call.completion_tokens,
    )


def test_a_reply_cut_at_one_token_reports_its_top_alternatives() -> None:
    """The judge's closed check: one token, and the likeliest first tokens with their probabilities."""
    model = get_chat_model("local", settings=Settings(), max_tokens=1)
    reply, call = invoke_model(
        model,
        [HumanMessage(content="Is Paris the capital of France? Answer Yes or No.")],
        purpose="judge",
        top_logprobs=5,
    )
    alternatives = first_token_alternatives(reply)
    assert call.completion_tokens == 1 and len(alternatives) == 5
    assert alternatives[0][0] == "Yes" and 0.5 < alternatives[0][1] <= 1.0
    assert call.token_probability is not None


def test_model_writes_a_document_summary(local_model: LlamaCppChatModel) -> None:
    manual = load_document(SAMPLES / "sb40-user-manual.pdf")
    source = SummarySource.from_parts(manual.name, manual.title, manual.source_type, manual.pages[:3], [])
    summary = ModelSummarizer(local_model).summarize(source)
    assert summary.method == "model", "the local model's summary validates (no extractive fallback)"
    assert summary.summary and summary.key_topics
    assert "SB-40" in summary.summary or "battery" in summary.summary.lower()


def test_a_reply_cap_bounds_a_structured_call(local_model: LlamaCppChatModel) -> None:
    class Story(BaseModel):
        story: str

    request = [HumanMessage(content="Write a very long story about a battery, at least 500 words.")]
    result = structured_call(local_model, Story, request, default=Story(story=""), purpose="cap", max_tokens=24)
    assert all(a.call.completion_tokens <= 24 for a in result.attempts if a.call), result.attempts
    assert result.ok, "a cut-off JSON string is still read by the lenient stages"
