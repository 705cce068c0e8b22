"""Computed answers in the extract graph: the model copies figures and writes the arithmetic as a small program, the
program is evaluated here (nothing but numbers, names and arithmetic), and each figure is looked for in the
excerpts."""

from __future__ import annotations

import pytest

from pagegraph.nodes.calculate import (
    CalculationError,
    asks_to_compute,
    calculation_answer,
    format_value,
    parse_calculation,
    place_figures,
)
from pagegraph.nodes.read import judge_calculation
from pagegraph.state.answering import Evidence

PEAK = "What is the difference between the SB-40's peak power and its continuous power?"
PROGRAM = """```python
peak = 7.5  # [2] peak power (10 s) in kW
continuous = 5  # [2] continuous power in kW
answer = peak - continuous
```"""


def _passage(text: str, number: int) -> Evidence:
    return Evidence(
        id=f"c{number}", chunk_ids=[f"c{number}"], source="manual.pdf", start_page=number, end_page=number,
        text=text, score=1.0, rank=number,
    )  # fmt: skip


EVIDENCE = [
    _passage("Mount the SB-40 on a wall that can hold 120 kg.", 1),
    _passage("Usable capacity 10.2 kWh. Continuous power 5 kW. Peak power (10 s) 7.5 kW. Weight 98 kg.", 2),
]


@pytest.mark.parametrize(
    "question",
    [
        PEAK,
        "How much higher was revenue in 2023 than in 2022?",
        "What is the average daily output over the week?",
        "By what percentage did sales increase from 2021 to 2022?",
        "What is the company's current ratio? Round your answer to two decimal places.",
        "What is the operating margin in FY2022?",
        "How many more stores opened in Europe than in Asia?",
    ],
)
def test_questions_asking_for_a_computed_figure_are_recognised(question: str) -> None:
    assert asks_to_compute(question)


@pytest.mark.parametrize(
    "question",
    [
        "How much does the SB-40 weigh?",
        "What does error E04 mean?",
        "How many quizzes are in the course?",
        "Who signed the report?",
        "What is the total current assets figure on the balance sheet?",
    ],
)
def test_questions_asking_to_copy_a_value_are_not(question: str) -> None:
    assert not asks_to_compute(question)


def test_a_program_of_figures_is_evaluated_and_shown_with_its_figures() -> None:
    calculation = parse_calculation(PROGRAM)
    assert calculation.value == 2.5 and calculation.expression == "7.5 - 5"
    assert [(f.name, f.value, f.excerpt, f.note) for f in calculation.figures] == [
        ("peak", 7.5, 2, "peak power (10 s) in kW"),
        ("continuous", 5.0, 2, "continuous power in kW"),
    ]
    placed, support = place_figures(calculation, EVIDENCE)
    assert (placed, support) == ([2, 2], 1.0)
    assert calculation_answer(calculation, PEAK, placed) == (
        "2.5 [2]\nComputed: 7.5 - 5 = 2.5\n- 7.5: peak power (10 s) in kW [2]\n- 5: continuous power in kW [2]"
    )


def test_written_figures_keep_their_meaning() -> None:
    program = (
        "before = 41.5%  # [1] accuracy before\nafter = 57.4%  # [1] accuracy after\n"
        "sales = $1,250.5  # [2] sales\nanswer = after - before"
    )
    calculation = parse_calculation(program)
    assert calculation.percent and calculation.value == pytest.approx(15.9)
    assert [f.value for f in calculation.figures] == [41.5, 57.4]  # figures the answer does not use are left out
    assert parse_calculation("sales = $1,250.5  # [2] sales\nanswer = sales * 2").value == 2501.0
    ratio = parse_calculation("a = 20%  # [1] share\nb = 40%  # [1] share\nanswer = a / b")
    assert not ratio.percent  # a ratio of two percentages is not a percentage


def test_intermediate_results_and_the_allowed_functions() -> None:
    program = (
        "opening = 1,000  # [1] inventory at the start\nclosing = 1,400  # [1] inventory at the end\n"
        "cost = 6,000  # [2] cost of sales\naverage = (opening + closing) / 2\nanswer = round(cost / average, 2)"
    )
    calculation = parse_calculation(program)
    assert calculation.value == 5.0 and calculation.expression == "round(6000 / ((1000 + 1400) / 2), 2)"
    assert [f.name for f in calculation.figures] == ["opening", "closing", "cost"]
    assert parse_calculation("answer = max(3, abs(-7), min(1, 2))").value == 7.0


@pytest.mark.parametrize(
    "reply",
    [
        "answer = __import__('os').system('echo hi')",
        "import os\nanswer = 1",
        "a = 2  # [1] x\nanswer = a ** 99999",
        "a = 2  # [1] x\nanswer = a.real",
        "a = 2  # [1] x\nanswer = a / 0",
        "a = 2  # [1] x",
        "The peak power is 7.5 kW [2].",
        "answer = b - 1",
        "answer = 100000000 * 100000000",
    ],
)
def test_anything_but_figures_and_arithmetic_is_refused(reply: str) -> None:
    with pytest.raises(CalculationError):
        parse_calculation(reply)


def test_a_figure_the_excerpts_do_not_hold_lowers_support_and_is_marked() -> None:
    program = "peak = 9.5  # [2] peak power\ncontinuous = 5  # [1] continuous power\nanswer = peak - continuous"
    calculation = parse_calculation(program)
    placed, support = place_figures(calculation, EVIDENCE)
    assert placed == [None, 2] and support == 0.5  # 5 is in excerpt 2, not the cited 1
    assert "- 9.5: peak power (not found in the excerpts)" in calculation_answer(calculation, PEAK, placed)


def test_results_are_rounded_as_the_question_asks() -> None:
    assert format_value(2 / 3, "What is the ratio? Round your answer to three decimal places.") == "0.667"
    assert format_value(12.0, "What is the gap? Round to 2 decimal places.") == "12.00"
    assert format_value(8980.4, "How many items in total? Write the answer in int format.") == "8,980"
    assert format_value(15.899999, "How much higher is it?") == "15.9"
    assert format_value(0.12345, "What is the ratio?") == "0.1235"
    assert format_value(30216492.0, "What is the total?") == "30,216,492"


def test_a_lone_figure_is_shown_once() -> None:
    calculation = parse_calculation("answer = 98  # [2] weight in kg")
    placed, support = place_figures(calculation, EVIDENCE)
    assert support == 1.0 and calculation_answer(calculation, "How much in total?", placed) == (
        "98 [2]\n- 98: weight in kg [2]"
    )


def test_judging_a_calculation() -> None:
    reading, outcome = judge_calculation(PROGRAM, PEAK, EVIDENCE, wide=False)
    assert reading.computed and not reading.refused and reading.support == 1.0 and reading.source == 2
    assert reading.draft.startswith("2.5 [2]") and "2 figures, 100%" in outcome
    refused, _ = judge_calculation("The documents do not contain the answer.", PEAK, EVIDENCE, wide=False)
    assert refused.refused and not refused.computed
    prose, outcome = judge_calculation("The difference is 2.5 kW [2].", PEAK, EVIDENCE, wide=True)
    assert prose.refused and prose.wide and "no calculation" in outcome


def test_the_graph_computes_and_cites_the_figures(ask) -> None:
    output, model = ask(PEAK, PROGRAM.replace("[2]", "[1]"), graph="extract")
    (request,) = model.requests
    assert "Python program" in request[0][0].content
    assert not output["abstained"], output["abstain_reason"]
    assert output["answer"].startswith("2.5 [sb40-user-manual.pdf") and "Computed: 7.5 - 5 = 2.5" in output["answer"]
    (read,) = [r for r in output["trace"] if r.stage == "read"]
    assert read.summary.startswith("computed answer") and output["citations"]


def test_the_graph_abstains_when_the_figures_are_not_in_the_documents(ask) -> None:
    invented = "peak = 9.25  # [1] peak power\ncontinuous = 4.75  # [1] continuous power\nanswer = peak - continuous"
    output, model = ask(PEAK, invented, invented, graph="extract", answer_threshold=0.5)
    assert len(model.requests) == 2 and output["abstained"]
    assert "not supported" in output["abstain_reason"]


def test_calculation_can_be_turned_off(ask) -> None:
    output, model = ask(PEAK, "7.5 kW [1]", graph="extract", calculate=False)
    assert "Python program" not in model.requests[0][0][0].content
    (read,) = [r for r in output["trace"] if r.stage == "read"]
    assert not read.summary.startswith("computed") and "7.5 kW" in output["answer"]


def test_the_terminal_shows_the_result_after_the_streamed_program(sample_index, cache_dir, embedder) -> None:
    from rich.console import Console

    from pagegraph import build_graph
    from pagegraph.cli.answer_view import StreamedAnswer
    from pagegraph.cli.ask import _run_question
    from pagegraph.config import Context, Settings
    from pagegraph.indexing.index import Index
    from pagegraph.services import Services
    from tests.fakes import ScriptedChatModel

    index = Index(sample_index, Settings(cache_dir=cache_dir), embedder=embedder)
    model = ScriptedChatModel.replying(PROGRAM)
    compiled = build_graph("extract", services=Services(Settings(cache_dir=cache_dir), chat_model=model, index=index))
    console = Console(record=True, force_terminal=True, width=240)
    view = StreamedAnswer(console)
    try:
        output = _run_question(compiled, {"question": PEAK}, Context(), False, None, view)
    finally:
        index.close()
    view.finish(output)
    shown = console.export_text()
    order = [shown.index(part) for part in ("Evidence", "peak = 7.5", "Computed: 7.5 - 5 = 2.5", "Sources")]
    assert order == sorted(order), shown


def test_a_reply_of_one_value_is_read_as_that_figure() -> None:
    calculation = parse_calculation("18% [2]")
    assert calculation.value == 18.0 and calculation.percent
    assert [(f.value, f.excerpt) for f in calculation.figures] == [(18.0, 2)]
    assert parse_calculation("answer: 1,250").value == 1250.0


def test_a_scaled_figure_is_checked_by_the_number_it_copies() -> None:
    program = "very = 45 / 100  # [2] very confident\nnot_at_all = 35 / 100  # [2] not confident at all\nanswer = very - not_at_all"
    calculation = parse_calculation(program)
    assert calculation.value == pytest.approx(0.1) and calculation.expression == "(45 / 100) - (35 / 100)"
    assert [f.value for f in calculation.figures] == [45.0, 35.0]
    _, support = place_figures(calculation, [_passage("45% are very confident and 35% are not confident at all.", 1)])
    assert support == 1.0
