"""The small_model graph with scripted models: parse fallbacks, the filter, abstention, call count, confidence."""

from __future__ import annotations

import json
import re

import pytest

from pagegraph.prompts.answer import REFUSAL
from tests.fakes import citing

PLAN = '{"keywords": ["weight", "SB-40"], "file_filter": null, "source_hint": null}'
IRRELEVANT = '{"facts": [], "relevant": false}'
QUESTION = "How much does the SB-40 weigh?"
WEIGHT_FACT = '{"facts": ["Weight 98 kg"], "relevant": true}'


def weight_map(messages: list) -> str:
    """The map reply of a model that reads the passages right: the weight fact from the passage that states it."""
    return WEIGHT_FACT if states_the_weight(messages[-1].content) else IRRELEVANT


def states_the_weight(prompt: str) -> bool:
    """Whether the passage in a map prompt holds the weight row of the manual's specifications table."""
    return re.search(r"Weight\W+98 kg", prompt) is not None


def maps(output: dict) -> list:
    return [r for r in output["trace"] if r.stage.startswith("map[")]


def test_normal_path_makes_two_plus_n_calls(ask) -> None:
    output, model = ask(
        QUESTION,
        PLAN,
        *[weight_map] * 5,
        "It weighs 98 kg [1].",
        graph="small_model",
    )
    calls = len(model.requests) + len(model.judged) + len(model.rereads)
    assert output["llm_calls"] == 2 + 5 + 2 == output["usage"].calls == calls  # and the judge's two
    stages = [r.stage for r in output["trace"]]
    assert stages[:4] == ["highlight", "plan_search", "search", "gate"]
    assert stages[-4:] == ["filter_facts", "reduce", "judge", "verify"]
    assert len(maps(output)) == 5
    assert [e.text for e in output["evidence"]] == ["Weight 98 kg"], "the answer is checked against facts, not chunks"
    assert output["answer"].startswith("It weighs 98 kg [") and output["citations"][0].origin == "model"
    assert output["value_check"].status == "supported" and output["band"] in ("supported", "uncertain")
    reduce_prompt = model.requests[-1][0][-1].content
    assert "- Weight 98 kg" in reduce_prompt and "Facts:" in reduce_prompt


def test_map_count_follows_the_context(ask) -> None:
    output, model = ask(
        QUESTION,
        PLAN,
        *[weight_map] * 3,
        "98 kg [1].",
        graph="small_model",
        small_model={"map_chunks": 3},
    )
    assert output["llm_calls"] == 7 and len(maps(output)) == 3  # plan, 3 maps, reduce, judge, second reading


def test_invalid_plan_falls_back_to_question_keywords(ask) -> None:
    output, model = ask(
        QUESTION,
        "I would search for the weight.",
        "Still no plan.",
        WEIGHT_FACT,
        *[IRRELEVANT] * 4,
        "98 kg [1].",
        graph="small_model",
        small_model={"fact_grounding": 0.0},
    )
    plan = output["trace"][1]
    assert plan.summary.startswith("model output invalid: keywords from the question")
    assert plan.ids == ["sb", "40", "weigh"]
    assert [a.step for a in plan.attempts] == ["initial", "repair"]
    assert output["llm_calls"] == 10, "one repair call (repair_attempts), then the deterministic fallback"


@pytest.mark.parametrize(
    ("reply", "relevant", "parsed_by"),
    [
        ('{"facts": ["Weight 98 kg"], "relevant": true}', True, "json"),
        ('Sure: {"facts": ["Weight 98 kg"], "relevant": true} done', True, "extract"),
        ('{"facts": ["Weight 98 kg",], "relevant": true', True, "lenient"),
        ("relevant: false", False, "salvage"),
        ("I cannot tell.", True, "default"),
    ],
)
def test_map_reply_fallbacks(ask, reply: str, relevant: bool, parsed_by: str) -> None:
    unreadable = parsed_by == "default"  # read again once (repair_attempts) before the default
    replies = [PLAN, reply, *[reply] * unreadable, *[REFUSAL] * relevant]
    output, _ = ask(QUESTION, *replies, graph="small_model", small_model={"map_chunks": 1, "fact_grounding": 0.0})
    (record,) = maps(output)
    assert f"(read by {parsed_by})" in record.summary
    assert ("not relevant" not in record.summary) == relevant
    if parsed_by == "default":
        assert record.ids, "an unreadable reply keeps the chunk's question-matching sentences as facts"


def test_facts_not_in_their_passage_are_dropped(ask) -> None:
    facts = ["Weight 98 kg", "Noise below 30 dB(A)", "The SB-40 weighs 120 kg"]
    mostly_read = json.dumps({"facts": facts, "relevant": True})

    def reply(messages: list) -> str:
        return mostly_read if states_the_weight(messages[-1].content) else IRRELEVANT

    output, model = ask(QUESTION, PLAN, *[reply] * 5, "It weighs 98 kg [1].", graph="small_model")
    assert [e.text for e in output["evidence"]] == ["Weight 98 kg\nNoise below 30 dB(A)"]
    filtered = next(r for r in output["trace"] if r.stage == "filter_facts")
    assert "1 of 5 chunks relevant, 2 facts, 1 facts dropped (not in their passage)" in filtered.summary
    assert "120" not in model.requests[-1][0][-1].content


def test_a_passage_with_as_many_invented_facts_as_read_ones_is_dropped(ask) -> None:
    """The model tied a passage to the question through a fact it invented: the passage's true facts are not an
    answer to the question either."""
    misread = json.dumps({"facts": ["Error E99 means the weight is 98 kg", "Weight 98 kg"], "relevant": True})
    output, _ = ask(QUESTION, PLAN, *[misread] * 5, graph="small_model")
    assert output["abstained"] and output["abstain_reason"] == "No relevant information found."
    summary = next(r.summary for r in output["trace"] if r.stage == "filter_facts")
    assert "misread passages dropped (as many facts invented as read)" in summary


def test_a_model_that_invents_every_fact_ends_in_abstention(ask) -> None:
    invented = '{"facts": ["The SB-40 weighs 987 kg"], "relevant": true}'
    output, _ = ask(QUESTION, PLAN, *[invented] * 5, graph="small_model")
    assert output["abstained"] and output["abstain_reason"] == "No relevant information found."


def test_nothing_relevant_abstains_before_reduce(ask) -> None:
    output, model = ask(QUESTION, PLAN, *[IRRELEVANT] * 5, graph="small_model")
    assert output["abstained"] and output["abstain_reason"] == "No relevant information found."
    assert output["llm_calls"] == 6 and [r.stage for r in output["trace"]][-2:] == ["filter_facts", "abstain"]


def test_off_topic_question_abstains_at_the_gate(ask) -> None:
    bread = '{"keywords": ["sourdough", "bread"], "file_filter": null, "source_hint": null}'
    output, model = ask("What is the recipe for sourdough bread?", bread, graph="small_model")
    assert output["abstained"] and output["llm_calls"] == 1 and not maps(output)


def test_an_answer_its_evidence_does_not_hold_is_uncertain(ask) -> None:
    output, _ = ask(
        QUESTION,
        PLAN,
        *[weight_map] * 5,
        "Purple elephants dance quietly beneath ancient oak trees [1].",
        graph="small_model",
    )
    assert output["band"] == "uncertain" and output["low_confidence"] and not output["abstained"]
    assert output["confidence"] == 0.0, "the judge said Yes, but none of its words are in the evidence"


def test_planner_filters_restrict_the_search(ask) -> None:
    question = "In the support call transcript, what did Dana say about the E04 code and the grid voltage?"
    plan = '{"keywords": ["E04"], "file_filter": "vtt", "source_hint": null}'
    output, _ = ask(
        question,
        plan,
        '{"facts": ["E04 is grid voltage"], "relevant": true}',
        "E04 [1].",
        graph="small_model",
        small_model={"map_chunks": 1},
    )
    assert {e.source for e in output["evidence"]} == {"support-call-2024-03-14.vtt"}
    word = "Which Word document explains the E04 code and the grid voltage?"
    unmatched = '{"keywords": ["E04"], "file_filter": "docx", "source_hint": null}'
    output, _ = ask(
        word,
        unmatched,
        '{"facts": ["E04"], "relevant": true}',
        "E04 [1].",
        graph="small_model",
        small_model={"map_chunks": 1},
    )
    assert "match no document" in output["trace"][2].summary


def test_filters_the_question_does_not_ask_for_are_dropped(ask) -> None:
    plan = '{"keywords": ["weight"], "file_filter": "vtt", "source_hint": "support-call"}'
    output, _ = ask(
        QUESTION,
        plan,
        WEIGHT_FACT,
        "98 kg [1].",
        graph="small_model",
        small_model={"map_chunks": 1, "fact_grounding": 0.0},
    )
    summary = output["trace"][1].summary
    assert "file_filter 'vtt', source_hint 'support-call' dropped" in summary
    assert "in 3 documents" in output["trace"][2].summary


def test_a_failing_stage_falls_back_to_basic(ask) -> None:
    output, _ = ask(QUESTION, RuntimeError("planner down"), citing("98 kg", "98 kg [{n}]."), graph="small_model")
    assert output["trace"][1].error == "RuntimeError: planner down"
    assert [r.stage for r in output["trace"]][-4:] == ["gate", "answer", "judge", "verify"]
    assert output["llm_calls"] == 3 and not output["abstained"]  # the answer, the judge, its second reading
