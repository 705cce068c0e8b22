"""The terms a question names that no retrieved passage mentions, and the gate that abstains on them before any
model call."""

from __future__ import annotations

from pagegraph.retrievers.key_terms import key_terms, unmentioned_terms

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


def test_a_term_is_mentioned_by_its_parts_prefixes_and_near_spellings() -> None:
    assert unmentioned_terms("What revenue did Netflix report for FY2021?", FILINGS) == []  # "FY" is too short
    assert unmentioned_terms("What revenue did Netfilx report?", FILINGS) == []  # a near spelling
    assert unmentioned_terms("What does the Streaming division do?", FILINGS) == []
    assert unmentioned_terms("How many Frenchmen work for Netflix?", ["The French office of Netflix"]) == []
    assert unmentioned_terms("What revenue did Netflix report for FY2024?", FILINGS) == ["FY2024"]
    assert unmentioned_terms("How many Shopee users does Netflix have in Berlin?", FILINGS) == ["Shopee"]
    assert unmentioned_terms("how many offices opened?", FILINGS) == []  # nothing named: nothing to miss


WEIGHT_IN = "How much did the SB-40 weigh in 2031?"


def test_a_question_naming_what_no_passage_mentions_abstains_before_any_model_call(ask) -> None:
    for graph in ("extract", "rag", "basic"):
        output, model = ask(WEIGHT_IN, graph=graph)
        assert output["abstained"] and not model.requests, graph
        assert "mentions “2031”" in output["abstain_reason"]
        assert output["highlights"]  # still shown, as the closest passages
        gate = next(r for r in output["trace"] if r.stage == "gate")
        assert gate.details == {"unmentioned": ["2031"]}


def test_the_key_term_gate_can_be_turned_off(ask) -> None:
    output, model = ask(WEIGHT_IN, "98 kg [1]", graph="extract", key_term_gate=False)
    assert not output["abstained"] and len(model.requests) == 1
    output, model = ask("How much does the SB-40 weigh?", "98 kg [1]", graph="extract")
    assert not output["abstained"] and len(model.requests) == 1
