"""Answers and refusals in the question's language: the answer request asks for it (and English requests are as
before), an abstention and the band's name are written in it."""

from __future__ import annotations

import pytest

from pagegraph.config import ReadingKnobs
from pagegraph.nodes.language import answer_language_instruction, question_language
from pagegraph.prompts.abstain import ABSTAIN_TEXTS
from pagegraph.prompts.languages import BAND_TEXTS

READING = ReadingKnobs()


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("How much does the SB-40 weigh?", "en"),
        ("EBITDA in FY2019?", "en"),
        ("SB-40 的重量是多少？", "zh"),
        ("Сколько весит SB-40?", "ru"),
        ("Wie viel wiegt der SB-40?", "de"),
        ("SB-40 หนักเท่าไร", "th"),
        ("كم يزن SB-40؟", "ar"),
    ],
)
def test_a_questions_language_is_identified(question: str, language: str) -> None:
    assert question_language(question, READING) == language


def test_the_answer_request_asks_for_the_questions_language_only_when_it_is_not_english() -> None:
    assert answer_language_instruction("How much does the SB-40 weigh?", READING) == ""
    assert "write the answer in Chinese" in answer_language_instruction("SB-40 的重量是多少？", READING)
    assert answer_language_instruction("SB-40 的重量是多少？", ReadingKnobs(answer_language=False)) == ""


def test_every_abstention_text_fills_in() -> None:
    for language, texts in ABSTAIN_TEXTS.items():
        message = texts.message.format(reason="Ř", searched=texts.searched.format(documents="D"), hint=texts.name_hint)
        assert ("Ř" in message) == (language == "en"), "the English reason is shown in the English message only"
        assert "D" in message and "--document NAME" in message, language
        assert "pagegraph ingest PATH" in texts.ingest_hint, language
        quoted = texts.quoted.format(sentence="S", label="[L, p. 1]")
        assert "S" in quoted and "[L, p. 1]" in quoted and BAND_TEXTS[language]["quoted"], language


@pytest.mark.parametrize(("graph", "reads"), [("rag", 1), ("extract", 2)])  # extract reads whole passages again
def test_a_chinese_question_is_answered_and_refused_in_chinese(ask, graph: str, reads: int) -> None:
    output, model = ask("SB-40 的重量是多少？", *["SB-40 重 98 公斤 [1]。"] * reads, graph=graph)
    request = model.requests[0][0][-1].content
    assert "write the answer in Chinese" in request and not output["abstained"]
    assert output["answer"].startswith("SB-40 重 98 公斤")
    assert output["band_label"] == BAND_TEXTS["zh"][output["band"]]

    refused, _ = ask("火星上的天气怎么样？", graph=graph, gate={"abstain_threshold": 0.99})
    assert refused["abstained"] and refused["answer"].startswith("无法根据已索引的文档回答这个问题")


def test_an_english_question_is_refused_in_english(ask) -> None:
    refused, _ = ask("What is the weather like on Mars?", gate={"abstain_threshold": 0.99})
    assert refused["answer"].startswith("I could not answer this from the indexed documents")
    assert refused["band_label"] == "not found in the documents"


def test_every_language_names_every_band() -> None:
    assert all(set(texts) == set(BAND_TEXTS["en"]) for texts in BAND_TEXTS.values())
    assert set(BAND_TEXTS) == set(ABSTAIN_TEXTS), "the languages measured have both"
