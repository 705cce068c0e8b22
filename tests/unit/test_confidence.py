"""An answer's confidence and band: a wrong value is never shown as supported, however sure the model is; an answer
the judge doubts is not shown; a refusal in the model's own words is a refusal; the cited sentence that states the
value is the one marked. The judge's P(Yes) is read from the top log-probabilities, or from the word it wrote."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage
from rich.console import Console

from pagegraph import build_graph
from pagegraph.checks.confidence import COMPUTED_NOTE, SECOND_READING, answer_confidence, doubts, refuses_in_words
from pagegraph.cli.answer_view import print_footer
from pagegraph.config import Context, Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.nodes.judge import read_verdict
from pagegraph.nodes.verify import UNSTATED
from pagegraph.prompts.answer import REFUSAL
from pagegraph.services import Services
from pagegraph.state.answering import ValueCheck, Verdict
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
BALANCE_SHEET = """# Annual report

## Consolidated balance sheets

The amounts are in millions of dollars.

|  | August 29, 2021 | August 30, 2020 |
| --- | --- | --- |
| Total liabilities | 41,190 | 36,851 |
| Noncontrolling interests | 514 | 421 |
| Total equity | 18,078 | 18,705 |
"""
EQUITY = "What was the total equity in fiscal 2021?"
CONTEXT = Context()


def one_document(factory: pytest.TempPathFactory, name: str, text: str, cache_dir: Path, embedder: Embedder):
    """An index of the one Markdown document `name`, with the cache folder the graph is built with."""
    with markdown_library(factory.mktemp(Path(name).stem), {name: text}, cache_dir, embedder) as index:
        yield index, cache_dir


@pytest.fixture(scope="module")
def governance(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    yield from one_document(tmp_path_factory, "governance.md", GOVERNANCE, cache_dir, embedder)


@pytest.fixture(scope="module")
def balance_sheet(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    yield from one_document(tmp_path_factory, "annual-report.md", BALANCE_SHEET, cache_dir, embedder)


def answer(
    library, reply: str, judge_yes: float | None = 0.99, context: Context = CONTEXT, question: str = MEETINGS
) -> dict:
    """The extract graph's output when the model replies `reply` (to the focused read and, if it reads whole
    passages too, to that) and the judge finds it stated with probability `judge_yes` (None: a model without
    log-probabilities that writes Yes)."""
    index, cache_dir = library
    model = ScriptedChatModel.replying(reply, reply, judge_yes=judge_yes)
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    return graph.invoke({"question": question}, context=context)


def verify_details(output: dict) -> dict:
    return next(r.details for r in output["trace"] if r.stage == "verify")


def test_a_count_no_passage_states_is_withheld_and_the_sentence_stating_the_count_quoted(governance) -> None:
    output = answer(governance, "10 meetings of the Board took place [1].")
    # the judge was sure; no passage says 10 meetings, and a sentence matching the question strongly says five
    assert output["band"] == "quoted" and "five meetings of the Board took place" in output["answer"]
    assert "10 meetings" not in output["answer"]
    verified = next(r for r in output["trace"] if r.stage == "verify")
    assert verified.summary == UNSTATED.format(values="10") and verified.details["withheld"].startswith("10 meetings")
    check = ValueCheck.model_validate(verified.details["value_check"])
    assert check.status == "unsupported" and check.missing == check.unstated == ["10"]
    assert "five meetings of the Board took place" in check.closest.sentence
    assert check.closest.page == 1 and check.closest.start is not None
    unquoted = answer(
        governance, "10 meetings of the Board took place [1].", context=Context(confidence={"quote": False})
    )
    assert unquoted["abstained"] and unquoted["abstain_reason"] == UNSTATED.format(values="10")


def test_the_right_count_is_supported_and_its_citation_marks_the_sentence_stating_it(governance) -> None:
    output = answer(governance, "Five meetings of the Board took place in the year [1].")
    assert output["band"] == "supported" and output["value_check"].status == "supported"
    assert output["confidence"] >= CONTEXT.confidence.supported
    (citation,) = output["citations"]
    quote = citation.quote
    assert "five meetings of the Board took place" in quote.sentence
    document = governance[0].store.documents()[0]
    page_text = governance[0].store.pages(document.id)[0].text
    assert page_text[quote.start : quote.end] == quote.sentence


def test_an_answer_a_second_reading_of_its_sentences_does_not_restate_is_uncertain(governance) -> None:
    question = "How many independent directors does the Board of Directors have?"
    model = ScriptedChatModel.replying(
        "10 directors [1].", "10 directors [1].", judge_yes=0.99, reread_reply="four [1]"
    )
    index, cache_dir = governance
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    output = graph.invoke({"question": question}, context=CONTEXT)
    assert output["value_check"].status == "supported", "the board has 10 members: a value the sentence states"
    assert output["band"] == "uncertain" and output["confidence"] < CONTEXT.confidence.supported
    verdict = verify_details(output)["verdict"]
    assert verdict["reread"] == "four" and verdict["restated"] is False
    assert next(r for r in output["trace"] if r.stage == "judge").summary.endswith("read again: 'four', other values")
    assert output["second_reading"] == "four"
    console = Console(record=True, width=200)
    print_footer(console, output)
    assert SECOND_READING.format(reading="four") in console.export_text(), "the reading is shown beside the band"
    (asked,) = model.rereads
    assert "has 10 members, of whom four are independent" in asked[-1].content and question in asked[-1].content
    right = ScriptedChatModel.replying("Four [1].", "Four [1].", judge_yes=0.99, reread_reply="four directors [2]")
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=right, index=index))
    restated = graph.invoke({"question": question}, context=CONTEXT)
    assert restated["band"] == "supported" and restated["second_reading"] is None
    unread = ScriptedChatModel.replying("Four [1].", "Four [1].", judge_yes=0.99, reread_reply="NOT FOUND")
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=unread, index=index))
    assert graph.invoke({"question": question}, context=CONTEXT)["band"] == "supported", "no value read: no doubt"
    doubted = ScriptedChatModel.replying("Four [1].", "Four [1].", judge_yes=0.2)
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=doubted, index=index))
    output = graph.invoke({"question": question}, context=CONTEXT)
    assert output["band"] == "uncertain" and not doubted.rereads, "an answer the judge doubts is not read again"
    assert verify_details(output)["verdict"]["restated"] is None


def test_a_value_read_in_another_year_s_column_is_never_supported(balance_sheet) -> None:
    output = answer(balance_sheet, "The total equity was $18,705 [1].", question=EQUITY)
    assert not output["abstained"] and output["band"] == "uncertain"
    # the judge was sure; the row's heading says 2020
    assert output["confidence"] < CONTEXT.confidence.supported <= verify_details(output)["verdict"]["probability"]
    check = output["value_check"]
    assert check.status == "unsupported" and check.missing == check.unstated == []
    assert check.other_period == ["$18,705 is for 2020 where the evidence states it; for 2021 it reads 18,078"]
    assert "Total equity | 18,078 | 18,705" in check.closest.sentence
    console = Console(record=True, width=200)
    print_footer(console, output)
    shown = console.export_text()
    assert check.other_period[0] in shown and "the closest evidence" in shown
    assert "in no sentence the answer cites" not in shown  # the value is there, in the 2020 column
    right = answer(balance_sheet, "The total equity was $18,078 [1].", question=EQUITY)
    assert right["band"] == "supported" and right["value_check"].other_period == []


def test_a_value_for_a_year_the_table_has_no_column_for_is_no_answer(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder
) -> None:
    # the report mentions 2019, so the question's year passes the key-term gate; its table has no 2019 column
    report = BALANCE_SHEET.replace("The amounts", "The company was founded in 2019. The amounts")
    with markdown_library(tmp_path_factory.mktemp("report"), {"report.md": report}, cache_dir, embedder) as index:
        reply = "The total equity was $18,705 [1]."
        output = answer((index, cache_dir), reply, question="What was the total equity in 2019?")
    assert output["abstained"] and output["band"] == "not_found"
    assert "gives none for 2019" in output["abstain_reason"]


def test_a_value_from_a_column_the_question_does_not_name_is_never_supported(
    tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder
) -> None:
    specs = """# Monitor

## Specifications

| Specification | 27" model | 32" model |
| --- | --- | --- |
| Brightness (typ.) | 300 cd/m2 | 350 cd/m2 |
| Product weight | 4.6 kg | 6.2 kg |
"""
    question = "What is the product weight of the 32-inch model?"
    with markdown_library(tmp_path_factory.mktemp("specs"), {"monitor.md": specs}, cache_dir, embedder) as index:
        wrong = answer((index, cache_dir), "The product weight is 4.6 kg [1].", question=question)
        right = answer((index, cache_dir), "The product weight is 6.2 kg [1].", question=question)
        unnamed = answer((index, cache_dir), "The product weight is 4.6 kg [1].", question="What does it weigh?")
    doubt = (
        "4.6 is in another column of the cited row than the question names; in those it names, the row reads: "
        'Product weight — 32" model: 6.2 kg'
    )
    assert not wrong["abstained"] and wrong["band"] == "uncertain" and wrong["value_check"].other_column == [doubt]
    console = Console(record=True, width=200)
    print_footer(console, wrong)
    assert doubt in console.export_text()
    assert right["band"] == "supported" and right["value_check"].other_column == []
    assert not unnamed["abstained"] and unnamed["value_check"].other_column == [], "a question naming no column"


def test_an_answer_to_a_calculation_is_weighed_down_and_says_why(balance_sheet) -> None:
    question = "What is the ratio of total liabilities to total equity in fiscal 2021?"
    reply = "The ratio of total liabilities to total equity is 2.28 [1]."
    output = answer(balance_sheet, reply, question=question)
    check = output["value_check"]
    assert check.computed and output["band"] == "uncertain"
    unweighted = answer(balance_sheet, reply, question=question, context=Context(confidence={"computed_weight": 1.0}))
    assert output["confidence"] == pytest.approx(
        unweighted["confidence"] * CONTEXT.confidence.computed_weight, abs=1e-3
    )
    console = Console(record=True, width=200)
    print_footer(console, output)
    assert COMPUTED_NOTE in console.export_text()
    stated = answer(balance_sheet, "The total equity was $18,078 [1].", question=EQUITY)
    assert not stated["value_check"].computed and stated["band"] == "supported"
    in_words = answer(
        balance_sheet,
        "Total liabilities and total equity are separate rows of the consolidated balance sheets [1].",
        question="How does total equity differ from total liabilities in the consolidated balance sheets?",
    )
    assert not in_words["abstained"], in_words["abstain_reason"]
    assert not in_words["value_check"].computed  # a difference in kind, not a number to compute


def test_an_answer_the_judge_doubts_is_uncertain_or_with_a_refusal_threshold_not_shown(governance) -> None:
    doubted = "Five meetings of the Board took place in the year [1]."
    output = answer(governance, doubted, judge_yes=0.2)
    assert not output["abstained"] and output["band"] == "uncertain" and output["confidence"] <= 0.2
    quoting = answer(governance, doubted, judge_yes=0.2, context=Context(confidence={"abstain_below": 0.35}))
    assert quoting["band"] == "quoted" and "five meetings of the Board took place" in quoting["answer"]
    refusing = Context(confidence={"abstain_below": 0.35, "quote": False})
    output = answer(governance, doubted, judge_yes=0.2, context=refusing)
    assert output["abstained"] and output["band"] == "not_found" and output["citations"] == []
    assert "did not confirm" in output["abstain_reason"]
    assert output["evidence"]  # the passages read stay with the refusal
    assert verify_details(output)["withheld"].startswith("Five meetings"), "kept for the evaluation's baseline"


def test_without_log_probabilities_the_written_word_stands_in(governance) -> None:
    output = answer(governance, "Five meetings of the Board took place in the year [1].", judge_yes=None)
    signals = verify_details(output)
    verdict = signals["verdict"]
    assert (verdict["probability"], verdict["from_logprobs"]) == (CONTEXT.confidence.written_yes, False)
    written = Verdict(probability=CONTEXT.confidence.written_yes, from_logprobs=False, restated=verdict["restated"])
    expected = answer_confidence(written, signals["overlap"], output["value_check"], CONTEXT)
    assert output["confidence"] == expected.value and output["band"] == expected.band


def test_the_confidence_is_the_judge_s_probability_times_the_cited_overlap() -> None:
    supported = ValueCheck(status="supported")
    confidence = answer_confidence(Verdict(probability=0.9, from_logprobs=True), 0.8, supported, CONTEXT)
    assert confidence.value == 0.72 and confidence.band == "supported"
    unsupported = ValueCheck(status="unsupported", values=["10"], missing=["10"])
    confidence = answer_confidence(Verdict(probability=1.0, from_logprobs=True), 1.0, unsupported, CONTEXT)
    assert confidence.value == 0.59 and confidence.band == "uncertain", "held below the supported band's 0.6"
    low = answer_confidence(Verdict(probability=0.9, from_logprobs=True), 0.5, supported, CONTEXT)
    assert low.value == 0.45 and low.band == "uncertain"


def reply_with(text: str, *alternatives: tuple[str, float]) -> AIMessage:
    top = [{"token": token, "logprob": math.log(p)} for token, p in alternatives]
    content = [{"token": text, "logprob": math.log(0.5), "top_logprobs": top}] if alternatives else []
    return AIMessage(content=text, response_metadata={"logprobs": {"content": content}} if content else {})


def test_the_verdict_pools_the_spellings_of_yes_and_of_no() -> None:
    reply = reply_with("Yes", ("Yes", 0.5), (" yes", 0.1), ("No", 0.3), ("The", 0.05), (" NO", 0.05))
    assert read_verdict(reply, 0.75) == Verdict(probability=round(0.6 / 0.95, 4), from_logprobs=True)


def test_without_yes_or_no_among_the_alternatives_the_written_word_stands_in() -> None:
    assert read_verdict(reply_with("Yes."), 0.75) == Verdict(probability=0.75, from_logprobs=False)
    assert read_verdict(reply_with("Sure", ("Sure", 0.9)), 0.75) == Verdict(probability=0.25, from_logprobs=False)
    assert read_verdict(reply_with(""), 0.8) == Verdict(probability=0.2, from_logprobs=False)


def test_a_refusal_in_the_model_s_own_words_is_a_refusal(governance) -> None:
    refusal = "The number of Board meetings is not mentioned in the provided excerpts [1]."
    output = answer(governance, refusal, context=Context(confidence={"quote": False}))
    assert output["abstained"] and output["band"] == "not_found" and output["citations"] == []


def test_a_refusal_with_the_answer_in_the_first_evidence_sentence_becomes_a_quote(governance) -> None:
    output = answer(governance, "The number of Board meetings is not mentioned in the provided excerpts [1].")
    assert not output["abstained"] and output["band"] == "quoted" and output["band_label"] == "quoted from the document"
    assert output["answer"].startswith("The document says: “During the financial year ended 31st March, 2007, five")
    (citation,) = output["citations"]
    assert citation.origin == "quoted" and citation.label in output["answer"] and citation.start_page == 1
    page_text = governance[0].store.pages(governance[0].store.documents()[0].id)[0].text
    assert page_text[citation.quote.start : citation.quote.end] == citation.quote.sentence
    unanswerable = answer(
        governance, "The passages do not say.", question="How many meetings did the Remuneration Committee hold?"
    )
    assert unanswerable["abstained"] and unanswerable["band"] == "not_found", "a weaker match is no quote"


def test_refusal_wording_needs_a_short_answer_without_values_of_its_own() -> None:
    none = ValueCheck(status="no_values")
    assert refuses_in_words("The telephone number is not shown in the provided excerpts.", none)
    assert refuses_in_words("The documents do not mention it.", none)
    assert not refuses_in_words("The unit is not shown in red; it is grey.", ValueCheck(status="supported"))
    long = "It covers safety. It covers installation. It covers repairs. Pricing is not provided."
    assert not refuses_in_words(long, none)


CHARGING = """# 使用说明

## 充电

充满电大约需要2小时。请使用原装充电器为手表充电。

## 保修

本产品自购买之日起保修一年。
"""


@pytest.fixture(scope="module")
def charging_note(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    yield from one_document(tmp_path_factory, "说明.md", CHARGING, cache_dir, embedder)


def test_a_chinese_refusal_with_the_answer_in_the_evidence_is_a_chinese_quote(charging_note) -> None:
    output = answer(charging_note, REFUSAL, question="充满电需要多长时间？")
    assert output["band"] == "quoted" and output["band_label"] == "引自文档"
    assert output["answer"].startswith("文档中写道：“充满电大约需要2小时。") and "[说明.md" in output["answer"]
    refused = answer(charging_note, REFUSAL, question="手表的防水等级是多少？")  # what is its water resistance?
    assert refused["abstained"] and refused["band_label"] == "文档中未找到"
    assert refused["answer"].startswith("无法根据已索引的文档回答这个问题。")
    assert not re.search(
        r"[A-Za-z]{3,}",
        refused["answer"].replace("pagegraph ingest PATH", "").replace("--document NAME", "").replace("说明.md", ""),
    ), refused["answer"]


def test_a_right_value_in_an_uncited_evidence_sentence_is_not_banded_as_missing(governance) -> None:
    audit = "How often did the Audit Committee meet in the year?"
    output = answer(governance, "4", question=audit)
    check = output["value_check"]
    assert check.status == "supported" and check.missing == [] and output["band"] == "supported", check
    (citation,) = output["citations"]  # the passage stating it, though the answer cited none
    assert citation.origin == "attributed" and "The Audit Committee met 4 times" in citation.quote.sentence
    wrong = answer(governance, "7", question=audit)  # in no excerpt: the reader's answer is not shown
    assert wrong["band"] in ("quoted", "not_found") and "7" not in wrong["answer"].split(), wrong["answer"]


def test_doubts_say_in_words_what_keeps_an_answer_from_supported() -> None:
    check = ValueCheck(
        status="unsupported",
        values=["$12", "8 %"],
        missing=["$12"],
        other_column=['8 % is in the cited row\'s 27" column; in the 32" column it reads 9 %'],
    )
    assert doubts(check, "9 %") == [
        SECOND_READING.format(reading="9 %"),
        "$12: in no sentence the answer cites",
        check.other_column[0],
    ]
    computed = ValueCheck(status="supported", values=["4"], computed=True)
    assert doubts(computed, None) == [COMPUTED_NOTE], "a calculation is said whatever the band"
    assert doubts(ValueCheck(status="supported", values=["4"]), None) == doubts(None, None) == []
