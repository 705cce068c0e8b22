"""Answer scoring and answer-evaluation metrics on hand-made rows."""

from __future__ import annotations

import pytest

from pagegraph.config import Context
from pagegraph.eval.answers import answer_summary, core_metrics, first_evidence_ms, stage_latencies, valid_citations
from pagegraph.eval.scoring import parse_list, score_answer, token_f1
from pagegraph.state.answering import Citation, Evidence, TraceRecord


@pytest.mark.parametrize(
    ("answer", "gold", "kind", "expected"),
    [
        ("There are 204 examples [paper.pdf, 4 Data, p. 5].", "204", "Int", 1.0),
        ("There are 1,204 examples.", "1204", "Int", 1.0),
        ("Two of them were correct.", "2", "Int", 1.0),
        ("There are 203 examples [paper.pdf, p. 204].", "204", "Int", 0.0),
        ("The share is 72.4 percent.", "72.3%", "Float", 1.0),
        ("The share is 75 percent.", "72.3%", "Float", 0.0),
        ("The ratio is 0.833.", "83.3%", "Float", 1.0),
        ("The ratio is 3.8.", "3.80", "Float", 1.0),
        ("It uses Prover9 as its solver. Other text follows here.", "Prover9", "Str", 1.0),
        ("The solver is something else entirely.", "Prover9", "Str", 0.0),
        ("The colours are green and yellow.", "['green', 'yellow']", "List", 1.0),
        ("The colours are green and blue.", "['green', 'yellow']", "List", 0.5),
        ("Pages 16 and 25 mention it.", "[16, 19, 25]", "List", 2 / 3),
    ],
)
def test_short_answers(answer: str, gold: str, kind: str, expected: float) -> None:
    score = score_answer(answer, gold, kind, answerable=True)
    assert score.kind == "short" and score.score == pytest.approx(expected)


def test_long_answers_get_token_f1_and_no_accuracy() -> None:
    gold = "Total net sales were 82,959 million dollars in the third quarter and 117,154 million in the first quarter"
    score = score_answer("Net sales were 82,959 million dollars in the third quarter.", gold, None, answerable=True)
    assert score.kind == "long" and score.score is None
    assert score.f1 == pytest.approx(token_f1("Net sales were 82,959 million dollars in the third quarter.", gold))
    assert 0.4 < score.f1 < 0.8


def test_unanswerable_rows_and_missing_gold_are_not_scored() -> None:
    assert score_answer("I could not answer this.", "Not answerable", "None", answerable=False).kind == "none"
    assert score_answer("42", None, "Int", answerable=True).kind == "none"


def test_list_parsing() -> None:
    assert parse_list("['71.02', '75.38']") == ["71.02", "75.38"]
    assert parse_list("[16, 19, 25]") == ["16", "19", "25"]
    assert parse_list("green, yellow") == ["green", "yellow"]
    assert parse_list("[]") == []


def _row(graph: str, answerable: bool, abstained: bool, **extra) -> dict:
    return {
        "id": extra.pop("id", "q"),
        "graph": graph,
        "answerable": answerable,
        "abstained": abstained,
        "task_type": extra.pop("task_type", "lookup"),
        "text_friendly": extra.pop("text_friendly", True),
        "answer_score": extra.pop("answer_score", None),
        "answer_f1": extra.pop("answer_f1", None),
        "cites_gold_page": extra.pop("cites_gold_page", None),
        "citations": extra.pop("citations", []),
        "valid_citations": extra.pop("valid_citations", 0),
        "llm_calls": extra.pop("llm_calls", 1),
        "tokens": extra.pop("tokens", 100),
        "latency_ms": extra.pop("latency_ms", 1000.0),
        "error": extra.pop("error", None),
    }


def test_metrics_on_hand_made_rows() -> None:
    rows = [
        _row("rag", True, False, answer_score=1.0, cites_gold_page=True, citations=["a", "b"], valid_citations=2),
        _row("rag", True, False, answer_score=0.5, cites_gold_page=False, citations=["c"], valid_citations=1),
        _row("rag", True, True, answer_score=0.0, cites_gold_page=False, task_type="count", text_friendly=False),
        _row("rag", True, False, answer_f1=0.6, latency_ms=5000.0, llm_calls=3, tokens=400),
        _row("rag", False, True),
        _row("rag", False, False, citations=["d"], valid_citations=1),
    ]
    metrics = core_metrics(rows)
    assert metrics["answer_accuracy"] == pytest.approx(0.5)
    assert metrics["answer_f1"] == pytest.approx(0.6)
    assert metrics["citation_page_hit"] == pytest.approx(1 / 3, abs=1e-4)
    assert metrics["citation_validity"] == 1.0
    assert metrics["abstain_recall"] == 0.5
    assert metrics["abstain_precision"] == 0.5
    assert metrics["false_abstain_rate"] == 0.25
    assert metrics["llm_calls_mean"] == pytest.approx(8 / 6, abs=1e-4)
    assert metrics["tokens_mean"] == pytest.approx(900 / 6, abs=1e-4)
    assert metrics["latency_ms_p50"] == 1000.0 and metrics["latency_ms_p95"] == pytest.approx(4000.0)
    assert metrics["n"] == 6 and metrics["errors"] == 0


def test_invalid_citations_lower_validity_and_no_rows_give_none() -> None:
    metrics = core_metrics([_row("rag", True, False, citations=["a", "b"], valid_citations=1)])
    assert metrics["citation_validity"] == 0.5
    assert metrics["abstain_recall"] is None and metrics["abstain_precision"] is None
    assert metrics["answer_accuracy"] is None


def test_summary_per_graph_with_splits() -> None:
    rows = [
        _row("rag", True, False, answer_score=1.0, task_type="lookup"),
        _row("rag", True, False, answer_score=0.0, task_type="count", text_friendly=None),
        _row("basic", False, True),
    ]
    summary = answer_summary(rows, ["rag", "basic"])
    assert set(summary) == {"rag", "basic"}
    assert summary["rag"]["by_task_type"]["lookup"]["answer_accuracy"] == 1.0
    assert summary["rag"]["by_task_type"]["count"]["answer_accuracy"] == 0.0
    assert set(summary["rag"]["by_text_friendly"]) == {"true", "none"}
    assert summary["basic"]["abstain_recall"] == 1.0 and summary["basic"]["n"] == 1


def test_valid_citations_need_retrieved_chunks() -> None:
    evidence = [
        Evidence(id="c1", chunk_ids=["c1", "c2"], source="a.pdf", start_page=1, end_page=2, text="t", score=1.0)
    ]

    def cite(source: str, *chunks: str) -> Citation:
        return Citation(source=source, start_page=1, end_page=1, chunk_ids=list(chunks), label="x", origin="model")

    assert valid_citations([cite("a.pdf", "c1"), cite("a.pdf", "c2", "c1")], evidence) == 2
    assert valid_citations([cite("a.pdf", "c3"), cite("b.pdf", "c1"), cite("a.pdf")], evidence) == 0


def test_stage_latencies_add_up_parallel_tasks() -> None:
    trace = [
        TraceRecord(stage="plan_search", summary="", latency_ms=10.0),
        TraceRecord(stage="map[0]", summary="", latency_ms=5.0),
        TraceRecord(stage="map[1]", summary="", latency_ms=7.0),
    ]
    assert stage_latencies(trace) == {"plan_search": 10.0, "map": 12.0}


def test_time_to_first_evidence_runs_up_to_the_highlight_stage() -> None:
    trace = [
        TraceRecord(stage="search", summary="", latency_ms=300.0),
        TraceRecord(stage="highlight", summary="", latency_ms=450.0),
        TraceRecord(stage="read", summary="", latency_ms=9000.0),
    ]
    assert first_evidence_ms(trace) == 750.0
    assert first_evidence_ms(trace[2:]) is None


def _scored(right: bool | None, confidence: float, band: str, answerable: bool = True, **extra) -> dict:
    """A scored row: right/wrong answer (None: abstained) at a confidence and band."""
    return {
        "answerable": answerable,
        "abstained": right is None,
        "answer_score": None if right is None or not answerable else float(right),
        "confidence": confidence,
        "band": "not_found" if right is None else band,
        "error": None,
        **extra,
    }


def test_calibration_counts_wrong_answers_in_the_top_band_and_the_risk_coverage_area() -> None:
    from pagegraph.eval.calibration import aurc, calibration_metrics

    rows = [
        _scored(True, 0.9, "supported"),
        _scored(False, 0.85, "supported"),
        _scored(True, 0.5, "uncertain"),
        _scored(False, 0.2, "uncertain"),
        _scored(False, 0.95, "supported", answerable=False),  # an unanswerable row answered is wrong
        _scored(None, 0.0, "not_found", answerable=False),  # a right abstention
        _scored(None, 0.0, "not_found"),  # a wrong one
    ]
    metrics = calibration_metrics(rows)
    assert metrics["confident_wrong_rate"] == round(2 / 3, 4)
    assert metrics["band_precision"] == {
        "supported": round(1 / 3, 4),
        "uncertain": 0.5,
        "quoted": None,
        "not_found": 0.5,
    }
    assert metrics["coverage"] == round(5 / 7, 4)
    # answers by confidence: wrong 0.95, right 0.9, wrong 0.85, right 0.5, wrong 0.2
    assert metrics["aurc"] == round((1 / 1 + 1 / 2 + 2 / 3 + 2 / 4 + 3 / 5) / 5, 4)
    # the same answers with the two right ones first: the least any confidence could reach
    assert metrics["best_aurc"] == round((0 + 0 + 1 / 3 + 2 / 4 + 3 / 5) / 5, 4)
    assert aurc([(0.9, True), (0.1, False)]) < aurc([(0.1, True), (0.9, False)])
    assert aurc([(0.5, True), (0.5, False)]) == round((0.5 / 1 + 1 / 2) / 2, 4)  # a tie is not ordered
    assert sum(b["n"] for b in metrics["reliability"]) == 5


def test_a_long_answer_is_right_when_the_gold_answer_contradicts_none_of_its_values() -> None:
    from pagegraph.eval.calibration import is_right

    gold = "Net sales were $82,959 million in the June 2022 quarter and $117,154 million in December 2022."
    long = {"answerable": True, "abstained": False, "answer_score": None, "answer_kind": "long", "error": None}
    assert is_right({**long, "answer": "Net sales were $82,959 million [a.pdf, p. 3].", "gold_answer": gold})
    assert not is_right({**long, "answer": "Net sales were $90,000 million.", "gold_answer": gold})
    assert not is_right({**long, "answer": "Sales grew.", "gold_answer": gold, "answer_f1": 0.1})
    # a value the question names is no value of the answer's own: restating the year proves nothing
    echo = {**long, "question": "How did net sales change in 2022?", "gold_answer": gold, "answer_f1": 0.2}
    assert not is_right({**echo, "answer": "Net sales in 2022 changed with demand."})
    assert is_right({**echo, "answer": "Net sales in 2022 rose to $117,154 million."})


def test_the_confidence_before_bands_scores_a_withheld_answer_as_the_answer_it_was() -> None:
    from pagegraph.eval.answers import overlap_baseline
    from pagegraph.eval.calibration import is_right

    refused = {"answerable": True, "abstained": True, "answer_score": 0.0, "answer_f1": None, "error": None}
    withheld = {"answer": "Five meetings [a.pdf, p. 2].", "answer_score": 1.0, "answer_f1": None}
    row = {**refused, "confidence_signals": {"overlap": 0.9, "verdict": None}, "withheld": withheld}
    before = overlap_baseline(row)
    assert not before["abstained"] and before["band"] == "supported" and is_right(before)
    assert not is_right(row), "as shown now: an answerable question refused"
    gated = overlap_baseline({**refused, "confidence_signals": None, "withheld": None})  # the gate's abstention
    assert gated["abstained"] and gated["band"] == "not_found"


def test_a_compared_graph_may_run_under_other_knobs() -> None:
    from pagegraph.errors import PagegraphError
    from pagegraph.eval.answer_run import graph_variant

    context = Context()
    assert graph_variant("auto", context) == ("auto", context)
    graph, changed = graph_variant("auto@picking.use=true,reading.highlights=5", context)
    assert graph == "auto" and changed.picking.use and changed.reading.highlights == 5
    assert changed.retrieval == context.retrieval, "the other knobs as they were"
    for bad in ("auto@use=false", "auto@picking.use", "auto@nothing.use=1", "auto@reading.highlights=500"):
        with pytest.raises(PagegraphError, match="--graph"):
            graph_variant(bad, context)


def test_a_row_cut_off_by_a_model_restart_is_answered_again_and_a_model_still_down_stops_the_run() -> None:
    from pagegraph.errors import ModelUnavailableError
    from pagegraph.eval.answers import run_answer_eval
    from pagegraph.state.evaluation import EvalQuestion

    calls: list[str] = []

    def restarts_once(question: EvalQuestion) -> None:  # None: answered, with no row to score
        calls.append(question.id)
        if len(calls) == 1:
            raise ModelUnavailableError("the embedded model's process died with SIGSEGV during this call")

    questions = [EvalQuestion(id="q1", question="When?", answer="22:00"), EvalQuestion(id="q2", question="Who?")]
    run_answer_eval(questions, {"basic": restarts_once}, {}, [])
    assert calls == ["q1", "q1", "q2"], "the cut-off row is answered again and the run goes on"

    def down(question: EvalQuestion) -> None:
        raise ModelUnavailableError("connection refused")

    with pytest.raises(ModelUnavailableError):
        run_answer_eval(questions, {"basic": down}, {}, [])
