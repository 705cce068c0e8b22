"""Answers picked from the evidence: the candidates a question's passages offer (table cells with their row and
column, values with the words around them, sentences), the model's pick among them under a schema (it copies the
value), its confidence from the log-probabilities of the value it wrote, "none of these" as a refusal, and several
picks for a question asking for several things."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from pagegraph import build_graph
from pagegraph.checks.candidates import answer_candidates, asks_several, fits_question
from pagegraph.checks.confidence import doubts
from pagegraph.config import Context, PickingKnobs, ReadingKnobs, Settings
from pagegraph.llm.embedder import Embedder
from pagegraph.nodes.pick import NONE, compose, read_pick, value_probabilities
from pagegraph.prompts.pick import OPTIONS_HEADING, PICK_SYSTEM, SEVERAL
from pagegraph.services import Services
from pagegraph.state.answering import Candidate, Evidence
from pagegraph.tools.documents import answer_pick
from tests.conftest import markdown_library
from tests.fakes import ScriptedChatModel

FILING = """# Annual report 2015

## Selected financial data

The amounts are in thousands of dollars.

| | 2015 | 2014 | 2013 |
| --- | --- | --- | --- |
| Revenues | $ 6,779,511 | $ 5,504,656 | $ 4,374,562 |
| Net income | 122,641 | 266,799 | 112,403 |

## Members

At the end of 2015 the service had 43,401 thousand paid memberships in the United States. Its international
segment had 30,024 thousand paid memberships at the same date.
"""
REVENUES_2014 = "What were the revenues in 2014?"


def _passage(text: str) -> Evidence:
    return Evidence(id="c1", chunk_ids=["c1"], source="report.md", start_page=1, end_page=1, text=text, score=1.0)


def _option_value(messages: list[BaseMessage], holding: str) -> str:
    """What a model copies to pick the first option of a pick request that holds `holding`: the option's text up to
    its value, the one of the schema's values (shown in the request's JSON instruction) that the option starts with."""
    options = str(messages[-1].content).split(OPTIONS_HEADING, 1)[1].split("\n\n")[0]
    enum = json.loads(re.search(r'"enum":(\[.*?\])', str(messages[0].content)).group(1))
    for line in options.splitlines():
        if holding in line:
            return max((value for value in enum if line.startswith(value)), key=len)
    raise AssertionError(f"no option holds {holding!r}:\n{options}")


def picking(*holding: str, shares: dict[str, float] | None = None):
    """A scripted pick: the values of the options holding each of `holding` (none of these when none is given), as
    JSON; with `shares` (option text → probability), the token opening the first value reports those alternatives,
    each the opening of that option's value."""

    def reply(messages: list[BaseMessage]) -> AIMessage:
        assert messages[0].content.startswith(PICK_SYSTEM)
        values = [_option_value(messages, text) for text in holding] or [NONE]
        several = SEVERAL in str(messages[-1].content)
        content = json.dumps({"pick": values if several else values[0]}, ensure_ascii=False)
        if shares is None:
            return AIMessage(content=content)
        opening = '{"pick": ' + ("[" if several else "")
        alternatives = [
            {"token": json.dumps(_option_value(messages, text) if text != NONE else NONE, ensure_ascii=False)[:-1],
             "logprob": math.log(p)}
            for text, p in shares.items()
        ]  # fmt: skip
        first = json.dumps(values[0], ensure_ascii=False)
        tokens = [
            {"token": opening, "logprob": 0.0, "top_logprobs": []},
            {"token": first[:-1], "logprob": alternatives[0]["logprob"], "top_logprobs": alternatives},
            {"token": content[len(opening) + len(first) - 1 :], "logprob": 0.0, "top_logprobs": []},
        ]
        return AIMessage(content=content, response_metadata={"logprobs": {"content": tokens}})

    return reply


@pytest.fixture(scope="module")
def filing(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, embedder: Embedder):
    with markdown_library(tmp_path_factory.mktemp("filing"), {"report.md": FILING}, cache_dir, embedder) as index:
        yield index, cache_dir


PICKING = Context(picking={"use": True})


def ask(library, question: str, *replies, context: Context = PICKING) -> tuple[dict, ScriptedChatModel]:
    index, cache_dir = library
    model = ScriptedChatModel.replying(*replies)
    graph = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    output = graph.invoke({"question": question}, context=context)
    assert not model.script, f"scripted replies left unused: {model.script}"
    return output, model


def test_a_table_cell_is_a_candidate_with_its_row_and_column_and_no_other_years_cell(embedder: Embedder) -> None:
    candidates = answer_candidates(REVENUES_2014, [_passage(FILING)], embedder, PickingKnobs(), ReadingKnobs())
    cells = [c for c in candidates if c.kind == "cell"]
    revenue = next(c for c in cells if "5,504,656" in c.value)
    assert revenue.measures == "Revenues, 2014, in thousands" and revenue.passage == 1
    assert compose(revenue) == "$ 5,504,656 (Revenues, 2014, in thousands) [1]"
    # the question names 2014: the row's cells of 2015 and 2013 are not offered
    assert not any("6,779,511" in c.value or "4,374,562" in c.value for c in candidates)
    assert all(c.value != "2014" for c in candidates), "a value the question states is no answer"
    members = answer_candidates(
        "How many paid memberships did the service have in the United States?",
        [_passage(FILING)], embedder, PickingKnobs(), ReadingKnobs(),
    )  # fmt: skip
    value = next(c for c in members if c.value.startswith("43,401"))
    assert value.kind == "value" and "paid memberships in the United States" in value.measures
    assert compose(value) == f"{value.value} [1]", "the words around a value, which may hold others, are not the answer"


@pytest.mark.parametrize(
    ("question", "text", "before", "after", "fits"),
    [
        ("How many stores were open?", "2023", "At the end of fiscal ", "", False),
        ("In what year did it open its first store?", "2023", "It opened in ", "", True),
        ("What was net income for the three months ended April 1?", "six", "For the ", " months ended", False),
        ("How many minutes should you rest?", "5", "Rest for ", " minutes before", True),
        ("How long should you rest?", "5", "Rest for ", " minutes before", True),
        ("What were revenues, in millions of dollars?", "12%", "Revenues grew ", "", False),
        ("What share of revenue came from stores?", "$4.1 billion", "Stores sold ", "", False),
        ("What share of revenue came from stores?", "67%", "Stores sold ", "", True),
        ("What were diluted earnings per share?", "$6.29", "Diluted earnings per share ", "", True),
        ("How many users does the dataset have?", "2", "as shown in Table ", "", False),
        ("How many users does the dataset have?", "1,791", "The dataset has ", " users", True),
        ("What was the revenue on December 31?", "December 31, 2021", "", "", False),
        ("What were net sales, in millions?", "three", "for the ", " and six months ended", False),
        ("What were net sales, in millions?", "three", "for the ", " - and six-month periods", False),
        ("What was deferred revenue, in billions?", "31", "as of December ", " , 2022", False),
        ("On what day did the quarter end?", "31", "as of December ", " , 2022", True),
    ],
)
def test_a_candidate_is_a_value_of_the_kind_the_question_asks_for(
    question: str, text: str, before: str, after: str, fits: bool
) -> None:
    assert fits_question(question, text, before, after) is fits


def test_a_cell_names_the_table_its_labels_column_heads(embedder: Embedder) -> None:
    segment = Evidence(
        id="c1", chunk_ids=["c1"], source="10-K.pdf", start_page=25, end_page=25, score=1.0,
        text="| Domestic Segment Performance Summary | 2023 | 2022 |\n| --- | --- | --- |\n| Revenue | $42,794 | $47,830 |",
    )  # fmt: skip
    found = answer_candidates("What was revenue in 2022?", [segment], embedder, PickingKnobs(), ReadingKnobs())
    assert [(c.value, c.measures) for c in found] == [
        ("$47,830", "Revenue, 2022, Domestic Segment Performance Summary")
    ]


def test_a_running_footer_s_page_number_is_no_candidate(embedder: Embedder) -> None:
    page = Evidence(
        id="c1", chunk_ids=["c1"], source="10-Q.pdf", start_page=9, end_page=9, start_label="7", score=1.0,
        text="The Company had 1,500 retail stores at the end of the quarter.\nApple Inc. | Q2 2023 Form 10-Q | 7",
    )  # fmt: skip
    found = answer_candidates("How many stores did the company have?", [page], embedder, PickingKnobs(), ReadingKnobs())
    assert [c.value for c in found] == ["1,500"]


def test_the_model_picks_the_cell_and_the_answer_shows_its_row_and_column(filing) -> None:
    shares = {"5,504,656": 0.9, "266,799": 0.1}
    output, model = ask(filing, REVENUES_2014, picking("5,504,656", shares=shares))
    (request,) = model.requests
    assert "Revenues, 2014 (in thousands): $ 5,504,656" in request[0][-1].content and len(request[0][-1].content) < 3000
    assert output["answer"] == "$ 5,504,656 (Revenues, 2014, in thousands) [report.md, Selected financial data, p. 1]"
    assert output["citations"] and output["citations"][0].source == "report.md"
    chosen = output["pick"]
    assert [c.value for c in chosen.chosen()] == ["$ 5,504,656"] and chosen.from_logprobs
    assert chosen.probability == pytest.approx(0.9) and chosen.second().value == "266,799"
    assert output["band"] == "supported" and output["value_check"].status == "supported"
    assert output["llm_calls"] == 1, "one short call: no judge, no second reading"
    shown = answer_pick(chosen)  # as the MCP ask tool and DocumentTools give it to other agents
    assert shown.answered and [p.value for p in shown.picked] == ["$ 5,504,656"] and shown.runner_up.value == "266,799"
    assert shown.picked[0].measures == "Revenues, 2014, in thousands" and shown.picked[0].label.startswith("[report.md")


def test_a_pick_spread_over_two_candidates_is_uncertain_and_keeps_the_runner_up(filing) -> None:
    shares = {"5,504,656": 0.5, "266,799": 0.45, NONE: 0.05}
    output, _ = ask(filing, REVENUES_2014, picking("5,504,656", shares=shares))
    assert not output["abstained"] and output["band"] == "uncertain"
    assert output["pick"].second().value == "266,799" and output["pick"].runner_up_probability == pytest.approx(0.45)
    said = doubts(output["value_check"], output["second_reading"], output["pick"], output["band"])
    assert "The model was 50% sure of its pick; next likeliest: 266,799 (Net income, 2014, in thousands), 45%" in said


def test_none_of_these_is_a_refusal_that_names_what_was_read(filing) -> None:
    question = "How much was the dividend per share in 2014?"
    output, _ = ask(filing, question, picking(shares={NONE: 0.8, "5,504,656": 0.2}))
    assert output["abstained"] and output["band"] == "not_found"
    assert "none of the" in output["abstain_reason"] and "report.md" in output["answer"]
    assert output["pick"].picked == [] and output["pick"].probability == pytest.approx(0.8)
    assert output["highlights"], "the closest evidence is still shown"


def test_a_question_asking_for_two_things_picks_two_candidates(filing) -> None:
    question = "What were the revenues in 2014, and what was the net income in 2014?"
    assert asks_several(question) and not asks_several(REVENUES_2014)
    output, model = ask(filing, question, picking("5,504,656", "266,799"))
    assert SEVERAL in model.requests[0][0][-1].content
    assert "5,504,656" in output["answer"] and "266,799" in output["answer"]
    assert [c.value for c in output["pick"].chosen()] == ["$ 5,504,656", "266,799"]


def test_the_structured_output_path_reads_a_pick_without_log_probabilities(filing) -> None:
    # a chat model that reports no log-probabilities: its written pick at a fixed weight
    output, model = ask(
        filing, REVENUES_2014, picking("5,504,656"), context=Context(picking={"use": True, "written_weight": 0.5})
    )
    (request,) = model.requests
    assert "top_logprobs" not in request[1], "no alternatives asked of a model that does not report them"
    assert output["pick"].probability == 0.5 and not output["pick"].from_logprobs
    assert output["band"] == "uncertain" and "5,504,656" in output["answer"]


def test_a_reply_that_is_no_pick_falls_back_to_the_written_answer(filing) -> None:
    # not JSON twice (the reply and its repair): the reader writes the answer as before
    output, model = ask(filing, REVENUES_2014, "Revenues were high.", "Still no JSON.", "$5,504,656 [1]")
    assert [r.stage for r in output["trace"]].count("read") >= 1 and "5,504,656" in output["answer"]
    assert output["pick"] is None


def test_a_value_s_probability_is_read_token_by_token_among_the_values_the_grammar_allows() -> None:
    values = ["350 cd/m2", "32 inch", "300 cd/m2"]
    tokens = [
        {"token": '{"pick": ', "logprob": 0.0, "top_logprobs": []},
        {"token": '"3', "logprob": math.log(0.8), "top_logprobs": [
            {"token": '"3', "logprob": math.log(0.8)}, {"token": '"none', "logprob": math.log(0.1)},
            {"token": "The", "logprob": math.log(0.1)},  # leads to no value: not counted
        ]},
        {"token": "5", "logprob": math.log(0.45), "top_logprobs": [
            {"token": "5", "logprob": math.log(0.45)}, {"token": "50", "logprob": math.log(0.15)},
            {"token": "2", "logprob": math.log(0.3)}, {"token": "0", "logprob": math.log(0.1)},
        ]},  # "50" is the same value cut otherwise: counted with "5"
        {"token": '0 cd/m2"}', "logprob": 0.0, "top_logprobs": []},
    ]  # fmt: skip
    reply = AIMessage(content='{"pick": "350 cd/m2"}', response_metadata={"logprobs": {"content": tokens}})
    (shares,) = value_probabilities(reply, ["350 cd/m2"], values)
    first = 0.8 / 0.9
    assert shares["350 cd/m2"] == pytest.approx(first * 0.6)
    assert shares["32 inch"] == pytest.approx(first * 0.3) and shares["300 cd/m2"] == pytest.approx(first * 0.1)
    assert shares[NONE] == pytest.approx(0.1 / 0.9)
    candidates = [
        Candidate(kind="cell", value=v, measures="m", option=v, sentence="s", passage=1, label="[m, p. 1]", score=1.0)
        for v in values
    ]
    chosen = read_pick(["350 cd/m2"], reply, candidates, PickingKnobs())
    assert chosen.picked == [0] and chosen.probability == pytest.approx(first * 0.6, abs=1e-3)
    assert chosen.second().value == "32 inch" and chosen.from_logprobs


def test_none_of_these_for_an_answer_in_words_goes_to_the_written_reader(filing) -> None:
    question = "What did the report say about the members?"  # may be answered in words, which no candidate is
    output, model = ask(filing, question, picking(), "The service had 43,401 thousand paid memberships [1].")
    assert len(model.requests) == 2 and output["pick"].picked == []
    assert not output["abstained"] and "43,401" in output["answer"]


def test_an_unsure_none_for_a_number_takes_the_likeliest_candidate_instead(filing) -> None:
    question = "How much were the revenues in 2014?"
    shares = {NONE: 0.4, "5,504,656": 0.35, "266,799": 0.25}
    keep = {"use": True, "refuse_from": 0.5, "answer_from": 0.0}  # every pick kept, however unsure
    output, _ = ask(filing, question, picking(shares=shares), context=Context(picking=keep))
    assert not output["abstained"] and "5,504,656" in output["answer"] and output["band"] == "uncertain"
    assert output["pick"].probability == pytest.approx(0.35)
    refusing = Context(picking={**keep, "refuse_from": 0.3})
    refused, _ = ask(filing, question, picking(shares=shares), context=refusing)
    assert refused["abstained"] and refused["pick"].picked == []


def test_an_unsure_pick_is_written_by_the_reader_instead(filing) -> None:
    shares = {"5,504,656": 0.4, "266,799": 0.35, NONE: 0.25}
    written = "Revenues were $5,504,656 thousand in 2014 [1]."
    output, model = ask(filing, REVENUES_2014, picking("5,504,656", shares=shares), written)
    assert len(model.requests) >= 2 and model.judged, "the reader wrote it, and the judge checked it"
    assert [c.value for c in output["pick"].chosen()] == ["$ 5,504,656"] and "5,504,656" in output["answer"]
    assert not output["pick"].answered and not any(
        "sure of its pick" in d for d in doubts(None, None, output["pick"], "uncertain")
    )
