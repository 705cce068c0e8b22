"""Does a second, cheap read agree with the answer? For each answered row of answer runs (`pagegraph eval --mode
answer` reports), the model reads only the question's top highlight sentences (model-free, as the `highlight` stage
picks them) and answers again; the signal is whether the two answers agree (`checks.reading.answers_agree`). Reported:
how well agreement alone ranks right answers above wrong ones (AURC over the answered rows, lower is better) beside
the landed confidence and a constant, per run, and the cost of the extra call.

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/self_agreement.py --index .pagegraph/eval-mmlb-dev28 \\
        --run bench/results/answers-calibration-rows-answer-tokens.json --run bench/results/answers-40-answer-tokens.json \\
        [--highlights 1] [--out bench/results/self-agreement.json]
"""

from __future__ import annotations

import json
import statistics
import time

from answer_runs import answered_rows, questions_by_id, run_arguments, top_highlights

# The second read's prompt; it lives here, not in pagegraph.prompts, because no graph uses it (not kept: see
# docs/experiments.md).
REREAD_SYSTEM = """Answer the question from the sentences below only. Reply with the short answer alone (a number with
its unit, a name, or a few words), copied from the sentences. If they do not state it, reply with exactly: not
stated"""
REREAD_REQUEST = """Sentences:
{sentences}

Question: {question}"""


def main() -> None:
    parser = run_arguments(__doc__, highlights=1)
    parser.add_argument("--model", default="local")
    args = parser.parse_args()

    from langchain_core.messages import HumanMessage, SystemMessage

    from pagegraph.checks.reading import answers_agree
    from pagegraph.config import Settings
    from pagegraph.eval.calibration import aurc, is_right
    from pagegraph.llm import get_chat_model

    questions = questions_by_id(args.questions)
    settings = Settings()
    model = get_chat_model(args.model, max_tokens=48, streaming=False, settings=settings)
    report: dict = {"model": args.model, "highlights": args.highlights, "runs": {}}
    with top_highlights(args.index, settings, args.highlights) as highlighted:
        for path in args.run:
            scored, seconds = [], []
            for row in answered_rows(path, questions):
                question = questions[row["id"]]
                highlights = highlighted(question)
                began = time.perf_counter()
                sentences = "\n".join(h.sentence for h in highlights) or "(none)"
                reply = model.invoke(
                    [
                        SystemMessage(content=REREAD_SYSTEM),
                        HumanMessage(content=REREAD_REQUEST.format(sentences=sentences, question=question.question)),
                    ]
                ).content
                seconds.append(time.perf_counter() - began)
                agree = bool(highlights) and answers_agree(row["answer"], str(reply), question.question)
                scored.append(
                    {
                        "id": row["id"],
                        "right": is_right(row),
                        "agree": agree,
                        "confidence": row["confidence"],
                        "reread": str(reply).strip(),
                    }
                )
                print(f"{row['id']}: right {is_right(row)}, agree {agree}: {str(reply).strip()[:70]!r}", flush=True)
            right = [s for s in scored if s["right"]]
            agreeing = [s for s in scored if s["agree"]]
            figures = {
                "answered": len(scored),
                "right": len(right),
                "agreeing": len(agreeing),
                "right_among_agreeing": sum(s["right"] for s in agreeing),
                "aurc_constant": aurc([(0.0, s["right"]) for s in scored]),
                "aurc_landed_confidence": aurc([(s["confidence"], s["right"]) for s in scored]),
                "aurc_agreement": aurc([(float(s["agree"]), s["right"]) for s in scored]),
                "aurc_agreement_then_confidence": aurc(
                    [(float(s["agree"]) + 0.5 * s["confidence"], s["right"]) for s in scored]
                ),
                "reread_p50_s": round(statistics.median(seconds), 2) if seconds else None,
                "rows": scored,
            }
            report["runs"][str(path)] = figures
            print(path.name, {k: v for k, v in figures.items() if k != "rows"}, flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
