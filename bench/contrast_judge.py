"""Does the judge prefer the answer's value to the other values its evidence states? For each answered row of answer
runs, the judge (`nodes.judge.ask_judge`, the embedded model) is asked about the answer as given and about the same
answer with its first own value (a number, percentage, amount or date the question does not hold) replaced by each
other value of such a kind that the question's top highlight sentences state (model-free, as the `highlight` stage
picks them; at most `--alternatives`). Each verdict is P(Yes); rows are written as they are judged, so `--resume`
goes on. The signals are scored offline (AURC of the answered rows, `pagegraph.eval.calibration`).

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/contrast_judge.py --index .pagegraph/eval-mmlb-dev28 \\
        --run bench/results/answers-40-answer-tokens.json [--run ...] [--alternatives 3] --out FILE [--resume]
"""

from __future__ import annotations

import json

from answer_runs import answered_rows, questions_by_id, run_arguments, top_highlights


def main() -> None:
    from pagegraph.config import Context, Settings

    parser = run_arguments(__doc__, highlights=Context().confidence.judge_sentences)
    parser.add_argument("--alternatives", type=int, default=3)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from pagegraph.eval.calibration import is_right
    from pagegraph.llm import get_chat_model
    from pagegraph.nodes.judge import ask_judge
    from pagegraph.retrievers.values import extract_values, own_values, same_value

    questions = questions_by_id(args.questions)
    settings = Settings()
    context = Context(index=str(args.index))
    model = get_chat_model("local", temperature=0.0, streaming=False, settings=settings)
    report: dict = json.loads(args.out.read_text()) if args.resume and args.out.is_file() else {"runs": {}}
    numeric = {"number", "percent", "money"}
    with top_highlights(args.index, settings, args.highlights) as highlighted:
        for path in args.run:
            done = report["runs"].setdefault(str(path), [])
            seen = {row["id"] for row in done}
            for row in answered_rows(path):
                if row["id"] in seen:
                    continue
                question = questions[row["id"]]
                sentences = [h.sentence for h in highlighted(question)]
                answer = row["answer"]
                verdict, call = ask_judge(model, question.question, answer, sentences, context)
                own = [v for v in own_values(answer, question.question) if v.kind != "name"]
                alternatives: list[dict] = []
                if own:
                    key = own[0]
                    kinds = numeric if key.kind in numeric else {key.kind}
                    others: list = []
                    for value in (v for s in sentences for v in extract_values(s, names=False)):
                        if value.kind in kinds and not same_value(key, value) and not same_value(value, key):
                            if not any(same_value(value, o) for o in others):
                                others.append(value)
                    for other in others[: args.alternatives]:
                        variant = answer[: key.start] + other.text + answer[key.end :]
                        alt, _ = ask_judge(model, question.question, variant, sentences, context)
                        alternatives.append({"value": other.text, "verdict": alt.probability})
                done.append(
                    {
                        "id": row["id"],
                        "right": is_right(row),
                        "answer_kind": row.get("answer_kind"),
                        "overlap": (row.get("confidence_signals") or {}).get("overlap"),
                        "value": own[0].text if own else None,
                        "verdict": verdict.probability,
                        "alternatives": alternatives,
                        "judge_ms": call.latency_ms,
                    }
                )
                print(path.name, json.dumps(done[-1]), flush=True)
                args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
