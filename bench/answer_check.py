"""What the judge (`nodes.judge`) and the confidence built on it make of answer runs. Each answered row is replayed
through the product's `extract` graph with the run's answer in place of the reader's reply: retrieval, highlights,
the gate, the evidence the reader would have been given, the judge (a real call to the embedded model) and `verify`
run as the graph runs them. The judge changes no answer, it only bands it or turns it into a refusal, so a run made
without it can be scored this way.

Reported per run, beside the run's own figures and the token overlap (the confidence shown before
issue 39): accuracy, coverage, confident_wrong_rate, precision per band and AURC (`pagegraph.eval.calibration`),
as shown by default and, with `--abstain-below T`, with that refusal threshold (`Context.confidence.abstain_below`),
and the judge calls' cost. `without_reread`: the same rows banded from the same judge and checks without the judge's
second reading (`Context.confidence.reread` off), as landed before it.

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/answer_check.py --index .pagegraph/eval-mmlb-dev28 \\
        --run bench/results/answers-40-answer-tokens.json [--run ...] [--questions FILE] [--abstain-below 0.35] \\
        [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEV = REPO.parent / "shared" / "eval" / "mmlongbench" / "dev.jsonl"


def run_arguments(description: str | None, highlights: int) -> argparse.ArgumentParser:
    """The options: the index, the runs, the questions file, how many highlights."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--run", type=Path, action="append", required=True, help="an answer run's report")
    parser.add_argument("--questions", type=Path, default=DEV)
    parser.add_argument("--highlights", type=int, default=highlights, help="top highlight sentences the reads see")
    parser.add_argument("--out", type=Path)
    return parser


def questions_by_id(path: Path) -> dict[str, Any]:
    from pagegraph.eval.questions import load_questions

    if not path.is_file():
        raise SystemExit(f"{path}: not found (../shared is absent)")
    return {q.id: q for q in load_questions(path)}


def run_rows(path: Path, questions: dict[str, Any]) -> list[dict]:
    """An answer run's rows, each with its question (scoring a long answer reads it; runs made before rows recorded
    it lack it)."""
    return [{"question": questions[r["id"]].question, **r} for r in json.loads(path.read_text())["per_question"]]


def share(rows: list[dict], right) -> float | None:
    return round(sum(map(right, rows)) / len(rows), 4) if rows else None


def refused(row: dict, threshold: float) -> dict:
    """The judged row as shown with refusals below `threshold`."""
    if row["verdict"] is None or row["confidence"] >= threshold:
        return row
    return {**row, "abstained": True, "band": "not_found"}


def replay_model(settings: Any) -> Any:
    """The embedded model, answering the judge and its second reading itself and every other request with the row's
    stored answer."""
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from pagegraph.llm import get_chat_model
    from pagegraph.llm.local import LlamaCppChatModel
    from pagegraph.prompts.judge import JUDGE_SYSTEM, REREAD_SYSTEM

    class ReplayModel(LlamaCppChatModel):
        stored: str = ""

        def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
            if messages and messages[0].content in (JUDGE_SYSTEM, REREAD_SYSTEM):
                return super()._generate(messages, stop, run_manager, **kwargs)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.stored))])

    local = get_chat_model("local", temperature=0.0, settings=settings)
    return ReplayModel(**{**local.model_dump(include=set(LlamaCppChatModel.model_fields)), "streaming": False})


def main() -> None:
    from pagegraph.config import Context, Settings

    parser = run_arguments(__doc__, highlights=Context().confidence.judge_sentences)
    parser.add_argument("--abstain-below", type=float, action="append", default=[], help="a refusal threshold to score")
    args = parser.parse_args()

    from pagegraph import build_graph
    from pagegraph.checks.confidence import answer_confidence
    from pagegraph.eval.answers import overlap_baseline
    from pagegraph.eval.calibration import calibration_metrics, is_right
    from pagegraph.services import Services
    from pagegraph.state.answering import ValueCheck, Verdict
    from pagegraph.store.index import open_index

    questions = questions_by_id(args.questions)
    settings = Settings()
    model = replay_model(settings)
    context = Context(index=str(args.index), confidence={"judge_sentences": args.highlights})
    report: dict = {"highlights": args.highlights, "runs": {}}
    with open_index(args.index, settings) as index:
        graph = build_graph("extract", services=Services(settings, chat_model=model, index=index))
        for path in args.run:
            rows = run_rows(path, questions)
            figures: dict = {
                "rows": len(rows),
                "accuracy": {"run": share(rows, is_right)},
                "run": calibration_metrics(rows),
                "overlap": calibration_metrics([overlap_baseline(row) for row in rows]),
            }
            judged, without, seconds, changed = [], [], [], 0
            for row in rows:
                if row["abstained"] or row["error"]:
                    judged.append({**row, "verdict": None})
                    without.append(judged[-1])
                    continue
                question = questions[row["id"]]
                model.stored = row["answer"]
                inputs = {"question": question.question, "documents": question.documents}
                out = graph.invoke(inputs, context=context)
                judge = next((t for t in out["trace"] if t.stage == "judge"), None)
                calls = judge.calls if judge is not None else []
                seconds += [call.latency_ms / 1000 for call in calls]
                details = next((t.details for t in out["trace"] if t.stage == "verify" and t.details), {})
                verdict = (details.get("verdict") or {}).get("probability")
                restated = (details.get("verdict") or {}).get("restated")
                changed += out["abstained"]  # the replay refused what the run answered (the gate, say)
                judged.append(
                    {**row, "verdict": verdict, "confidence": out.get("confidence") or 0.0, "band": out.get("band")}
                    | {"restated": restated}
                    | ({"abstained": True, "band": "not_found"} if out["abstained"] else {})
                )
                landed = judged[-1]
                if restated is not None and out.get("band") in ("supported", "uncertain"):
                    unread = Verdict.model_validate({**details["verdict"], "reread": None, "restated": None})
                    check = ValueCheck.model_validate(details["value_check"])
                    before = answer_confidence(unread, details["overlap"], check, context)
                    landed = {**landed, "confidence": before.value, "band": before.band}
                without.append(landed)
                print(
                    f"{row['id']}: right {is_right(row)}, P(yes) {verdict}, {judged[-1]['band']}"
                    + (
                        f" (read again: {'the same' if restated else 'other values'}; before {landed['band']})"
                        if restated is not None
                        else ""
                    ),
                    flush=True,
                )
            refusing = {t: [refused(row, t) for row in judged] for t in [0.0, *args.abstain_below]}
            figures["judged"] = {
                "refused_in_replay": changed,
                "accuracy": {f"abstain_below_{t}": share(scored, is_right) for t, scored in refusing.items()},
                **{f"abstain_below_{t}": calibration_metrics(scored) for t, scored in refusing.items()},
                "judge_call_p50_s": round(statistics.median(seconds), 2) if seconds else None,
                "per_row": [
                    {key: row.get(key) for key in ("id", "verdict", "restated", "confidence", "band")}
                    | {"right": is_right(row), "band_without_reread": landed["band"]}
                    for row, landed in zip(judged, without)
                ],
            }
            figures["without_reread"] = calibration_metrics(without)
            report["runs"][str(path)] = figures
            summary = {
                name: {key: metrics[key] for key in ("confident_wrong_rate", "coverage", "aurc")}
                for name, metrics in [("overlap", figures["overlap"])]
                + [(t, figures["judged"][t]) for t in figures["judged"] if t.startswith("abstain_below_")]
                + [("without_reread", figures["without_reread"])]
            }
            print(path.name, figures["accuracy"], json.dumps(summary), flush=True)
            if args.out:
                args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
