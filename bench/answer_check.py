"""What the judge (`nodes.judge`) and the confidence built on it make of answer runs: each answered row's verdict is
asked of the embedded model as the `judge` stage asks it (over the question's top highlight sentences, as the
`highlight` stage picks them), and the row is scored as the graph with the judge shows it — its confidence
(`answer_confidence`) and its band — and, with `--abstain-below`, as it shows it with that refusal threshold
(`Context.confidence.abstain_below`). The judge changes no answer, it only bands it or turns it into a refusal, so
a run made without it can be scored this way.

Reported per run beside the run's own figures and the token overlap (the confidence shown before issue 39):
accuracy, coverage, confident_wrong_rate, precision per band and AURC (`pagegraph.eval.calibration`), and the
judge call's cost.

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/answer_check.py --index .pagegraph/eval-mmlb-dev28 \\
        --run bench/results/answers-40-answer-tokens.json [--run ...] [--questions FILE] [--abstain-below 0.35] \\
        [--out FILE]
"""

from __future__ import annotations

import json
import statistics

from answer_runs import questions_by_id, run_arguments, top_highlights


def share(rows: list[dict], right) -> float | None:
    return round(sum(map(right, rows)) / len(rows), 4) if rows else None


def refused(row: dict, threshold: float) -> dict:
    """The judged row as shown with refusals below `threshold`."""
    if row["verdict"] is None or row["confidence"] >= threshold:
        return row
    return {**row, "abstained": True, "band": "not_found"}


def main() -> None:
    from pagegraph.config import Context, Settings

    context = Context()
    parser = run_arguments(__doc__, highlights=context.confidence.judge_sentences)
    parser.add_argument("--abstain-below", type=float, action="append", default=[], help="a refusal threshold to score")
    args = parser.parse_args()

    from pagegraph.eval.answers import overlap_baseline
    from pagegraph.eval.calibration import calibration_metrics, is_right
    from pagegraph.llm import get_chat_model
    from pagegraph.nodes.confidence import answer_confidence
    from pagegraph.nodes.judge import ask_judge
    from pagegraph.state.answering import ValueCheck

    questions = questions_by_id(args.questions)
    settings = Settings()
    model = get_chat_model("local", settings=settings)
    report: dict = {"highlights": args.highlights, "confidence": context.confidence.model_dump(), "runs": {}}
    with top_highlights(args.index, settings, args.highlights) as highlighted:
        for path in args.run:
            rows = json.loads(path.read_text())["per_question"]
            judged, seconds = [], []
            for row in rows:
                if row["abstained"] or row["error"]:
                    judged.append({**row, "verdict": None})
                    continue
                question = questions[row["id"]]
                sentences = [h.sentence for h in highlighted(question)]
                verdict, call = ask_judge(model, question.question, row["answer"], sentences, context)
                seconds.append(call.latency_ms / 1000)
                signals = row["confidence_signals"]
                values = ValueCheck(status=signals["value_check"]["status"])
                confidence = answer_confidence(verdict, signals["overlap"], values, context)
                judged.append({**row, "confidence": confidence.value, "band": confidence.band})
                judged[-1]["verdict"] = verdict.probability
                print(
                    f"{row['id']}: right {is_right(row)}, P(yes) {verdict.probability:.3f}, {confidence.band}",
                    flush=True,
                )
            refusing = {
                threshold: [refused(row, threshold) for row in judged] for threshold in [0.0, *args.abstain_below]
            }
            figures = {
                "rows": len(rows),
                "accuracy": {"run": share(rows, is_right)}
                | {f"judged_abstain_below_{t}": share(scored, is_right) for t, scored in refusing.items()},
                "run": calibration_metrics(rows),
                "overlap": calibration_metrics([overlap_baseline(row) for row in rows]),
                **{f"judged_abstain_below_{t}": calibration_metrics(scored) for t, scored in refusing.items()},
                "judge_call_p50_s": round(statistics.median(seconds), 2) if seconds else None,
                "per_row": [
                    {
                        "id": row["id"],
                        "answered_in_run": not row["abstained"],
                        "verdict": row.get("verdict"),
                        "confidence": row["confidence"],
                        "band": row["band"],
                        "right": is_right(row),
                    }
                    for row in refusing[max(refusing)]
                ],
            }
            report["runs"][str(path)] = figures
            summary = {
                name: {key: figures[name][key] for key in ("confident_wrong_rate", "coverage", "aurc")}
                for name in ("overlap", *(f"judged_abstain_below_{t}" for t in refusing))
            }
            print(path.name, figures["accuracy"], summary, flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
