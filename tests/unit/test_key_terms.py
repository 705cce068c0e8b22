"""The terms a question names that neither the retrieved passages nor their documents mention, and the gate that
abstains on them before any model call."""

from __future__ import annotations

from pathlib import Path

from pagegraph.config import GateKnobs, ReadingKnobs, Settings
from pagegraph.retrievers.key_terms import documents_mention, key_terms, unmentioned_in_evidence, unmentioned_terms
from pagegraph.state.answering import Evidence
from pagegraph.store.index import open_index

GATE = GateKnobs()
READING = ReadingKnobs()

FILINGS = [
    "Netflix reported revenue of $29.7 billion for fiscal 2021.",
    "Offices in Paris and Berlin opened in 2019 under the Streaming Services division.",
]


def test_key_terms_are_years_and_names_capitalised_inside_a_sentence() -> None:
    assert key_terms("How many items of Shopee related datasets are in the paper? Please write an integer.") == [
        "Shopee"
    ]
    assert key_terms("What did Lincoln's team report in 2024?") == ["Lincoln", "2024"]
    assert key_terms("In the table at Page 28, which signal of the Word file is slowest (Give its name)?") == []
    assert key_terms("WHAT IS THE LAST YEAR IN THE TABLE?") == []
    assert key_terms("What Is The Battery Capacity Of The Unit?") == []
    assert key_terms("What is the weight of the 43-inch model, or of 2.5-inch drives?") == ["43"], "a variant's number"
    assert key_terms("What does the 10-Q say?") == [], "a form's number names no variant"
    assert unmentioned_terms("How bright is the 43-inch model?", ['27" and 32" models'], GATE, READING) == ["43"]
    assert unmentioned_terms("How bright is the 32-inch model?", ['27" and 32" models'], GATE, READING) == []


def test_a_term_is_mentioned_by_its_parts_prefixes_and_near_spellings() -> None:
    assert (
        unmentioned_terms("What revenue did Netflix report for FY2021?", FILINGS, GATE, READING) == []
    )  # "FY" is too short
    assert unmentioned_terms("What revenue did Netfilx report?", FILINGS, GATE, READING) == []  # a near spelling
    assert unmentioned_terms("What does the Streaming division do?", FILINGS, GATE, READING) == []
    assert (
        unmentioned_terms("How many Frenchmen work for Netflix?", ["The French office of Netflix"], GATE, READING) == []
    )
    assert unmentioned_terms("What revenue did Netflix report for FY2024?", FILINGS, GATE, READING) == ["FY2024"]
    assert unmentioned_terms("How many Shopee users does Netflix have in Berlin?", FILINGS, GATE, READING) == ["Shopee"]
    assert unmentioned_terms("how many offices opened?", FILINGS, GATE, READING) == []  # nothing named: nothing to miss


MANUAL = "sb40-user-manual.pdf"


def test_a_term_the_passages_miss_is_looked_for_in_the_rest_of_their_documents(
    sample_index: Path, cache_dir: Path, embedder
) -> None:
    passage = Evidence(
        id="c1", chunk_ids=["c1"], source=MANUAL, start_page=3, end_page=3, text="It weighs 98 kg.", score=1.0
    )
    with open_index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder) as index:
        assert documents_mention(index, "Northwind", [MANUAL], GateKnobs()) and not documents_mention(
            index, "Tesla", [MANUAL], GateKnobs()
        )
        assert documents_mention(index, "After", [MANUAL], GateKnobs())  # a stopword alone: nothing to look for
        question = "How heavy is the Northwind SB-40 in the Tesla edition?"
        assert unmentioned_terms(question, [passage.text], GATE, READING) == ["Northwind", "SB-40", "Tesla"]
        assert unmentioned_in_evidence(index, question, [passage], GATE, READING) == ["Tesla"]


WEIGHT_IN = "How much did the SB-40 weigh in 2031?"


def test_a_question_naming_what_no_passage_mentions_abstains_before_any_model_call(ask) -> None:
    for graph in ("extract", "rag", "basic"):
        output, model = ask(WEIGHT_IN, graph=graph)
        assert output["abstained"] and not model.requests, graph
        assert "mention “2031”" in output["abstain_reason"]
        assert output["highlights"]  # still shown, as the closest passages
        gate = next(r for r in output["trace"] if r.stage == "gate")
        assert gate.details == {"unmentioned": ["2031"]}


def test_the_key_term_gate_can_be_turned_off(ask) -> None:
    output, model = ask(WEIGHT_IN, "98 kg [1]", graph="extract", gate={"key_terms": False})
    assert not output["abstained"] and len(model.requests) == 1
    output, model = ask("How much does the SB-40 weigh?", "98 kg [1]", graph="extract")
    assert not output["abstained"] and len(model.requests) == 1


def test_a_question_naming_a_page_the_document_does_not_have_abstains_before_any_model_call(ask) -> None:
    manual = {"documents": [MANUAL]}  # nine pages
    output, model = ask("What is shown on pages 40 and 41?", graph="extract", inputs=manual)
    assert output["abstained"] and not model.requests
    assert output["abstain_reason"] == f"{MANUAL} has no page 40 or page 41"
    gate = next(r for r in output["trace"] if r.stage == "gate")
    assert gate.details == {"absent": ["page 40", "page 41"]}
    refusal = "The documents do not contain the answer."
    let_through = [
        ("What is shown on page 3?", manual, {}),
        ("What is shown on page 40?", manual, {"gate": {"key_terms": False}}),
        # across the library, the documents searched are the router's guess: a page they lack says little
        ("What is shown on page 40 of the SB-40 manual?", {}, {}),
    ]
    for question, inputs, context in let_through:
        output, model = ask(question, refusal, refusal, graph="extract", inputs=inputs, **context)
        assert len(model.requests) == 2, question  # the gate let it through to both reads


def test_a_question_in_another_script_names_only_its_years_and_latin_names() -> None:
    assert key_terms("渡轮早上几点出发？") == [] and key_terms("Когда отправляется паром?") == []
    assert key_terms("2015年黑豹队的防守拦截了多少次？") == ["2015"]
    assert key_terms("这台 SB-40 的重量是多少？") == ["SB-40"]
    chinese = ["2015年，黑豹队的防守共拦截24次。"]
    assert unmentioned_terms("2015年黑豹队的防守拦截了多少次？", chinese, GATE, READING) == [], (
        "its year is in the passage"
    )
    assert (
        unmentioned_terms(
            "Сколько перехватов сделала защита в 2015 году?",
            ["В 2015 году защита сделала 24 перехвата."],
            GATE,
            READING,
        )
        == []
    )
