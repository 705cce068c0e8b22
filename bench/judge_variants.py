"""Does the judge rank answers better asked more than one way? For each answered row of answer runs, the judge
(the embedded model, one token, P(Yes) from its top log-probabilities) is asked twice more than the landed judge
(`nodes.judge.ask_judge`): over the same top highlight sentences in reverse order, and with the question put another
way ("Is this answer correct according to the sentences?"). Small models' verdicts follow the order of what they
read and the wording of the question; the mean of several should be steadier. The landed verdict is taken from a
replay report (`bench/answer_check.py --out`, the same calls at temperature 0); rows are written as they are judged,
so `--resume` goes on. The signals are scored offline (AURC of the answered rows, `pagegraph.eval.calibration`).

    PAGEGRAPH_LLM_THREADS=2 .venv/bin/python bench/judge_variants.py --index .pagegraph/eval-mmlb-dev28 \\
        --replay bench/results/answer-judge-replay-periods.json --run bench/results/answers-40-answer-tokens.json \\
        [--run ...] --out FILE [--resume]
"""

from __future__ import annotations

import json
from pathlib import Path

from answer_runs import answered_rows, questions_by_id, run_arguments, top_highlights

REPHRASED = """Sentences:
{sentences}

Question: {question}
Answer: {answer}

Is this answer correct according to the sentences? Reply Yes or No."""


def main() -> None:
    from pagegraph.config import Context, Settings

    parser = run_arguments(__doc__, highlights=Context().confidence.judge_sentences)
    parser.add_argument("--replay", type=Path, required=True, help="the answer_check.py report holding the verdicts")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from langchain_core.messages import HumanMessage, SystemMessage

    from pagegraph.eval.calibration import is_right
    from pagegraph.llm import get_chat_model
    from pagegraph.llm.calls import invoke_model
    from pagegraph.nodes.judge import ask_judge, judge_options, read_verdict
    from pagegraph.nodes.verify import strip_citations
    from pagegraph.prompts.judge import JUDGE_SYSTEM

    questions = questions_by_id(args.questions)
    settings = Settings()
    context = Context(index=str(args.index))
    model = get_chat_model("local", temperature=0.0, streaming=False, settings=settings)
    replayed = json.loads(args.replay.read_text())["runs"]
    report: dict = json.loads(args.out.read_text()) if args.resume and args.out.is_file() else {"runs": {}}
    with top_highlights(args.index, settings, args.highlights) as highlighted:
        for path in args.run:
            landed = {row["id"]: row for row in replayed[str(path)]["judged"]["per_row"]}
            done = report["runs"].setdefault(str(path), [])
            seen = {row["id"] for row in done}
            for row in answered_rows(path, questions):
                if row["id"] in seen or landed[row["id"]]["verdict"] is None:
                    continue
                question = questions[row["id"]]
                sentences = [h.sentence for h in highlighted(question)]
                reversed_verdict, _ = ask_judge(model, question.question, row["answer"], sentences[::-1], context)
                request = REPHRASED.format(
                    sentences="\n".join(sentences) or "(none)",
                    question=question.question,
                    answer=" ".join(strip_citations(row["answer"]).split()),
                )
                options = judge_options(model, context.confidence.judge_alternatives)
                messages = [SystemMessage(content=JUDGE_SYSTEM), HumanMessage(content=request)]
                reply, _ = invoke_model(model, messages, purpose="judge", **options)
                rephrased = read_verdict(reply, context.confidence.written_yes)
                done.append(
                    {
                        "id": row["id"],
                        "right": is_right(row),
                        "overlap": (row.get("confidence_signals") or {}).get("overlap"),
                        "verdict": landed[row["id"]]["verdict"],
                        "reversed": reversed_verdict.probability,
                        "rephrased": rephrased.probability,
                        "band": landed[row["id"]]["band"],
                    }
                )
                print(path.name, json.dumps(done[-1]), flush=True)
                args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
