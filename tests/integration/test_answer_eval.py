"""`pagegraph eval --mode answer` end to end over the sample documents, with a fake model that answers from the
passages it is shown: report keys, scores, stored runs, a run stopped by an unreachable model and resumed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage
from typer.testing import CliRunner

from pagegraph.cli import app
from pagegraph.errors import ModelUnavailableError
from pagegraph.prompts.answer import REFUSAL
from tests.conftest import SAMPLES
from tests.fakes import ScriptedChatModel

pytestmark = pytest.mark.slow
MANUAL = "sb40-user-manual.pdf"
ROWS = [
    {
        "id": "weight",
        "question": "How much does the SB-40 weigh in kg?",
        "answer": "98",
        "answerable": True,
        "evidence": [{"document": MANUAL, "page": 6}],
        "documents": [MANUAL],
        "answer_format": "Int",
        "task_type": "lookup",
        "text_friendly": True,
    },
    {
        "id": "bread",
        "question": "What is the recipe for sourdough bread?",
        "answer": "Not answerable",
        "answerable": False,
        "documents": [MANUAL],
        "answer_format": "None",
        "task_type": "lookup",
    },
    {
        "id": "codes",
        "question": "Which error codes make the unit stop charging and discharging?",
        "answer": "['E04', 'E07', 'E12']",
        "answerable": True,
        "evidence": [{"document": MANUAL, "page": 8}],
        "documents": [MANUAL],
        "answer_format": "List",
        "task_type": "enumerate",
        "text_friendly": False,
    },
    {"id": "not-run", "question": "Left out by --limit 3", "documents": [MANUAL]},
]
KEYS = {
    "answer_accuracy",
    "answer_f1",
    "citation_page_hit",
    "citation_validity",
    "abstain_recall",
    "abstain_precision",
    "false_abstain_rate",
    "llm_calls_mean",
    "tokens_mean",
    "latency_ms_p50",
    "latency_ms_p95",
    "n",
}


def reads_the_passages(messages: list[BaseMessage]) -> str:
    """Answer the way a good model would: state what a numbered passage says and cite its number."""
    prompt = str(messages[-1].content)
    if "Section of" in prompt:  # the rag graph's tree navigation asks about sections: none helps
        return '{"relevant": false}'
    if "Passage from" in prompt:  # small_model's map step: the passage's facts as JSON
        facts = re.findall(r"Weight\W+98 kg", prompt) if "weigh" in prompt else []
        return json.dumps({"relevant": bool(facts), "facts": facts})
    passages = dict(re.findall(r"^\[(\d+)\] .*?\n(.*?)(?=^\[\d+\] |\Z)", prompt, flags=re.S | re.M))
    for number, text in passages.items():
        if "weigh" in prompt and re.search(r"Weight\W+(?:\w+: )?98 kg", text):  # a table row, or its reading
            return f"The SB-40 weighs 98 kg [{number}]."
        if "error codes" in prompt and "E04" in text and "E12" in text:
            return f"The codes E04, E07 and E12 stop the unit [{number}]."
    return REFUSAL


@pytest.fixture
def questions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> Path:
    monkeypatch.setenv("PAGEGRAPH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("PAGEGRAPH_INGEST_SUMMARIES", "extractive")
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    return path


def use_model(monkeypatch: pytest.MonkeyPatch, model: ScriptedChatModel) -> None:
    monkeypatch.setattr("pagegraph.llm.factory.get_chat_model", lambda *args, **kwargs: model)


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_answer_eval_end_to_end(questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_model(monkeypatch, ScriptedChatModel.replying(*[reads_the_passages] * 60, usage=True))
    index, report, plot = tmp_path / "index", tmp_path / "run.json", tmp_path / "run.png"
    code, out = run(
        "eval", str(questions), "--mode", "answer", "--docs", str(SAMPLES), "--index", str(index),
        "--graph", "rag", "--graph", "basic", "--limit", "3", "--out", str(report), "--plot", str(plot),
    )  # fmt: skip
    assert code == 0, out
    body = json.loads(report.read_text())
    assert set(body["summary"]) == {"rag", "basic"}
    assert len(body["per_question"]) == 6 and {r["id"] for r in body["per_question"]} == {"weight", "bread", "codes"}
    for metrics in body["summary"].values():
        assert KEYS <= set(metrics) and metrics["n"] == 3
        assert set(metrics["by_task_type"]) == {"lookup", "enumerate"}
        assert set(metrics["by_text_friendly"]) == {"true", "false", "none"}
    rag = body["summary"]["rag"]
    assert rag["answer_accuracy"] == 1.0 and rag["citation_page_hit"] == 1.0 and rag["citation_validity"] == 1.0
    assert rag["abstain_recall"] == 1.0 and rag["false_abstain_rate"] == 0.0 and rag["llm_calls_mean"] > 0
    rows = {(r["graph"], r["id"]): r for r in body["per_question"]}
    assert rows["rag", "bread"]["abstained"] and rows["rag", "bread"]["llm_calls"] == 0
    assert rows["rag", "weight"]["stage_ms"].keys() >= {"route", "retrieve", "answer", "verify"}
    assert plot.stat().st_size > 10_000
    assert (tmp_path / "run-reliability.png").stat().st_size > 10_000
    calibration = rag["calibration"]
    assert calibration["coverage"] == round(2 / 3, 4) and calibration["aurc"] is not None
    assert set(calibration["band_precision"]) == {"supported", "uncertain", "quoted", "not_found"}
    assert rag["overlap_calibration"]["coverage"] == calibration["coverage"]
    assert {r["band"] for r in body["per_question"] if not r["abstained"]} <= {"supported", "uncertain"}
    code, out = run("eval", "--list", "--index", str(index))
    assert code == 0 and body["id"] in out and "rag, basic" in out
    code, out = run("eval", "--show", body["id"][:6], "--index", str(index))
    assert code == 0 and "accuracy" in out and "enumerate" in out
    assert "confident_wrong_rate" in out and "aurc" in out and "overlap ≥" in out


def test_unreachable_model_stops_with_a_partial_report_that_resumes(
    questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered = []

    def then_down(messages: list[BaseMessage]) -> str:
        reply = reads_the_passages(messages)
        if "relevant" not in reply:
            if answered:
                raise ModelUnavailableError("local model at nowhere refused the connection")
            answered.append(reply)
        return reply

    use_model(monkeypatch, ScriptedChatModel.replying(*[then_down] * 50))
    index, report = tmp_path / "index", tmp_path / "run.json"
    args = ["eval", str(questions), "--mode", "answer", "--docs", str(SAMPLES), "--index", str(index), "--limit", "3"]
    code, out = run(*args, "--out", str(report))
    assert code == 1, out
    partial = json.loads(report.read_text())
    assert partial["config"]["stopped"].startswith("model unavailable") and partial["config"]["rows_done"] == 2
    assert [r["id"] for r in partial["per_question"]] == ["weight", "bread"]
    use_model(monkeypatch, ScriptedChatModel.replying(*[reads_the_passages] * 50))
    code, out = run(*args, "--resume", str(report))  # the resumed report is written back
    assert code == 0, out
    finished = json.loads(report.read_text())
    assert finished["id"] == partial["id"] and finished["config"]["stopped"] is None
    assert [r["id"] for r in finished["per_question"]] == ["weight", "bread", "codes"]
    code, out = run("eval", "--list", "--index", str(index))
    assert out.count(partial["id"]) == 1 and "complete" in out
    code, out = run(*args, "--resume", str(report), "--graph", "basic", "--out", str(report))
    assert code == 2 and "also compares rag" in out
    code, out = run(*args, "--resume", str(report), "--graph", "rag", "--graph", "basic", "--out", str(report))
    grown = json.loads(report.read_text())
    assert code == 0 and set(grown["summary"]) == {"rag", "basic"} and len(grown["per_question"]) == 6


def test_tree_retrievers_in_retrieval_eval(questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    judge = ScriptedChatModel.replying(*[lambda messages: '{"relevant": true}'] * 40)
    use_model(monkeypatch, judge)
    report = tmp_path / "retrieval.json"
    code, out = run(
        "eval", str(questions), "--mode", "retrieval", "--docs", str(SAMPLES), "--index", str(tmp_path / "index"),
        "--retriever", "hybrid", "--retriever", "tree", "--retriever", "hybrid+tree", "--limit", "3",
        "--out", str(report),
    )  # fmt: skip
    assert code == 0, out
    body = json.loads(report.read_text())
    assert set(body["summary"]) == {"hybrid", "tree", "hybrid+tree"}
    assert body["summary"]["tree"]["hit@5"] is not None and body["config"]["tree_judge"]
    tree_rows = [r for r in body["per_question"] if r["retriever"] == "tree"]
    assert tree_rows and all(r["top"] for r in tree_rows)
    judged = len(judge.requests)
    assert 0 < judged <= 2 * 8, "hybrid+tree reuses the verdicts tree asked for"


def test_gold_evidence_hands_the_answer_stage_exactly_the_gold_pages(
    questions: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedChatModel.replying(*[reads_the_passages] * 40)
    use_model(monkeypatch, model)
    rows = tmp_path / "rows.txt"
    rows.write_text("# two rows, listed out of file order\ncodes  # answerable\nweight\nbread\n")
    report = tmp_path / "gold.json"
    code, out = run(
        "eval", str(questions), "--mode", "answer", "--docs", str(SAMPLES), "--index", str(tmp_path / "index"),
        "--graph", "basic", "--graph", "small_model", "--evidence", "both", "--rows", str(rows), "--out", str(report),
    )  # fmt: skip
    assert code == 0, out
    body = json.loads(report.read_text())
    assert list(body["summary"]) == ["basic", "basic+gold", "small_model", "small_model+gold"]
    gold_rows = [r for r in body["per_question"] if r["graph"].endswith("+gold")]
    assert sorted((r["graph"], r["id"]) for r in gold_rows) == [
        ("basic+gold", "codes"), ("basic+gold", "weight"), ("small_model+gold", "codes"), ("small_model+gold", "weight"),
    ]  # fmt: skip
    # basic reads numbered passages, small_model one passage per map call: on gold evidence, only page 6
    prompts = [str(m[-1].content) for m, _ in model.requests if "weigh in kg" in str(m[-1].content)]
    gold_label = f"[{MANUAL}, 5 Technical specifications, p. 6]"
    basic_gold = [
        p for p in prompts if "Evidence passages" in p and re.findall(r"^\[\d+\] \[", p, flags=re.M) == ["[1] ["]
    ]
    assert any(f"[1] {gold_label}" in p for p in basic_gold), prompts
    mapped = [p for p in prompts if "Passage from" in p]
    assert any(f"Passage from {gold_label}" in p for p in mapped)
    weight = next(r for r in gold_rows if r["graph"] == "basic+gold" and r["id"] == "weight")
    assert weight["answer_score"] == 1.0 and weight["cites_gold_page"]
    assert weight["llm_calls"] == 3, "the answer, the judge, the second reading"
    assert body["summary"]["basic+gold"]["n"] == 2
    small = next(r for r in gold_rows if r["graph"] == "small_model+gold" and r["id"] == "weight")
    assert small["llm_calls"] == 3, "no planner; one map call for the one gold page, the reduce, the judge"
